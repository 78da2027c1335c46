"""What a plane replica knows, rebuilt from JetStream alone (the plane is stateless).

Each ``apply_*`` method consumes one message of one stream (called by a
:class:`~.follower.Follower`, in stream order), verifies it with the plane's own event
key exactly as a sidecar would, and updates an in-memory view:

* relations: a :class:`CellRelations` (one index per tenant cell, each with its own
  sequence), each cell bootstrapped from its latest signed snapshot (manifest on
  ``tg.snapshots.relations.<cell>``, bytes in ``tg-snapshots``) when there is one; a batch
  or manifest signed for another cell than its subject's is refused; and the idempotency
  keys of recent writes (:class:`~.idempotency.KeyWindow`);
* trust: the token trust set of the newest ``trust.update``;
* revocations: every ``revocation`` event, replayed into a :class:`RevocationList`;
* bundles: per scope, the newest ``bundle.announce`` and a :class:`BundleStore` holding
  that revision (the ordering authority when a new bundle is published);
* snapshots: the newest verified manifest of every cell.

A message that does not verify is counted and skipped, never applied.

Versions only move forward: every ``apply_*`` ignores an event whose ``seq`` is not newer
than the one it holds, and trust, bundle announces and snapshot manifests keep their
history on the stream, so after a restart the state is the highest signed version even
when someone re-published a genuine old event after it (a replay). An announce is bound
to its scope: one replayed onto another scope's subject is refused.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

from tenantguard.bundle import DEFAULT_LIMITS, ArchiveLimits, BundleStore, TrustSetVerifier
from tenantguard.errors import PayloadTooLarge, TenantGuardError, Unavailable
from tenantguard.feed import topology as topo
from tenantguard.feed.events import (
    BUNDLE_ANNOUNCE,
    RELATIONS_BATCH,
    REVOCATION,
    TRUST_UPDATE,
    EventDigestMismatch,
    EventMalformed,
    EventRejected,
    EventWrongCell,
    SnapshotManifest,
    batch_from_event,
    verify_event,
    verify_snapshot_manifest,
)
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.revocations import RevocationList
from tenantguard.relations import CellRelations, ChangeBatch, RelationScope, SequenceGap, index_from_snapshot_bytes
from tenantguard.rollout import ROLLOUT_STATE, RolloutState

from .idempotency import KeyWindow, keys_of
from .publisher import STREAM_SEQ_HINT, ObjectMissing, Publisher, StoredMsg
from .replicamac import BatchSeal
from .revocations import apply_record

log = logging.getLogger(__name__)
PLANE_ISSUER = topo.PLANE_ISSUER


@dataclass(frozen=True, slots=True)
class OwnBatch:
    """A relations batch this replica signed and is about to publish: when the same bytes come back
    from the stream, they are applied from here, unverified and unparsed (the signature would only
    confirm what this process signed a moment ago)."""

    data: bytes = dataclasses.field(repr=False)
    batch: ChangeBatch
    keys: tuple[tuple[str, str], ...]
    issued_at: float


@dataclass(frozen=True, slots=True)
class Announce:
    """The active bundle of one scope, as last announced."""

    scope: str
    seq: int
    revision: str
    serial: int | None
    sha256: str
    size: int
    object: str
    services: tuple[str, ...]
    kid: str
    loaded: bool
    previous: dict[str, Any] | None = None  # the announce this one replaced: {revision, object, sha256, serial}

    def to_wire(self) -> dict[str, Any]:
        return {"scope": self.scope, "seq": self.seq, "revision": self.revision, "serial": self.serial,
                "sha256": self.sha256, "size": self.size, "object": self.object,
                "services": list(self.services), "kid": self.kid, "loaded": self.loaded,
                "previous": self.previous}

    def pointer(self) -> dict[str, Any]:
        """What the next announce of this scope records as its ``previous`` (the rollback target)."""
        return {"revision": self.revision, "object": self.object, "sha256": self.sha256, "serial": self.serial}


class PlaneState:
    def __init__(self, event_key: SigningKey, bundle_key: SigningKey, *, max_bundle_bytes: int,
                 cells: int = 1) -> None:
        self.event_trust = TrustSet()
        self.event_trust.add_public_key(event_key.public_key, PLANE_ISSUER)
        self.batch_seal = BatchSeal(event_key)  # batches another replica published: its MAC, not a verify
        bundle_trust = TrustSet()
        bundle_trust.add_public_key(bundle_key.public_key, PLANE_ISSUER)
        self.bundle_verifier = TrustSetVerifier(bundle_trust, issuer=PLANE_ISSUER)
        self.max_bundle_bytes = max_bundle_bytes
        self.bundle_limits = ArchiveLimits(
            max_compressed_bytes=max_bundle_bytes, max_total_bytes=DEFAULT_LIMITS.max_total_bytes,
            max_file_bytes=DEFAULT_LIMITS.max_file_bytes, max_files=DEFAULT_LIMITS.max_files)
        self.cells = cells
        self.index = CellRelations(RelationScope(cells))  # the read API of one index, routed by tenant
        self.relations_broken: str | None = None
        self.keys = KeyWindow()  # idempotency keys of committed relation writes (see .idempotency)
        self._own: dict[str, OwnBatch] = {}  # relations subject -> the batch this replica publishes on it next
        self.trust = TrustSet()
        self.trust_seq = 0
        self.revocations: list[dict[str, Any]] = []
        self.revocation_list = RevocationList()
        self.revocations_seq = 0
        self.stores: dict[str, BundleStore[None]] = {}
        self.announces: dict[str, Announce] = {}
        self.snapshots: dict[str, SnapshotManifest] = {}  # cell -> newest verified manifest
        self.replay_floor: dict[str, int] = {}  # cell -> seq its unusable snapshot held (replay must reach it)
        self.rollout: RolloutState | None = None
        self.shadows: dict[str, dict[str, Any]] = {}  # scope -> the newest verified bundle.shadow payload (+ seq)
        self.rollout_seq = 0
        self.rejected: Counter[tuple[str, str]] = Counter()
        self.publisher: Publisher | None = None  # set by the runtime; bundle bytes are fetched through it

    # ------------------------------------------------------------------ helpers

    def _refuse(self, stream: str, stream_seq: int, exc: EventRejected) -> None:
        self.rejected[(stream, exc.code)] += 1
        log.warning("refused %s message %d: %s", stream, stream_seq, exc)

    def store(self, scope: str) -> BundleStore[None]:
        if scope not in self.stores:
            self.stores[scope] = BundleStore(self.bundle_verifier, limits=self.bundle_limits)
        return self.stores[scope]

    # ------------------------------------------------------------------ relations

    @property
    def snapshot(self) -> SnapshotManifest | None:
        """Cell c0's newest manifest (the only cell of a one-cell system)."""
        return self.snapshots.get(topo.DEFAULT_CELL)

    async def bootstrap_relations(self, publisher: Publisher) -> int:
        """Load every cell's latest verified snapshot, if any; return the stream sequence to resume
        at (the lowest any cell needs: cells further on skip what they already hold)."""
        resume = [await self._bootstrap_cell(publisher, cell) for cell in topo.cell_names(self.cells)]
        return min(resume)

    async def _bootstrap_cell(self, publisher: Publisher, cell: str) -> int:
        """Load ``cell``'s newest verified snapshot; the stream sequence to resume it at.

        Only a snapshot that is gone (or whose bytes do not match its manifest) falls back to
        replaying the cell's stream, and the replay must then reach the manifest's seq
        (:meth:`check_replayed`). A snapshot that cannot be read right now (a timeout) is
        retried and, still unreadable, stops the start: replaying instead would silently serve
        less than the snapshot held wherever the stream no longer has the history (a migrated
        cell, a stream with a max age)."""
        newest = await self._newest_manifest(publisher, cell)
        if newest is None:
            return 1
        manifest, last = newest
        try:
            data = await _read_snapshot(publisher, manifest, cell)
            manifest.check(data)
            self.index.replace(cell, await asyncio.to_thread(index_from_snapshot_bytes, data))
        except EventRejected as exc:
            self._refuse(topo.STREAM_SNAPSHOTS, last.stream_seq, exc)
            self.replay_floor[cell] = manifest.seq
            return 1
        except (ObjectMissing, PayloadTooLarge) as exc:
            log.warning("snapshot of %s unusable, replaying its relations from the stream: %s", cell, exc)
            self.replay_floor[cell] = manifest.seq
            return 1
        self.snapshots[cell] = manifest
        hint = last.headers.get(STREAM_SEQ_HINT, "")
        log.info("relations of %s bootstrapped from snapshot %d (%d tuples)", cell, manifest.seq, manifest.count)
        return int(hint) + 1 if hint.isdigit() else 1

    def check_replayed(self) -> None:
        """After the followers caught up: every cell that fell back to replaying its stream reached the
        seq its newest snapshot declared, else the stream no longer holds that history and starting
        would serve (and write on top of) a partial index: refuse, naming the object to restore."""
        short = {cell: (self.index.index(cell).applied_seq, floor) for cell, floor in self.replay_floor.items()
                 if self.index.index(cell).applied_seq < floor}
        if short:
            detail = ", ".join(f"{cell} at {got} of {floor} (object {topo.snapshot_object(floor, cell)})"
                               for cell, (got, floor) in sorted(short.items()))
            raise Unavailable(f"relations replayed from the stream fall short of their snapshots: {detail}; "
                              f"restore the snapshot object in {topo.BUCKET_SNAPSHOTS} and start again",
                              cells=sorted(short))

    async def _newest_manifest(self, publisher: Publisher, cell: str) -> tuple[SnapshotManifest, StoredMsg] | None:
        """The verified manifest of ``cell`` with the highest seq stored, whatever order the broker holds
        them in (the last one stored may be a replayed old manifest)."""
        best: tuple[SnapshotManifest, StoredMsg] | None = None
        async for msg in publisher.subject_history(topo.STREAM_SNAPSHOTS, topo.snapshot_subject(cell)):
            try:
                manifest = verify_snapshot_manifest(msg.data, self.event_trust, cell=cell)
            except EventRejected as exc:
                self._refuse(topo.STREAM_SNAPSHOTS, msg.stream_seq, exc)
                continue
            if best is None or manifest.seq > best[0].seq:
                best = (manifest, msg)
        return best

    def _cell_of(self, subject: str) -> str:
        cell = topo.cell_of_subject(subject)
        try:
            topo.cell_index(cell, self.cells)
        except ValueError:
            raise EventWrongCell(f"{subject} names no cell of this {self.cells}-cell system") from None
        return cell

    def expect_own(self, subject: str, own: OwnBatch) -> None:
        """``own`` is what this replica publishes next on ``subject`` (see :class:`OwnBatch`)."""
        self._own[subject] = own

    async def apply_relations(self, subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
        """Apply a batch, and remember its idempotency keys, also for a batch the index already
        holds: a restarting replica reads the key window back this way (see ``Plane.start``),
        verifying each event but parsing no changes the snapshot already holds. A batch this
        replica has just published comes back byte for byte: applied from what it signed."""
        own = self._own.get(subject)
        if own is not None and own.data == data:
            del self._own[subject]
            cell = self._cell_of(subject)
            seq, keys, issued_at = own.batch.seq, list(own.keys), own.issued_at
            batch = own.batch if seq > self.index.index(cell).applied_seq else None
        else:
            try:
                cell = self._cell_of(subject)
                event = self.batch_seal.open(data, headers) or verify_event(
                    data, self.event_trust, expected_type=RELATIONS_BATCH)
                seq, issued_at = event.seq, event.issued_at
                batch = batch_from_event(event, cell=cell) if seq > self.index.index(cell).applied_seq else None
            except EventRejected as exc:
                self._refuse(topo.STREAM_RELATIONS, stream_seq, exc)
                return
            try:
                keys = keys_of(event.payload)
            except EventMalformed as exc:  # the sidecars apply the batch regardless: so do we
                log.error("relations batch %d carries malformed idempotency keys: %s", seq, exc.message)
                keys = []
        if batch is not None:
            try:
                self.index.apply(cell, batch)
            except SequenceGap as exc:
                self.relations_broken = exc.message
                log.error("relations stream has a gap at stream message %d: %s", stream_seq, exc.message)
                return
        if keys:
            self.keys.record(seq, keys, issued_at)

    # ------------------------------------------------------------------ trust and revocations

    async def apply_trust(self, subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
        try:
            event = verify_event(data, self.event_trust, expected_type=TRUST_UPDATE)
            if event.seq <= self.trust_seq:
                return
            fresh = TrustSet.from_jwks(event.payload.get("jwks") or {})
        except EventRejected as exc:
            self._refuse(topo.STREAM_TRUST, stream_seq, exc)
            return
        self.trust.replace_all(fresh)
        self.trust_seq = event.seq

    async def apply_revocation(self, subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
        try:
            event = verify_event(data, self.event_trust, expected_type=REVOCATION)
        except EventRejected as exc:
            self._refuse(topo.STREAM_REVOCATIONS, stream_seq, exc)
            return
        if event.seq <= self.revocations_seq:
            return
        if event.seq != self.revocations_seq + 1:
            log.error("revocations jump from %d to %d: earlier revocations are missing",
                      self.revocations_seq, event.seq)
        apply_record(self.revocation_list, event.payload)
        self.revocations.append({"seq": event.seq, "issued_at": int(event.issued_at), **event.payload})
        self.revocations_seq = event.seq

    # ------------------------------------------------------------------ bundles and snapshots

    async def apply_bundle(self, subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
        scope = subject.removeprefix(topo.SUBJECT_BUNDLES_PREFIX + ".")
        try:
            event = verify_event(data, self.event_trust, expected_type=BUNDLE_ANNOUNCE)
            announce = _announce(scope, event.seq, event.kid, event.payload)
            if announce.scope != scope:
                raise EventMalformed(f"announce for scope {announce.scope!r} replayed on {subject}")
        except EventRejected as exc:
            self._refuse(topo.STREAM_BUNDLES, stream_seq, exc)
            return
        current = self.announces.get(scope)
        if current is not None and announce.seq <= current.seq:
            return
        loaded = await self._load_bundle(announce)
        self.announces[scope] = dataclasses.replace(announce, loaded=loaded)

    async def _load_bundle(self, announce: Announce) -> bool:
        """Fetch, check and activate the announced bytes; False (and logged) when that fails."""
        if self.publisher is None:
            return False
        try:
            archive = await self.publisher.get_object(topo.BUCKET_BUNDLES, announce.object,
                                                      max_bytes=self.max_bundle_bytes)
            if hashlib.sha256(archive).hexdigest() != announce.sha256:
                raise EventDigestMismatch(f"bundle object {announce.object} does not match its announce")
            self.store(announce.scope).activate(archive, force=True)
        except TenantGuardError as exc:
            log.error("cannot load announced bundle %s: %s", announce.object, exc)
            return False
        return True

    async def apply_shadow(self, subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
        """A scope's shadow candidate (or its end): the newest signed ``bundle.shadow`` wins."""
        scope = subject.removeprefix(topo.SUBJECT_SHADOWS_PREFIX + ".")
        try:
            event = verify_event(data, self.event_trust, expected_type=topo.BUNDLE_SHADOW)
            if event.payload.get("scope") != scope:
                raise EventMalformed(f"shadow for scope {str(event.payload.get('scope'))[:64]!r} on {subject}")
        except EventRejected as exc:
            self._refuse(topo.STREAM_BUNDLES, stream_seq, exc)
            return
        current = self.shadows.get(scope)
        if current is None or event.seq > current["seq"]:
            self.shadows[scope] = {**event.payload, "seq": event.seq}

    async def apply_rollout(self, subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
        """The staged rollout's state: the newest signed ``rollout.state`` wins."""
        try:
            event = verify_event(data, self.event_trust, expected_type=ROLLOUT_STATE)
            if event.seq <= self.rollout_seq:
                return
            rollout = RolloutState.from_wire(event.payload)
        except EventRejected as exc:
            self._refuse(topo.STREAM_ROLLOUTS, stream_seq, exc)
            return
        except TenantGuardError as exc:
            self._refuse(topo.STREAM_ROLLOUTS, stream_seq, EventMalformed(exc.message))
            return
        self.rollout, self.rollout_seq = rollout, event.seq

    async def apply_snapshot(self, subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
        try:
            cell = self._cell_of(subject)
            manifest = verify_snapshot_manifest(data, self.event_trust, cell=cell)
        except EventRejected as exc:
            self._refuse(topo.STREAM_SNAPSHOTS, stream_seq, exc)
            return
        current = self.snapshots.get(cell)
        if current is None or manifest.seq >= current.seq:
            self.snapshots[cell] = manifest


def _announce(scope: str, seq: int, kid: str, payload: dict[str, Any]) -> Announce:
    try:
        services = payload.get("services") or [topo.BUNDLE_SCOPE_ALL]
        serial = payload.get("serial")
        previous = payload.get("previous")
        return Announce(str(payload["scope"]), seq, str(payload["revision"]),
                        serial if isinstance(serial, int) else None, str(payload["sha256"]), int(payload["size"]),
                        str(payload["object"]), tuple(str(s) for s in services), kid, False,
                        dict(previous) if isinstance(previous, dict) else None)
    except (KeyError, TypeError, ValueError) as exc:
        raise EventMalformed(f"bundle announce lacks a field: {exc}") from None


SNAPSHOT_READ_DELAYS: Final = (0.5, 1.0, 2.0, 4.0)  # seconds between attempts to read a snapshot at start


async def _read_snapshot(publisher: Publisher, manifest: SnapshotManifest, cell: str) -> bytes:
    """The snapshot object's bytes; a failure other than a missing or oversized object is retried
    (about 7.5 s in all), then raised."""
    name = topo.snapshot_object(manifest.seq, cell)
    for delay in (*SNAPSHOT_READ_DELAYS, None):
        try:
            return await publisher.get_object(topo.BUCKET_SNAPSHOTS, name, max_bytes=manifest.size)
        except (ObjectMissing, PayloadTooLarge):
            raise
        except TenantGuardError as exc:
            if delay is None:
                raise Unavailable(f"snapshot {name} could not be read ({exc.message}); not starting without "
                                  "it: replaying the stream instead could serve less than it holds") from None
            log.warning("reading snapshot %s failed (%s); trying again in %g s", name, exc.message, delay)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # the last attempt returns or raises
