"""Relations of one tenant cell: bootstrap from the cell's snapshot, then apply its batches in order.

A sidecar runs one follower per cell in its scope (``--scope-cell``; every cell by default):
subject ``tg.relations.changes.<cell>``, manifests on ``tg.snapshots.relations.<cell>``,
objects ``relations/<cell>/<seq>``. Every position below is the cell's own; a batch or
manifest signed for another cell is refused (``event_wrong_cell``), so nothing replayed
across cells can apply. Tuples whose object type is out of scope (``--scope-type``) are
dropped at apply and when a snapshot is loaded.

Positions. The event ``seq`` is the relations sequence; the JetStream stream sequence is
only where a batch happens to sit (forged messages and purges make the two drift). The
follower remembers the stream seq of the last batch it applied, so resuming after a
disconnect starts exactly after it. Without one (after a snapshot, or a restart from an
old state file) it estimates the position from the tail of the stream, and falls back to
scanning from the first retained message. Whatever the start, each batch is judged by
its verified event seq: ``<= applied`` is skipped, ``applied + 1`` applied, anything
beyond is a gap. Nothing is missed and nothing applied twice by construction.

Gaps. A gap seen from an estimated start retries from the stream's first message; a gap
seen there means the batches are gone (purged, aged out), so the follower loads the
latest snapshot. If no snapshot is newer than the local state it cannot progress: it
raises :class:`FeedStuck`, reports ``resyncing`` and retries with backoff, deciding from
what it has meanwhile.
"""

from __future__ import annotations

import asyncio
import logging

from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.client import JetStreamContext
from nats.js.errors import NotFoundError
from tenantguard.feed import topology
from tenantguard.feed.events import (
    RELATIONS_BATCH,
    EventMalformed,
    EventRejected,
    SnapshotManifest,
    batch_from_event,
    verify_snapshot_manifest,
)
from tenantguard.feed.history import subject_history
from tenantguard.relations import SequenceGap, SnapshotInvalid, index_from_snapshot_bytes

from .base import FeedContext, fetch_object
from .errors import FeedStuck

log = logging.getLogger(__name__)

KIND = "relations"


class RelationsFollower:
    """Owns the sidecar's relation index: the only writer of it while the feed runs."""

    stream = topology.STREAM_RELATIONS

    def __init__(self, ctx: FeedContext, cell: str = topology.DEFAULT_CELL, *, stream_seq: int = 0) -> None:
        self._ctx = ctx
        self.cell = cell
        self.kind = KIND if cell == topology.DEFAULT_CELL else f"{KIND}.{cell}"
        self.subject = topology.relations_subject(cell)
        self.snapshot_subject = topology.snapshot_subject(cell)
        self._scope = ctx.sidecar.relations.scope
        self.stream_seq = stream_seq  # stream seq of the last batch applied or skipped; 0 unknown
        self.plane_seq = 0  # the latest relations seq the plane is known to have
        self._scan_from_first = False
        self._needs_snapshot = False
        self._gaps_in_row = 0
        self._refused: tuple[int, str] | None = None  # a snapshot already refused: not downloaded again

    @property
    def applied(self) -> int:
        return self._ctx.sidecar.relations.index(self.cell).applied_seq

    # ------------------------------------------------------------------ start

    async def start(self, js: JetStreamContext) -> ConsumerConfig:
        """Bootstrap or resync when needed, then say where the ordered consumer begins."""
        manifest = await self._latest_manifest(js)
        if manifest is not None:
            self.note_plane_seq(manifest.seq)
            if manifest.seq > self.applied and (self.applied == 0 or manifest.seq - self.applied > self._limit):
                await self._load_snapshot(js, manifest)
        start = await self._position(js, manifest)
        if start is None:
            if manifest is None or manifest.seq <= self.applied:
                self._ctx.sidecar.feed_state = "resyncing"
                raise FeedStuck(f"relations seq {self.applied + 1} is gone from the stream and no newer "
                                "snapshot exists", applied=self.applied)
            await self._load_snapshot(js, manifest)
            start = await self._position(js, manifest)
            if start is None:
                raise FeedStuck("the snapshot's successor batches are gone too", applied=self.applied)
        self._ctx.sidecar.feed_state = "live"
        self._ctx.sidecar.readiness.cell_bootstrapped(self.cell)
        log.info("relations: applied %d, following %s from stream seq %d", self.applied, self.subject, start)
        return ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=start)

    @property
    def _limit(self) -> int:
        return self._ctx.options.replay_limit

    async def _position(self, js: JetStreamContext, manifest: SnapshotManifest | None) -> int | None:
        """Stream seq to start from; None when ``applied + 1`` is certainly no longer held.

        Every cell shares the stream, so positions are found by subject: the cell's last and
        first stored batches, and an estimate checked against the batch it points at."""
        if self._needs_snapshot:
            return None
        state = (await js.stream_info(self.stream)).state
        first, last = state.first_seq, state.last_seq
        if self._scan_from_first:
            self._scan_from_first = False
            return max(first, 1)
        if 0 < self.stream_seq <= last and self.stream_seq + 1 >= first:
            return self.stream_seq + 1  # exact resume after a disconnect
        tail_at = await self._stored_on_subject(js, None)
        if tail_at is None:  # nothing of this cell is stored
            behind = manifest is not None and manifest.seq > self.applied
            return None if behind or self.plane_seq > self.applied else last + 1
        tail = await self._event_seq_at(js, tail_at)
        if tail is not None and tail <= self.applied:
            return tail_at + 1
        if tail is not None:
            estimate = tail_at - (tail - self.applied - 1)  # exact while no other cell wrote in between
            if estimate >= first and await self._event_seq_at(js, estimate) == self.applied + 1:
                return estimate
        head_at = await self._stored_on_subject(js, first)
        head = await self._event_seq_at(js, head_at) if head_at is not None else None
        if head is not None and head > self.applied + 1:
            return None
        return head_at if head_at is not None else first

    async def _stored_on_subject(self, js: JetStreamContext, at_or_after: int | None) -> int | None:
        """Stream seq of this cell's last stored message (``at_or_after`` None), or of its first one
        at or after ``at_or_after``; None when there is none."""
        try:
            if at_or_after is None:
                msg = await js.get_msg(self.stream, subject=self.subject)
            else:
                msg = await js.get_msg(self.stream, max(at_or_after, 1), subject=self.subject, next=True)
        except NotFoundError:
            return None
        return int(msg.seq or 0) or None

    async def _event_seq_at(self, js: JetStreamContext, stream_seq: int) -> int | None:
        """The verified event seq of this cell stored at ``stream_seq``; None for a forged or deleted
        one, or one of another cell."""
        try:
            msg = await js.get_msg(self.stream, stream_seq)
        except NotFoundError:
            return None
        if msg.subject and msg.subject != self.subject:
            return None
        event = self._ctx.gate.peek(msg.data or b"", RELATIONS_BATCH)
        if event is None or event.payload.get("cell") != self.cell:
            return None
        return event.seq

    async def _latest_manifest(self, js: JetStreamContext) -> SnapshotManifest | None:
        """The verified manifest with the highest seq stored (the last one stored may be a replay)."""
        best: SnapshotManifest | None = None
        async for msg in subject_history(js, topology.STREAM_SNAPSHOTS, self.snapshot_subject):
            try:
                manifest = verify_snapshot_manifest(msg.data or b"", self._ctx.gate.keys, cell=self.cell)
            except EventRejected as exc:
                self._ctx.gate.reject(exc.code, self.snapshot_subject, exc.message)
                continue
            if best is None or manifest.seq > best.seq:
                best = manifest
        return best

    async def _load_snapshot(self, js: JetStreamContext, manifest: SnapshotManifest) -> None:
        """Download, check against the signed manifest, build off-loop, swap in one reference."""
        sidecar, options = self._ctx.sidecar, self._ctx.options
        sidecar.feed_state = "resyncing"
        name = topology.snapshot_object(manifest.seq, self.cell)
        if self._refused == (manifest.seq, manifest.sha256):
            raise FeedStuck(f"snapshot {manifest.seq} was refused; waiting for a newer one", applied=self.applied)
        try:
            data = await fetch_object(js, topology.BUCKET_SNAPSHOTS, name, size=manifest.size, sha256=None,
                                      limit=options.max_snapshot_bytes, timeout=options.fetch_timeout)
            manifest.check(data)
            index = await asyncio.to_thread(index_from_snapshot_bytes, data, keep_types=self._scope.types)
        except EventRejected as exc:
            self._refused = (manifest.seq, manifest.sha256)
            self._ctx.gate.reject(exc.code, name, exc.message)
            raise FeedStuck(f"snapshot {manifest.seq} refused: {exc.code}", applied=self.applied) from exc
        except SnapshotInvalid as exc:
            self._refused = (manifest.seq, manifest.sha256)
            self._ctx.gate.reject(EventMalformed.code, name, exc.message)
            raise FeedStuck(f"snapshot {manifest.seq} invalid", applied=self.applied) from exc
        if index.applied_seq <= self.applied:
            return  # never go back in time (another path got further meanwhile)
        sidecar.replace_relations(index, self.cell)
        await sidecar.relations_advanced()
        self.stream_seq = 0
        self._needs_snapshot = False
        self._gaps_in_row = 0
        self._ctx.metrics.resyncs.inc()
        log.info("relations %s: loaded snapshot %d (%d tuples)", self.cell, index.applied_seq, index.count())

    # ------------------------------------------------------------------ messages

    async def handle(self, js: JetStreamContext, data: bytes, stream_seq: int) -> bool:
        """Apply the next batch; False asks the runner to restart (and resync) on a gap."""
        event = self._ctx.gate.verify(data, RELATIONS_BATCH, where=self.subject)
        if event is None:
            return True
        try:
            batch = batch_from_event(event, cell=self.cell)
        except EventRejected as exc:
            self._ctx.gate.reject(exc.code, self.subject, exc.message, seq=event.seq)
            return True
        self.note_plane_seq(batch.seq)
        if batch.seq <= self.applied:
            self.stream_seq = stream_seq
            self._ctx.metrics.events_duplicate.labels(KIND).inc()
            return True
        try:
            self._ctx.sidecar.relations.apply(self.cell, batch)
        except SequenceGap as gap:
            return self._gap(gap)
        self.stream_seq = stream_seq
        self._gaps_in_row = 0
        self._ctx.metrics.events_applied.labels(KIND).inc()
        await self._ctx.sidecar.relations_advanced()
        return True

    def _gap(self, gap: SequenceGap) -> bool:
        """First gap in a row: rescan the retained stream (an estimate or a client-side drop
        may be to blame). Second: the batches are gone, so only a snapshot can help."""
        self._ctx.metrics.gaps.labels(KIND).inc()
        self._gaps_in_row += 1
        if self._gaps_in_row == 1:
            log.info("relations %s: %s; rescanning from the stream's first message", self.cell, gap.message)
            self._scan_from_first = True
        else:
            log.warning("relations %s: %s in the retained stream; resyncing from the snapshot", self.cell,
                        gap.message)
            self._needs_snapshot = True
            self._ctx.sidecar.feed_state = "resyncing"
        self.stream_seq = 0
        return False

    def note_plane_seq(self, seq: int) -> None:
        self.plane_seq = max(self.plane_seq, seq)
