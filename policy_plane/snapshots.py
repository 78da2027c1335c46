"""Background duties of a replica: relation snapshots and the signed heartbeat.

Snapshots, per tenant cell. Every ``every`` batches of a cell or ``seconds`` seconds
(whichever comes first, and only for cells that changed) a replica writes
``snapshot_bytes(index of the cell)`` to object ``relations/<cell>/<seq>`` in
``tg-snapshots`` and then publishes the signed manifest (which names the cell) on
``tg.snapshots.relations.<cell>``. Snapshots of the same sequence are byte-identical on every
replica, so two replicas racing write the same object; the manifest goes through the
sequenced writer, so an older manifest never replaces a newer one. The manifest carries
an unsigned ``Tg-Stream-Seq`` header: the JetStream sequence up to which the snapshot is
complete (a lower bound), so a restarting replica resumes the stream there instead of
re-verifying the whole history. A wrong hint cannot corrupt state: too low costs time,
too high shows up as a sequence gap and the replica refuses to become ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from tenantguard.errors import TenantGuardError
from tenantguard.feed import topology as topo
from tenantguard.feed.events import sign_snapshot_manifest
from tenantguard.feed.freshness import Heartbeat as FreshnessBeat
from tenantguard.feed.freshness import validity_for
from tenantguard.identity.keys import SigningKey
from tenantguard.relations import read_header, snapshot_bytes

from .follower import Follower
from .metrics import PlaneMetrics
from .publisher import STREAM_SEQ_HINT, Publisher
from .state import PlaneState
from .writer import SequencedWriter

log = logging.getLogger(__name__)


class _Superseded(Exception):
    """A snapshot at least as new was published meanwhile."""


async def store_snapshot(publisher: Publisher, key: SigningKey, cell: str, data: bytes) -> bytes:
    """Store ``data`` (``snapshot_bytes`` of ``cell``'s index) as object ``relations/<cell>/<seq>`` and
    return its signed manifest, ready to publish on ``tg.snapshots.relations.<cell>``."""
    await publisher.put_object(topo.BUCKET_SNAPSHOTS, topo.snapshot_object(read_header(data).seq, cell), data)
    return sign_snapshot_manifest(key, data, cell=cell)


class Snapshotter:
    def __init__(self, state: PlaneState, publisher: Publisher, relations: Follower,
                 writer: Callable[[str], SequencedWriter], key: SigningKey, metrics: PlaneMetrics, *, every: int,
                 seconds: float) -> None:
        self.state = state
        self.publisher = publisher
        self.relations = relations
        self.writer = writer  # cell -> the sequenced writer of its manifest subject
        self.key = key
        self.metrics = metrics
        self.every = every
        self.seconds = seconds
        self._last_attempt = time.monotonic()

    def _done(self, cell: str) -> int:
        manifest = self.state.snapshots.get(cell)
        return manifest.seq if manifest is not None else 0

    def due_cells(self) -> list[str]:
        """Cells that changed since their last snapshot by ``every`` batches, or at all once
        ``seconds`` have passed since the last pass."""
        timed = time.monotonic() - self._last_attempt >= self.seconds
        out = []
        for cell, index in self.state.index.indexes.items():
            seq, done = index.applied_seq, self._done(cell)
            if seq > done and (seq - done >= self.every or timed):
                out.append(cell)
        return out

    def due(self) -> bool:
        return bool(self.due_cells())

    async def snapshot(self, cell: str = topo.DEFAULT_CELL) -> int | None:
        """Write one snapshot of ``cell`` now; return its sequence, or None when a newer one exists."""
        stream_seq = self.relations.last_stream_seq  # read before the view: a lower bound, as the hint must be
        data = await asyncio.to_thread(snapshot_bytes, self.state.index.index(cell))
        seq = read_header(data).seq
        if self._done(cell) >= seq:
            return None
        manifest = await store_snapshot(self.publisher, self.key, cell, data)

        def build() -> bytes:
            if self._done(cell) >= seq:
                raise _Superseded
            return manifest

        try:
            await self.writer(cell).commit(build, headers={STREAM_SEQ_HINT: str(stream_seq)})
        except _Superseded:
            return None
        self.metrics.snapshots.inc()
        log.info("relations snapshot %s/%d written (%d bytes)", cell, seq, len(data))
        return seq

    async def run_forever(self, tick: float = 1.0) -> None:
        while True:
            await asyncio.sleep(tick)
            cells = self.due_cells()
            if not cells:
                continue
            self._last_attempt = time.monotonic()
            for cell in cells:  # only cells that changed
                try:
                    await self.snapshot(cell)
                except TenantGuardError as exc:  # NATS down: try again at the next tick
                    log.warning("snapshot of %s failed: %s", cell, exc)
                    break


class Heartbeat:
    """``plane.heartbeat`` on core NATS so sidecars can tell "quiet" from "cut off" or "fed old news"
    (see :mod:`tenantguard.feed.freshness`)."""

    def __init__(self, state: PlaneState, publisher: Publisher, key: SigningKey, replica: str,
                 seconds: float) -> None:
        self.state = state
        self.publisher = publisher
        self.key = key
        self.replica = replica
        self.seconds = seconds
        self.sent = 0
        self.withheld: Callable[[], bool] = lambda: False  # the replica is cut off (Plane._watch_jetstream)

    def event(self, now: float | None = None) -> bytes:
        """A signed :class:`~tenantguard.feed.freshness.Heartbeat` naming every stream's newest version."""
        issued = time.time() if now is None else now
        s = self.state
        seqs = s.index.seqs()
        return FreshnessBeat(
            relations_seq=max(seqs.values()), cells=s.cells, relations=seqs,
            trust_seq=s.trust_seq, revocations_seq=s.revocations_seq,
            bundles={scope: a.seq for scope, a in s.announces.items()}, issued_at=issued,
            expires_at=issued + validity_for(self.seconds), replica=self.replica,
        ).sign(self.key)

    async def run_forever(self) -> None:
        while True:
            if not self.withheld():  # a cut-off replica's state may be old: say nothing rather than "current"
                with contextlib.suppress(TenantGuardError):
                    await self.publisher.publish_core(topo.SUBJECT_HEARTBEAT, self.event())
                    self.sent += 1
            await asyncio.sleep(self.seconds)
