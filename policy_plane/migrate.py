"""Carry the pre-cell relations into the tenant cells, once, when an upgraded plane starts.

Before tenant cells the relations lived on one subject, ``tg.relations.changes`` (batches
whose signed payload names no cell, one global ``seq``), with snapshot manifests on
``tg.snapshots.relations`` and objects ``relations/<seq>`` in ``tg-snapshots``. The plane
now lists only the per-cell subjects in its streams (``ensure_topology`` runs first), so
nothing can be published on the old subjects any more; what is stored on them stays
readable by subject, which is all this module needs.

:func:`carry_legacy_relations` runs before the relations bootstrap:

1. Nothing stored on the old subjects: nothing to do (a new system, or an upgraded one
   whose operator purged them).
2. Rebuild the old state exactly as the old plane did: the verified legacy manifest with
   the highest signed ``seq``, its object, then every batch stored after it on the old
   subject, in order, each verified and gap-checked. A batch that does not verify, a gap,
   or a ``seq`` that goes back stops the plane (:class:`LegacyRelationsInvalid`): a
   migration never guesses and is never partial.
3. Every cell gets a snapshot at the legacy sequence ``L`` (empty cells too), written with
   the snapshot code of :mod:`.snapshots`; its manifest is published with
   ``Nats-Expected-Last-Subject-Sequence: 0``, so of replicas migrating at once exactly
   one manifest lands per cell. The snapshot bytes of a given legacy state are the same on
   every replica, so which replica wins a cell does not matter; a loser, or a replica
   completing a migration that was interrupted after some cells, checks that what is
   there is that same snapshot (``seq`` and SHA-256) and carries on.

The sequence rule: **every cell starts at the legacy sequence L**. A consistency token
handed out before the upgrade is at most L, and every cell's state at L contains every
change up to it, so the token is satisfied in every cell from the first moment (with one
cell, ``c0``'s history simply *is* the old history: c0 at seq k = the old state at k). The
cells then count on independently from L + 1.

A replica becomes ready only after every cell has its snapshot, so writes never happen
while a migration is incomplete. Hence a cell that already holds relations the migration
did not write (a manifest below L or not the migration's own snapshot while another cell
still lacks one, batches without a snapshot) means the cells were written without the
legacy state: :class:`LegacyRelationsConflict`, naming the cell, and the plane does not
start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from tenantguard.errors import TenantGuardError
from tenantguard.feed import topology as topo
from tenantguard.feed.events import (
    RELATIONS_BATCH,
    RELATIONS_SNAPSHOT,
    EventMalformed,
    EventRejected,
    SnapshotManifest,
    batch_from_event,
    verify_event,
    verify_snapshot_manifest,
)
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.relations import (
    RelationIndex,
    SequenceGap,
    index_from_snapshot_bytes,
    read_header,
    snapshot_bytes,
    snapshot_digest,
)
from tenantguard.relations.reads import TupleMeta

from .publisher import STREAM_SEQ_HINT, Publisher, SequenceConflict
from .snapshots import store_snapshot

log = logging.getLogger(__name__)

LEGACY_RELATIONS_SUBJECT: Final = "tg.relations.changes"  # = topo.SUBJECT_RELATIONS_PREFIX, never published on
LEGACY_SNAPSHOT_SUBJECT: Final = "tg.snapshots.relations"  # = topo.SUBJECT_SNAPSHOTS_PREFIX, never published on
PURGE_HINT: Final = (f"nats stream purge {topo.STREAM_RELATIONS} --subject {LEGACY_RELATIONS_SUBJECT}; "
                     f"nats stream purge {topo.STREAM_SNAPSHOTS} --subject {LEGACY_SNAPSHOT_SUBJECT}")


def legacy_snapshot_object(seq: int) -> str:
    """Where the pre-cell plane stored the snapshot of ``seq`` in ``tg-snapshots``."""
    return f"relations/{seq}"


class LegacyRelationsRefused(TenantGuardError):
    """The pre-cell relations cannot be carried into the cells as they are stored: the plane
    does not start (it would serve without them)."""

    code = "legacy_relations_refused"
    http_status = 503


class LegacyRelationsInvalid(LegacyRelationsRefused):
    """A stored pre-cell batch does not verify, or the batches have a gap: the old state cannot be
    rebuilt completely."""

    code = "legacy_relations_invalid"


class LegacyRelationsConflict(LegacyRelationsRefused):
    """A cell already holds relations the migration did not write."""

    code = "legacy_relations_conflict"


@dataclass(frozen=True, slots=True)
class Migration:
    """What :func:`carry_legacy_relations` found and did."""

    legacy_seq: int  # L: the sequence of the legacy state, where every cell starts
    count: int = 0  # tuples carried
    written: tuple[str, ...] = ()  # cells whose migration snapshot this replica published
    found: tuple[str, ...] = ()  # cells whose migration snapshot was already there (another replica, a prior run)
    done_before: bool = False  # every cell was already at or past L: nothing was read or written
    cells: dict[str, int] = field(default_factory=dict)  # cell -> tuples


@dataclass(frozen=True, slots=True)
class _Cell:
    manifest: SnapshotManifest | None  # the newest verified manifest on the cell's subject
    has_batches: bool


async def carry_legacy_relations(publisher: Publisher, key: SigningKey, trust: TrustSet,
                                 cells: int) -> Migration | None:
    """Migrate the pre-cell relations into the ``cells`` cells if that has not happened yet;
    None when nothing pre-cell is stored. See the module docstring."""
    if (await publisher.last_on_subject(topo.STREAM_RELATIONS, LEGACY_RELATIONS_SUBJECT) is None
            and await publisher.last_on_subject(topo.STREAM_SNAPSHOTS, LEGACY_SNAPSHOT_SUBJECT) is None):
        return None
    hint = await publisher.stream_last_seq(topo.STREAM_RELATIONS)  # read before the cells: a lower bound
    names = topo.cell_names(cells)
    found = {cell: await _cell(publisher, trust, cell) for cell in names}
    if all(c.manifest is not None for c in found.values()):
        return await _check_done(publisher, trust, found)
    for cell, state in found.items():
        if state.manifest is None and state.has_batches:
            raise LegacyRelationsConflict(
                f"cell {cell} holds relations batches but no snapshot while pre-cell relations are stored: its "
                "relations were written without the legacy state. Re-write the legacy relations into the cells, "
                f"then remove the legacy subjects ({PURGE_HINT})", cell=cell)
    legacy = await rebuild_legacy(publisher, trust)
    if legacy.applied_seq == 0:
        return Migration(0)
    data = await asyncio.to_thread(_cell_snapshots, legacy, names)
    for cell, state in found.items():
        if state.manifest is not None:
            _same(cell, state.manifest, data[cell])
    written: list[str] = []
    for cell in names:
        if found[cell].manifest is not None:
            continue
        manifest = await store_snapshot(publisher, key, cell, data[cell])
        try:
            await publisher.publish(topo.snapshot_subject(cell), manifest, expected_last_subject_seq=0,
                                    headers={STREAM_SEQ_HINT: str(hint)})
        except SequenceConflict:  # another replica claimed this cell first: it must be the same snapshot
            theirs = (await _cell(publisher, trust, cell)).manifest
            if theirs is None:
                raise LegacyRelationsConflict(f"cell {cell}: a manifest was published meanwhile that does not "
                                              "verify", cell=cell) from None
            _same(cell, theirs, data[cell])
            continue
        written.append(cell)
    counts = {cell: _count(data[cell]) for cell in names}
    result = Migration(legacy.applied_seq, legacy.count(), tuple(written),
                       tuple(c for c in names if c not in written), cells=counts)
    log.warning("pre-cell relations carried into %d cell(s) at seq %d (%d tuples; this replica wrote %s)",
                cells, result.legacy_seq, result.count, ", ".join(written) or "none")
    return result


async def rebuild_legacy(publisher: Publisher, trust: TrustSet) -> RelationIndex:
    """The pre-cell state as the old plane rebuilt it: newest verified manifest, its object, then the
    legacy batches stored after it, each verified, in order, gap-free."""
    index, start = RelationIndex(), 1
    newest = await _newest_legacy_manifest(publisher, trust)
    if newest is not None:
        manifest, stream_hint = newest
        try:
            data = await publisher.get_object(topo.BUCKET_SNAPSHOTS, legacy_snapshot_object(manifest.seq),
                                              max_bytes=manifest.size)
            manifest.check(data)
            index = await asyncio.to_thread(index_from_snapshot_bytes, data)
            start = stream_hint + 1
        except TenantGuardError as exc:  # refused or unreadable, as the old plane did: replay the stream instead
            log.warning("legacy snapshot %d unusable, replaying the legacy batches: %s", manifest.seq, exc)
    last = await publisher.stream_last_seq(topo.STREAM_RELATIONS)
    async for msg in publisher.subject_history(topo.STREAM_RELATIONS, LEGACY_RELATIONS_SUBJECT, start_seq=start,
                                               limit=max(1, last - start + 1)):
        try:
            event = verify_event(msg.data, trust, expected_type=RELATIONS_BATCH)
            if "cell" in event.payload:
                raise EventMalformed(f"batch {event.seq} names a cell; the legacy subject carries none")
            batch = batch_from_event(event)
        except EventRejected as exc:
            raise LegacyRelationsInvalid(
                f"legacy relations batch at {topo.STREAM_RELATIONS} message {msg.stream_seq} is refused "
                f"({exc.code}: {exc.message}). If it is not a genuine batch of this plane, delete it "
                f"(nats stream rmm {topo.STREAM_RELATIONS} {msg.stream_seq}) and start again; the migration "
                "does not skip what it cannot verify", stream_seq=msg.stream_seq, cause=exc.code) from None
        try:
            index.apply(batch)
        except SequenceGap as exc:
            raise LegacyRelationsInvalid(
                f"legacy relations have a gap at {topo.STREAM_RELATIONS} message {msg.stream_seq}: {exc.message} "
                "(batches aged out or purged after the newest legacy snapshot). The old state cannot be rebuilt "
                "completely: restore the missing batches, or re-write the relations into the cells and remove "
                f"the legacy subjects ({PURGE_HINT})", stream_seq=msg.stream_seq) from None
    return index


async def _newest_legacy_manifest(publisher: Publisher,
                                  trust: TrustSet) -> tuple[SnapshotManifest, int] | None:
    """The verified legacy manifest with the highest signed seq (as ``tenantguard.feed.history`` readers
    do: one that does not verify is skipped, as the old plane skipped it), and its stream hint."""
    best: tuple[SnapshotManifest, int] | None = None
    async for msg in publisher.subject_history(topo.STREAM_SNAPSHOTS, LEGACY_SNAPSHOT_SUBJECT):
        try:
            manifest = _legacy_manifest(msg.data, trust)
        except EventRejected as exc:
            log.warning("legacy snapshot manifest at %s message %d refused: %s", topo.STREAM_SNAPSHOTS,
                        msg.stream_seq, exc)
            continue
        if best is None or manifest.seq > best[0].seq:
            hint = msg.headers.get(STREAM_SEQ_HINT, "")
            best = (manifest, int(hint) if hint.isdigit() else 0)
    return best


def _legacy_manifest(data: bytes, trust: TrustSet) -> SnapshotManifest:
    """A pre-cell ``relations.snapshot`` manifest: ``{count, size, sha256}``, no cell."""
    event = verify_event(data, trust, expected_type=RELATIONS_SNAPSHOT)
    if "cell" in event.payload:
        raise EventMalformed("a cell's manifest on the legacy subject")
    count, size, digest = event.payload.get("count"), event.payload.get("size"), event.payload.get("sha256")
    if (not isinstance(count, int) or isinstance(count, bool) or count < 0 or not isinstance(size, int)
            or isinstance(size, bool) or size < 0 or not isinstance(digest, str) or len(digest) != 64):
        raise EventMalformed("legacy snapshot manifest lacks count, size or sha256")
    return SnapshotManifest(event.seq, count, size, digest, event.issued_at, event.kid, cell="")


async def _cell(publisher: Publisher, trust: TrustSet, cell: str) -> _Cell:
    best: SnapshotManifest | None = None
    async for msg in publisher.subject_history(topo.STREAM_SNAPSHOTS, topo.snapshot_subject(cell)):
        try:
            manifest = verify_snapshot_manifest(msg.data, trust, cell=cell)
        except EventRejected:
            continue  # the bootstrap counts and logs it
        if best is None or manifest.seq > best.seq:
            best = manifest
    batches = await publisher.last_on_subject(topo.STREAM_RELATIONS, topo.relations_subject(cell))
    return _Cell(best, batches is not None)


async def _check_done(publisher: Publisher, trust: TrustSet, found: dict[str, _Cell]) -> Migration:
    """Every cell has a snapshot: the migration happened if each is at or past the legacy sequence.
    The legacy sequence is read cheaply here (newest legacy manifest, last legacy batch), since
    a migrated system starts with this check every time until the legacy subjects are purged."""
    legacy_seq = 0
    newest = await _newest_legacy_manifest(publisher, trust)
    if newest is not None:
        legacy_seq = newest[0].seq
    last = await publisher.last_on_subject(topo.STREAM_RELATIONS, LEGACY_RELATIONS_SUBJECT)
    if last is not None:
        # one that does not verify was stored before the migration, which verified all it needed
        with contextlib.suppress(EventRejected):
            legacy_seq = max(legacy_seq, verify_event(last.data, trust, expected_type=RELATIONS_BATCH).seq)
    behind = {cell: c.manifest.seq for cell, c in found.items() if c.manifest is not None
              and c.manifest.seq < legacy_seq}
    if behind:
        raise LegacyRelationsConflict(
            f"pre-cell relations reach seq {legacy_seq} but cell(s) {', '.join(sorted(behind)[:8])} have snapshots "
            f"only up to {min(behind.values())}: the cells were written without (all of) the legacy state, or a "
            "pre-cell plane wrote after the upgrade. Stop every pre-cell plane replica; re-write the missing "
            f"relations into the cells, then remove the legacy subjects ({PURGE_HINT})",
            legacy_seq=legacy_seq, cells=sorted(behind)[:64])
    return Migration(legacy_seq, done_before=True)


def _cell_snapshots(legacy: RelationIndex, names: tuple[str, ...]) -> dict[str, bytes]:
    """``snapshot_bytes`` of every cell's part of ``legacy``, all at the legacy sequence (blocking)."""
    if len(names) == 1:
        return {names[0]: snapshot_bytes(legacy)}
    parts: dict[str, list[tuple[str, str, str, str, TupleMeta | None]]] = {cell: [] for cell in names}
    for row in _tuples(legacy):
        parts[topo.cell_of(row[0], len(names))].append(row)
    return {cell: snapshot_bytes(RelationIndex.from_trusted(legacy.applied_seq, rows)) for cell, rows in parts.items()}


def _tuples(index: RelationIndex) -> Iterator[tuple[str, str, str, str, TupleMeta | None]]:
    """Every tuple of ``index`` with its meta (a condition or an expiry moves with its tuple)."""
    view = index.view()
    for tenant in view.tenants():
        for obj, rels in view.rows(tenant):
            for rel, subjects in rels:
                for subject in subjects:
                    yield tenant, obj, rel, subject, None
        for obj, rel, subject, meta in view.meta_rows(tenant):
            yield tenant, obj, rel, subject, meta


def _same(cell: str, manifest: SnapshotManifest, data: bytes) -> None:
    """A snapshot already on ``cell``'s subject must be the migration's own (an interrupted or
    concurrent migration of the same legacy state)."""
    seq = read_header(data).seq
    if (manifest.seq, manifest.sha256) != (seq, snapshot_digest(data)):
        raise LegacyRelationsConflict(
            f"cell {cell} already has snapshot {manifest.seq}, not the migration's snapshot {seq} of the pre-cell "
            "relations, while other cells have none: the cells were written without the legacy state. Re-write "
            f"the legacy relations into the cells, then remove the legacy subjects ({PURGE_HINT})",
            cell=cell, snapshot_seq=manifest.seq, legacy_seq=seq)


def _count(data: bytes) -> int:
    return read_header(data).count
