"""Expired tuples are deleted by the plane, through the ordered stream, and never a renewed one.

The selection is tested on a real index (a renewal between the scan and the batch is the race
the design rules out), then two real plane replicas on a real nats-server purge the same cell.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest
from tenantguard.feed import topology as topo
from tenantguard.feed.events import verify_batch
from tenantguard.relations import ChangeBatch, RelationChange, Relationship
from tenantguard.relations.index import RelationIndex
from tenantguard.relations.reads import TupleMeta

from policy_plane.purge import scan, still_expired
from tests.harness.nats_raw import read_stream
from tests.harness.plane_world import World


def _write(index: RelationIndex, seq: int, *rels: Relationship) -> None:
    index.apply(ChangeBatch(seq, tuple(RelationChange("write", r) for r in rels)))


def _rel(obj: str, expires_at: float | None = None, tenant: str = "acme") -> Relationship:
    meta = None if expires_at is None else TupleMeta(expires_at=expires_at)
    return Relationship(tenant, obj, "viewer", "user:anne", meta)


def test_the_scan_finds_what_expired_before_the_cutoff_and_nothing_else() -> None:
    index = RelationIndex()
    _write(index, 1, _rel("doc:old", 100.0), _rel("doc:edge", 200.0), _rel("doc:new", 300.0), _rel("doc:plain"),
           Relationship("acme", "doc:cond", "viewer", "user:anne", TupleMeta("ip_ok")),
           _rel("doc:other", 50.0, tenant="globex"))
    found = asyncio.run(scan(index.view(), 200.0))
    assert sorted((e.tenant, e.object) for e in found) == [("acme", "doc:edge"), ("acme", "doc:old"),
                                                           ("globex", "doc:other")]
    assert len(asyncio.run(scan(index.view(), 200.0, limit=2))) == 2


def test_a_tuple_renewed_or_deleted_after_the_scan_is_left_alone() -> None:
    index = RelationIndex()
    _write(index, 1, _rel("doc:renewed", 100.0), _rel("doc:gone", 100.0), _rel("doc:kept", 100.0),
           _rel("doc:unexpired", 100.0))
    candidates = asyncio.run(scan(index.view(), 150.0))
    assert len(candidates) == 4
    # between the scan and the batch: one tuple renewed, one deleted, one rewritten without expiry
    _write(index, 2, _rel("doc:renewed", 10_000.0), _rel("doc:unexpired"))
    index.apply(ChangeBatch(3, (RelationChange("delete", _rel("doc:gone")),)))
    chosen = still_expired(index, candidates)
    assert [c.rel.object for c in chosen] == ["doc:kept"]
    assert all(c.op == "delete" and c.rel.meta is None for c in chosen)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.mark.nats
@pytest.mark.timeout(90)
def test_two_replicas_delete_an_expired_tuple_once_and_keep_the_rest(world: World) -> None:
    planes = [world.start("--purge-seconds", "0.2", "--purge-grace", "0") for _ in range(2)]
    http = planes[0].client()
    soon = time.time() + 2.0

    def rel(obj: str, **extra: object) -> dict[str, object]:
        return {"tenant": "acme", "object": obj, "relation": "viewer", "subject": "user:anne", **extra}

    written = http.post("/v1/relations", json={"changes": [
        {"op": "write", "rel": rel("doc:expiring", expires_at=_iso(soon))},
        {"op": "write", "rel": rel("doc:renewed", expires_at=_iso(soon))},
        {"op": "write", "rel": rel("doc:later", expires_at="2099-01-01T00:00:00Z")},
        {"op": "write", "rel": rel("doc:plain")},
    ]})
    assert written.status_code == 200, written.text
    renewed = http.post("/v1/relations", json={"changes": [
        {"op": "write", "rel": rel("doc:renewed", expires_at="2099-01-01T00:00:00Z")}]})
    assert renewed.status_code == 200, renewed.text
    assert time.time() < soon, "the writes took longer than the expiry they were meant to beat"

    def objects(plane_index: int) -> list[str]:
        listed = planes[plane_index].client().get("/v1/relations", params={"tenant": "acme"}).json()["relations"]
        return sorted(r["object"] for r in listed)

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any("doc:expiring" in objects(i) for i in (0, 1)):
        time.sleep(0.1)
    assert objects(0) == objects(1) == ["doc:later", "doc:plain", "doc:renewed"]

    batches = [verify_batch(m.data, world.event_trust()) for m in read_stream(world.nats.url, topo.STREAM_RELATIONS)]
    deletes = [c.rel.object for b in batches for c in b.changes if c.op == "delete"]
    assert deletes == ["doc:expiring"]  # once, though both replicas purge the cell
    assert [b.seq for b in batches] == list(range(1, len(batches) + 1))
    metrics = sum(float(line.split()[-1]) for p in planes
                  for line in p.client().get("/metrics").text.splitlines()
                  if line.startswith("tg_plane_expired_purged_total"))
    assert metrics == 1.0
