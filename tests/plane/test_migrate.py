"""An upgrade across the cell split loses no relations (policy_plane/migrate.py; real NATS, real planes).

The pre-cell layout is written by :class:`~tests.harness.legacy_plane.LegacyPlane` exactly as the old plane
wrote it; upgraded planes run in-process so two can start in one event loop.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nats.js.errors
import pytest
from tenantguard.feed import topology as topo
from tenantguard.feed.events import (
    SnapshotManifest,
    batch_from_event,
    sign_batch,
    verify_event,
    verify_snapshot_manifest,
)
from tenantguard.identity.keys import SigningKey
from tenantguard.relations import ChangeBatch, RelationIndex, write_snapshot

from authz_sidecar.config import SidecarConfig
from authz_sidecar.feed import Feed
from authz_sidecar.runtime import Sidecar
from policy_plane.follower import Follower
from policy_plane.migrate import (
    LEGACY_RELATIONS_SUBJECT,
    LegacyRelationsConflict,
    LegacyRelationsInvalid,
    _cell_snapshots,
    carry_legacy_relations,
    rebuild_legacy,
)
from policy_plane.publisher import STREAM_SEQ_HINT, Publisher, StoredMsg
from policy_plane.runtime import Plane
from policy_plane.snapshots import store_snapshot
from tests.harness.fleet import FAST, decide, eventually, make_bundle
from tests.harness.legacy_plane import A, B, C, LegacyPlane, changes, legacy_layout, plane_config, sign_legacy_batch
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]


async def manifests(publisher: Publisher, cell: str) -> list[StoredMsg]:
    return [m async for m in publisher.subject_history(topo.STREAM_SNAPSHOTS, topo.snapshot_subject(cell))]


async def only_manifest(plane: Plane, cell: str) -> tuple[SnapshotManifest, StoredMsg]:
    stored = await manifests(plane.publisher, cell)
    assert len(stored) == 1, f"{cell}: {len(stored)} manifests"
    return verify_snapshot_manifest(stored[0].data, plane.state.event_trust, cell=cell), stored[0]


def every_tuple_in_its_cell(plane: Plane, legacy: LegacyPlane, cells: int) -> None:
    held = 0
    for tenant in legacy.index.view().tenants():
        cell = topo.cell_of(tenant, cells)
        assert plane.state.index.index(cell).list(tenant) == legacy.index.list(tenant)
        held += len(legacy.index.list(tenant))
    assert held == legacy.index.count() == plane.state.index.count()


async def test_one_cell_upgrade_keeps_every_tuple_at_the_legacy_sequence_and_runs_once(world: World) -> None:
    legacy = await legacy_layout(world)
    plane = Plane(plane_config(world, 1))
    await plane.start()
    try:
        # c0 *is* the old history: same sequence, same state
        assert plane.state.index.seqs() == {"c0": 7}
        assert plane.state.index.index("c0").digest() == legacy.index.digest()
        every_tuple_in_its_cell(plane, legacy, 1)
        manifest, stored = await only_manifest(plane, "c0")
        assert (manifest.seq, manifest.count, manifest.cell) == (7, legacy.index.count(), "c0")
        assert stored.headers[STREAM_SEQ_HINT] == "7"  # TG_RELATIONS held 7 messages, all legacy
        data = await plane.publisher.get_object(topo.BUCKET_SNAPSHOTS, topo.snapshot_object(7, "c0"),
                                                max_bytes=manifest.size)
        manifest.check(data)

        # a pre-cell plane still running could not write any more: its subject is no longer in the stream
        with pytest.raises(nats.js.errors.NoStreamResponseError):
            await legacy.publish_batch(sign_legacy_batch(world.event_key, ChangeBatch(8, changes(f"{A}/x:1#r@u:1"))))

        # writes continue the sequence
        written = await plane.write_relations(list(changes(f"{A}/project:p9#member@user:zoe")))
        assert (written.seq, written.cell) == (8, "c0")
    finally:
        await plane.stop()
        await legacy.close()

    again = Plane(plane_config(world, 1))
    await again.start()
    try:  # a restart reads the cells as usual and migrates nothing again
        assert again.state.index.seqs() == {"c0": 8}
        assert (await only_manifest(again, "c0"))[0].seq == 7
        done = await carry_legacy_relations(again.publisher, world.event_key, again.state.event_trust, 1)
        assert done is not None and done.done_before and done.legacy_seq == 7 and done.written == ()
    finally:
        await again.stop()


async def test_four_cells_two_replicas_at_once_migrate_once_and_a_sidecar_follows(world: World, tmp_path: Path) -> None:
    legacy = await legacy_layout(world)
    await legacy.close()
    first, second = Plane(plane_config(world, 4)), Plane(plane_config(world, 4))
    await asyncio.gather(first.start(), second.start())
    sidecar: Sidecar | None = None
    feed: Feed | None = None
    try:
        for cell in topo.cell_names(4):  # one manifest per cell, every cell at the legacy sequence, empty c3 too
            manifest, _ = await only_manifest(first, cell)
            assert manifest.seq == 7
        assert (await only_manifest(first, "c3"))[0].count == 0
        for plane in (first, second):
            assert plane.state.index.seqs() == {"c0": 7, "c1": 7, "c2": 7, "c3": 7}
            every_tuple_in_its_cell(plane, legacy, 4)
        assert first.state.index.digest() == second.state.index.digest()
        # a token from before the upgrade (at most 7) is satisfied in every tenant's cell at once
        assert all(first.state.index.seq_of(t) == 7 for t in (A, B, C, "someone-new"))

        written = await first.write_relations(list(changes(f"{B}/project:p9#member@user:zoe")))
        assert (written.seq, written.cell) == (8, "c1")
        await eventually(lambda: second.state.index.seqs() == {"c0": 7, "c1": 8, "c2": 7, "c3": 7}, "replica")

        # a sidecar of the upgraded system bootstraps every cell from its migration snapshot and answers
        await first.bundles.publish(make_bundle(world.bundle_key, 1), admin=True)
        sidecar, feed = await start_sidecar(world, tmp_path / "sc4", cells=4)
        await eventually(lambda: sidecar is not None and sidecar.relations.seqs() == first.state.index.seqs()
                         and sidecar.ready, "sidecar caught up")
        assert sidecar.relations.digest() == first.state.index.digest()
        assert decide(sidecar, "carol", "p1", tenant=C).allow  # through the group, from the snapshot
        assert decide(sidecar, "zoe", "p9", tenant=B).allow  # the write after the migration
        assert not decide(sidecar, "alice", "p2", tenant=A).allow  # deleted before the upgrade
    finally:
        if feed is not None:
            await feed.stop()
        await first.stop()
        await second.stop()


async def test_an_interrupted_migration_completes_without_duplicating(world: World) -> None:
    legacy = await legacy_layout(world)
    await legacy.close()
    # a replica killed after two of four cells: what it left is exactly the migration's snapshots of c0 and c2
    publisher = Publisher(world.nats.url)
    await publisher.connect()
    try:
        await publisher.ensure_topology()
        data = _cell_snapshots(await rebuild_legacy(publisher, world.event_trust()), topo.cell_names(4))
        left = {}
        for cell in ("c0", "c2"):
            manifest = await store_snapshot(publisher, world.event_key, cell, data[cell])
            left[cell] = (await publisher.publish(topo.snapshot_subject(cell), manifest, expected_last_subject_seq=0,
                                                  headers={STREAM_SEQ_HINT: "7"})).stream_seq
    finally:
        await publisher.close()

    plane = Plane(plane_config(world, 4))
    await plane.start()
    try:
        for cell in topo.cell_names(4):
            manifest, stored = await only_manifest(plane, cell)
            assert manifest.seq == 7
            if cell in left:
                assert stored.stream_seq == left[cell]  # kept, not written again
        every_tuple_in_its_cell(plane, legacy, 4)
    finally:
        await plane.stop()


@pytest.mark.parametrize("fault", ["forged", "gap"])
async def test_legacy_batches_that_do_not_verify_stop_the_plane(world: World, fault: str) -> None:
    legacy = await legacy_layout(world)
    if fault == "forged":
        bad = sign_legacy_batch(SigningKey.generate(), ChangeBatch(8, changes(f"{A}/project:p1#owner@user:mallory")))
    else:  # a genuine batch 9 with 8 missing
        bad = sign_legacy_batch(world.event_key, ChangeBatch(9, changes(f"{A}/project:p1#owner@user:mallory")))
    at = await legacy.publish_batch(bad)
    await legacy.close()
    plane = Plane(plane_config(world, 4))
    with pytest.raises(LegacyRelationsInvalid) as refused:
        await plane.start()
    try:
        assert f"message {at}" in refused.value.message and refused.value.detail["stream_seq"] == at
        assert ("event_unknown_key" if fault == "forged" else "gap") in refused.value.message
        for cell in topo.cell_names(4):  # nothing half-migrated
            assert await manifests(plane.publisher, cell) == []
    finally:
        await plane.stop()


async def test_cells_written_without_the_legacy_state_stop_the_plane(world: World) -> None:
    legacy = await legacy_layout(world)
    await legacy.close()
    publisher = Publisher(world.nats.url)
    await publisher.connect()
    try:  # an upgrade that ignored the legacy subject, then took a write into c0
        await publisher.ensure_topology()
        batch = ChangeBatch(1, changes(f"{A}/project:p1#member@user:new"))
        await publisher.publish(topo.relations_subject("c0"), sign_batch(world.event_key, batch, cell="c0"))
    finally:
        await publisher.close()
    plane = Plane(plane_config(world, 1))
    with pytest.raises(LegacyRelationsConflict, match="c0 holds relations batches but no snapshot"):
        await plane.start()
    await plane.stop()


async def test_a_sidecar_upgraded_with_pre_cell_state_loads_the_migration_snapshot(world: World,
                                                                                 tmp_path: Path) -> None:
    legacy = await legacy_layout(world)
    await legacy.close()
    # what the pre-cell sidecar persisted: relations at 5 (of 7) and a position on the old subject
    state_dir = tmp_path / "old-sidecar"
    at_five = await _legacy_index_at(world, 5)
    (state_dir / "feed").mkdir(parents=True)
    write_snapshot(at_five, state_dir / "feed" / "relations.snapshot")
    (state_dir / "feed" / "feed.json").write_text(json.dumps({
        "version": 1, "relations": {"seq": 5, "stream_seq": 6}, "trust_event": None,
        "revocations": {"stream_seq": 0, "events": []}, "bundles": {}}))

    plane = Plane(plane_config(world, 1))
    await plane.start()
    feed: Feed | None = None
    try:
        await plane.bundles.publish(make_bundle(world.bundle_key, 1), admin=True)
        sidecar, feed = await start_sidecar(world, state_dir, cells=1)
        assert sidecar.relations.seqs() == {"c0": 5}  # the old state is c0's state at 5: right data, right seq
        await eventually(lambda: sidecar.relations.seqs() == {"c0": 7} and sidecar.bundle_revision == "1",
                         "sidecar at the migration snapshot")
        assert sidecar.relations.digest() == plane.state.index.digest()
        assert decide(sidecar, "carol", "p5", tenant=C).allow  # legacy batch 7, after the sidecar's old state
        await plane.write_relations(list(changes(f"{A}/project:p6#member@user:erin")))
        await eventually(lambda: decide(sidecar, "erin", "p6", tenant=A).allow, "a write after the upgrade")
        assert sidecar.relations.seqs() == {"c0": 8}
    finally:
        if feed is not None:
            await feed.stop()
        await plane.stop()


async def _legacy_index_at(world: World, seq: int) -> RelationIndex:
    """The pre-cell state at ``seq``, replayed from the stored legacy batches."""
    publisher = Publisher(world.nats.url)
    await publisher.connect()
    index = RelationIndex()
    try:
        async for msg in publisher.subject_history(topo.STREAM_RELATIONS, LEGACY_RELATIONS_SUBJECT):
            batch = batch_from_event(verify_event(msg.data, world.event_trust()))
            if batch.seq <= seq:
                index.apply(batch)
    finally:
        await publisher.close()
    return index


async def start_sidecar(world: World, state_dir: Path, *, cells: int) -> tuple[Sidecar, Feed]:
    plane_pem, bundle_pem = world.root / "plane.pub", world.root / "bundle.pub"
    plane_pem.write_bytes(world.event_key.public_pem())
    bundle_pem.write_bytes(world.bundle_key.public_pem())
    sidecar = Sidecar.from_config(SidecarConfig(service="billing", nats_url=world.nats.url, plane_key=plane_pem,
                                                bundle_keys=(bundle_pem,), state_dir=state_dir, grpc_port=None,
                                                cells=cells))
    feed = Feed.for_sidecar(sidecar, FAST)
    feed.load_persisted()
    await feed.start()
    return sidecar, feed


async def test_followers_wait_only_for_messages_their_filter_takes(world: World) -> None:
    """After the upgrade the stream's last message is a legacy batch no cell follower is ever given:
    a follower replaying the cells from the start (a cell's snapshot unusable) is caught up at once,
    and the watchdog does not see it behind (waiting for the stream's last sequence never ended)."""
    legacy = await legacy_layout(world)
    plane = Plane(plane_config(world, 1))
    await plane.start()
    try:
        assert await plane.publisher.stream_last_seq(topo.STREAM_RELATIONS) == 7  # all legacy
        follower = Follower(plane.publisher, topo.STREAM_RELATIONS, topo.SUBJECT_RELATIONS_ALL,
                            plane.state.apply_relations)
        await follower.start(1)
        try:
            assert await follower.stored_last() == 0
            await follower.wait_for(await follower.stored_last(), timeout=1.0)
            assert follower.observe(await follower.stored_last(), now=0.0) == 0.0

            written = await plane.write_relations(list(changes(f"{A}/project:p9#member@user:zoe")))
            assert written.seq == 8 and await follower.stored_last() == 8  # the 8th message of the stream
            await follower.wait_for(await follower.stored_last(), timeout=5.0)
            assert follower.last_on(topo.relations_subject("c0")) == 8
        finally:
            await follower.stop()
    finally:
        await plane.stop()
        await legacy.close()
