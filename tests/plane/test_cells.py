"""Tenant cells on the plane: one subject, sequence and snapshot history per cell (real NATS, real plane)."""

from __future__ import annotations

import asyncio

import nats
import pytest
from nats.js.api import StreamConfig
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import topology as topo
from tenantguard.feed.events import verify_batch, verify_event, verify_snapshot_manifest
from tenantguard.feed.freshness import Heartbeat

from policy_plane.publisher import Publisher
from tests.harness.nats_raw import get_object, next_core_message, read_stream
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]

CELLS = 2


def tenants_in(cell: str, n: int = 2) -> list[str]:
    """The first ``n`` tenants named t0, t1, ... that hash into ``cell`` of a two-cell system."""
    found = [f"t{i}" for i in range(200) if topo.cell_of(f"t{i}", CELLS) == cell]
    return found[:n]


def change(tenant: str, obj: str = "project:p1", subject: str = "user:alice", op: str = "write") -> dict[str, object]:
    return {"op": op, "rel": {"tenant": tenant, "object": obj, "relation": "member", "subject": subject}}


def test_cell_of_is_stable_and_spreads() -> None:
    assert topo.cell_of("acme", 1) == "c0"
    assert topo.cell_of("acme", 100) == topo.cell_of("acme", 100)  # a pure function of the name
    # k = first 8 bytes of SHA-256, big-endian, mod cells (the contract a cell router implements)
    import hashlib
    assert topo.cell_of("acme", 100) == f"c{int.from_bytes(hashlib.sha256(b'acme').digest()[:8], 'big') % 100}"
    spread = {topo.cell_of(f"tenant-{i}", 10) for i in range(500)}
    assert spread == set(topo.cell_names(10))


def test_writes_to_two_cells_land_on_two_subjects_with_independent_sequences(world: World) -> None:
    plane = world.start("--cells", str(CELLS), "--snapshot-every", "2")
    http = plane.client()
    (a0, b0), (a1, _) = tenants_in("c0"), tenants_in("c1")
    first = http.post("/v1/relations", json={"changes": [change(a0)]})
    assert first.json() == {"consistency_token": 1, "cell": "c0"}
    other = http.post("/v1/relations", json={"changes": [change(a1)]})
    assert other.json() == {"consistency_token": 1, "cell": "c1"}  # its own sequence, not 2
    second = http.post("/v1/relations", json={"changes": [change(b0), change(a0, "project:p2")]})
    assert second.json() == {"consistency_token": 2, "cell": "c0"}

    stored = read_stream(world.nats.url, topo.STREAM_RELATIONS)
    by_subject: dict[str, list[int]] = {}
    for msg in stored:
        cell = msg.subject.rsplit(".", 1)[-1]
        by_subject.setdefault(msg.subject, []).append(verify_batch(msg.data, world.event_trust(), cell=cell).seq)
    assert by_subject == {topo.relations_subject("c0"): [1, 2], topo.relations_subject("c1"): [1]}

    # reads with at_least compare against the tenant's cell: c1 is at 1, c0 at 2
    assert http.get("/v1/relations/check", params={"tenant": a1, "object": "project:p1", "relation": "member",
                                                    "subject": "user:alice", "at_least": 1}).json() == \
        {"allowed": True, "consistency_token": 1}
    assert http.get("/v1/relations/check", params={"tenant": a1, "object": "project:p1", "relation": "member",
                                                    "subject": "user:alice", "at_least": 2}).status_code == 503
    listed = http.get("/v1/relations", params={"tenant": a0, "at_least": 2}).json()
    assert listed["consistency_token"] == 2 and len(listed["relations"]) == 2

    # snapshots per cell (only cells that changed enough), objects relations/<cell>/<seq>, manifests bound to the cell
    status = plane.wait_until(lambda s: (s["cells"]["c0"]["snapshot_seq"] or 0) >= 2)
    assert status["cells"]["c1"]["count"] == 1 and status["relations"]["cells"] == CELLS
    manifests = read_stream(world.nats.url, topo.STREAM_SNAPSHOTS)
    c0 = [m for m in manifests if m.subject == topo.snapshot_subject("c0")]
    manifest = verify_snapshot_manifest(c0[-1].data, world.event_trust(), cell="c0")
    manifest.check(get_object(world.nats.url, topo.BUCKET_SNAPSHOTS, topo.snapshot_object(manifest.seq, "c0")))

    # the signed heartbeat names every cell's newest sequence and the cell count
    beat = Heartbeat.from_event(verify_event(next_core_message(world.nats.url, topo.SUBJECT_HEARTBEAT),
                                             world.event_trust()))
    assert beat.cells == CELLS and beat.relations == {"c0": 2, "c1": 1}

    # a restarted replica rebuilds every cell (snapshot of c0, stream of c1)
    plane.stop()
    again = world.start("--cells", str(CELLS))
    assert again.status()["cells"]["c0"]["seq"] == 2 and again.status()["cells"]["c1"]["seq"] == 1


def test_a_batch_across_cells_is_refused_and_one_cell_changes_nothing(world: World) -> None:
    plane = world.start("--cells", str(CELLS))
    http = plane.client()
    a0, a1 = tenants_in("c0")[0], tenants_in("c1")[0]
    mixed = http.post("/v1/relations", json={"changes": [change(a0), change(a1)]})
    assert mixed.status_code == 422
    body = mixed.json()
    assert body["error"] == "cells_mixed" and body["detail"]["cells"] == ["c0", "c1"]
    assert read_stream(world.nats.url, topo.STREAM_RELATIONS) == []


def test_one_cell_batches_of_any_tenants_are_fine(world: World) -> None:
    plane = world.start()  # cells = 1: every tenant in c0, as before
    http = plane.client()
    a0, a1 = tenants_in("c0")[0], tenants_in("c1")[0]
    assert http.post("/v1/relations", json={"changes": [change(a0), change(a1)]}).json() == \
        {"consistency_token": 1, "cell": "c0"}


async def test_ensure_topology_updates_an_existing_streams_subjects(tmp_path: object) -> None:
    with NatsServer(tmp_path / "nats") as server:  # type: ignore[operator]
        nc = await nats.connect(server.url)
        js = nc.jetstream(timeout=5)
        await js.add_stream(StreamConfig(name=topo.STREAM_RELATIONS, subjects=["tg.relations.changes"]))
        await js.add_stream(StreamConfig(name=topo.STREAM_SNAPSHOTS, subjects=["tg.snapshots.relations"]))
        publisher = Publisher(server.url, connect_timeout=2, request_timeout=5, relations_max_age=3600, replicas=1,
                              name="test")
        await publisher.connect()
        try:
            await publisher.ensure_topology()
            assert (await js.stream_info(topo.STREAM_RELATIONS)).config.subjects == [topo.SUBJECT_RELATIONS_ALL]
            assert (await js.stream_info(topo.STREAM_SNAPSHOTS)).config.subjects == [topo.SUBJECT_SNAPSHOTS_ALL]
        finally:
            await publisher.close()
            await nc.close()
        await asyncio.sleep(0)
