"""Several replicas on one NATS, restarts and snapshots: the plane is stateless over JetStream."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import pytest
from tenantguard.feed import topology as topo
from tenantguard.feed.events import verify_batch, verify_snapshot_manifest
from tenantguard.relations import index_from_snapshot_bytes

from policy_plane.replicamac import BatchSeal
from tests.harness.nats_raw import get_object, read_stream
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]

WRITERS_PER_REPLICA = 4
BATCHES_PER_WRITER = 10


def _write_batches(plane: PlaneProcess, writer: str) -> list[tuple[str, int]]:
    """(object written, consistency token) of each write, in order."""
    http = plane.client()
    tokens = []
    for i in range(BATCHES_PER_WRITER):
        change = {"op": "write", "rel": {"tenant": "acme", "object": f"doc:{writer}-{i}", "relation": "owner",
                                         "subject": f"user:{writer}"}}
        response = http.post("/v1/relations", json={"changes": [change]})
        assert response.status_code == 200, response.text
        tokens.append((f"doc:{writer}-{i}", response.json()["consistency_token"]))
    return tokens


def _digest(plane: PlaneProcess) -> dict[str, object]:
    return plane.client().get("/v1/relations/digest").json()


def test_two_replicas_writing_concurrently_produce_a_gap_free_sequence(world: World) -> None:
    a, b = world.start(), world.start()
    jobs = [(p, f"{name}{w}") for p, name in ((a, "a"), (b, "b")) for w in range(WRITERS_PER_REPLICA)]
    with ThreadPoolExecutor(len(jobs)) as pool:
        results = list(pool.map(lambda job: _write_batches(*job), jobs))
    stored = read_stream(world.nats.url, topo.STREAM_RELATIONS)
    batches = [verify_batch(m.data, world.event_trust()) for m in stored]
    total = len(batches)
    seal = BatchSeal(world.event_key)  # each replica seals what it publishes, for the other to apply unverified
    assert all(seal.open(m.data, m.headers) is not None for m in stored)
    assert [batch.seq for batch in batches] == list(range(1, total + 1))  # gap-free, no duplicates
    objects = [change.rel.object for batch in batches for change in batch.changes]
    assert sorted(objects) == sorted(f"doc:{w}-{i}" for _, w in jobs for i in range(BATCHES_PER_WRITER))
    holder = {change.rel.object: batch.seq for batch in batches for change in batch.changes}
    for writes in results:  # concurrent writes may share a batch: each token is the one holding the write
        assert [token for _, token in writes] == [holder[obj] for obj, _ in writes]
        mine = [token for _, token in writes]
        assert all(x < y for x, y in pairwise(mine))  # one writer's writes: later batches

    for replica in (a, b):
        replica.wait_until(lambda s: s["relations"]["seq"] == total)
    assert _digest(a) == _digest(b)
    # how often the replicas collided depends on scheduling; it is reported, never asserted
    for p in (a, b):
        status = p.status()
        assert status["conflicts"]["relations"] >= status["longest_conflict_streak"] >= 0
        metrics = p.client().get("/metrics").text
        assert f"tg_plane_write_conflict_streak {float(status['longest_conflict_streak'])}" in metrics


def test_restart_rebuilds_the_same_index(world: World) -> None:
    plane = world.start()
    http = plane.client()
    for i in range(5):
        http.post("/v1/relations", json={"changes": [
            {"op": "write", "rel": {"tenant": "acme", "object": f"doc:d{i}", "relation": "viewer",
                                    "subject": "group:eng#member"}},
            {"op": "write", "rel": {"tenant": "globex", "object": "group:eng", "relation": "member",
                                    "subject": f"user:u{i}"}},
        ]}).raise_for_status()
    http.post("/v1/relations", json={"changes": [{"op": "delete", "rel": {
        "tenant": "acme", "object": "doc:d0", "relation": "viewer", "subject": "group:eng#member"}}]})
    before = _digest(plane)
    code, err = plane.stop()
    assert code == 0, err
    again = world.start()
    assert _digest(again) == before
    assert again.status()["relations"]["seq"] == 6


def test_snapshot_is_written_verifies_and_bootstraps_a_new_replica(world: World) -> None:
    plane = world.start("--snapshot-every", "5")
    http = plane.client()
    for i in range(12):
        http.post("/v1/relations", json={"changes": [{"op": "write", "rel": {
            "tenant": "acme", "object": f"doc:d{i}", "relation": "owner", "subject": "user:alice"}}]}
        ).raise_for_status()
    plane.wait_until(lambda s: (s["snapshot"] or {}).get("seq", 0) >= 10)
    # The status shows a snapshot once its manifest is consumed back; the writer removes the older
    # manifest (compaction) only after that, so for a moment the stream holds both (the race behind
    # this test's intermittent failure): wait for the compaction; one manifest is left, the newest.
    deadline = time.monotonic() + 30
    while len(manifests := read_stream(world.nats.url, topo.STREAM_SNAPSHOTS)) != 1:
        assert time.monotonic() < deadline, f"{len(manifests)} manifests left after compaction"
        time.sleep(0.1)
    manifest = verify_snapshot_manifest(manifests[0].data, world.event_trust())
    data = get_object(world.nats.url, topo.BUCKET_SNAPSHOTS, topo.snapshot_object(manifest.seq, manifest.cell))
    manifest.check(data)
    index = index_from_snapshot_bytes(data)
    assert index.applied_seq == manifest.seq and index.count() == manifest.count == manifest.seq
    assert int(manifests[0].headers["Tg-Stream-Seq"]) <= manifest.seq

    before = _digest(plane)
    plane.stop()
    again = world.start("--snapshot-every", "5")
    status = again.status()
    assert status["snapshot"]["seq"] == manifest.seq
    assert status["relations"]["seq"] == 12
    assert _digest(again) == before
