"""Scoped feeds: a sidecar follows, holds and answers only its tenant cells and object types.

Real nats-server, the test plane publishing per-cell subjects (``tg.relations.changes.<cell>``),
in-process sidecars with their real feed. Questions outside the scope are denied
``out_of_scope`` at every door; events of one cell replayed onto another are refused.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from tenantguard.bundle import build_bundle
from tenantguard.dev.natsserver import NatsServer
from tenantguard.exchange import ExchangeError, ExchangeRequest, Subject
from tenantguard.feed import topology
from tenantguard.feed.events import sign_batch, sign_snapshot_manifest
from tenantguard.identity.keys import SigningKey, TrustedKey
from tenantguard.identity.tokens import mint
from tenantguard.relations import ChangeBatch, RelationChange, Relationship, snapshot_bytes

from authz_sidecar.app import create_app
from authz_sidecar.envoy_authz import EnvoyRequest, authorize
from tests.harness.fleet import Fleet, decide, eventually, make_bundle, question, rejected
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]

CELLS = 2
T0 = next(f"t{i}" for i in range(100) if topology.cell_of(f"t{i}", CELLS) == "c0")
T1 = next(f"t{i}" for i in range(100) if topology.cell_of(f"t{i}", CELLS) == "c1")


@pytest.fixture
async def cplane(nats_server: NatsServer, plane_key: SigningKey, bundle_key: SigningKey) -> AsyncIterator[TestPlane]:
    """A two-cell test plane with bundle 1 announced."""
    publisher = await TestPlane.connect(nats_server.url, plane_key, cells=CELLS)
    await publisher.create_topology()
    await publisher.bundle(make_bundle(bundle_key, 1), "1")
    yield publisher
    await publisher.close()


def applied(node: Any, kind: str = "relations") -> float:
    return node.sidecar.metrics.registry.get_sample_value("tg_events_applied_total", {"kind": kind}) or 0.0


async def test_a_sidecar_scoped_to_one_cell_never_holds_the_other_and_denies_it_at_every_door(
    cplane: TestPlane, fleet: Fleet
) -> None:
    node = await fleet.start("c0-only", cells=CELLS, scope_cells=("c0",))
    await cplane.write(f"{T0}/project:p1#member@user:alice")
    await cplane.write(f"{T1}/project:p1#member@user:bob")
    await cplane.write(f"{T1}/project:p2#member@user:bob")
    await cplane.heartbeat()
    sidecar = node.sidecar
    await eventually(lambda: sidecar.relations.seq_of(T0) == 1 and sidecar.ready, "c0 applied, ready")

    # holds and follows c0 alone: c1's batches are never delivered (no consumer on its subject)
    assert set(sidecar.relations.indexes) == {"c0"} and list(node.feed.cells) == ["c0"]
    assert sidecar.relations.count() == 1 and applied(node) == 1
    assert sidecar.status()["relations"]["scope_cells"] == ["c0"]
    assert sidecar.status()["relations"]["cell_seqs"] == {"c0": 1}

    # the core (native check, in process)
    assert decide(sidecar, "alice", "p1", tenant=T0).allow
    assert decide(sidecar, "bob", "p1", tenant=T1).reasons == ("out_of_scope",)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(sidecar)),
                                 base_url="http://sidecar") as client:
        native = (await client.post("/v1/check", json=question("bob", "p1", tenant=T1))).json()
        assert native["allow"] is False and native["reasons"] == ["out_of_scope"]
        one = (await client.post("/access/v1/evaluation", json=question("bob", "p1", tenant=T1))).json()
        assert one["decision"] is False and "out_of_scope" in json.dumps(one)
        many = (await client.post("/access/v1/evaluations", json={"evaluations": [
            question("alice", "p1", tenant=T0), question("bob", "p1", tenant=T1)],
            "options": {"tenantguard_context": True}})).json()
        assert [e["decision"] for e in many["evaluations"]] == [True, False]
        assert "out_of_scope" in json.dumps(many["evaluations"][1])
        opa = await client.post("/v1/data/feedtest/decision", json={"input": question("bob", "p1", tenant=T1)})
        assert opa.json()["result"]["allow"] is False and "out_of_scope" in opa.text
        search = await client.post("/access/v1/search/resource", json={
            "subject": {"type": "user", "id": "bob", "properties": {"tenant_id": T1}},
            "action": {"name": "read"}, "resource": {"type": "project"}})
        assert search.status_code == 403 and search.json()["error"] == "out_of_scope"
        allowed = await client.post("/access/v1/search/resource", json={
            "subject": {"type": "user", "id": "alice", "properties": {"tenant_id": T0}},
            "action": {"name": "read"}, "resource": {"type": "project"}})
        assert allowed.status_code == 200 and allowed.json()["results"] == [{"type": "project", "id": "p1"}]

    # Envoy (both Envoy doors share this mapping) and token exchange, with a context token
    edge = SigningKey.generate("EdDSA")
    sidecar.trust.add(TrustedKey.of(edge.public_key, "edge"))
    tok = mint(edge, issuer="edge", sub="bob", tenant_id=T1, audience="billing")
    outcome = authorize(sidecar, EnvoyRequest("GET", f"/tenants/{T1}/orders", {"authorization": (f"Bearer {tok}",)}))
    assert not outcome.allow and outcome.body["reasons"] == ["out_of_scope"]
    subject = Subject(sub="bob", tenant_id=T1, roles=(), scope=(), exp=time.time() + 60)
    with pytest.raises(ExchangeError) as refused:
        sidecar.exchange.exchange_subject(subject, ExchangeRequest(tok, "urn:ietf:params:oauth:token-type:jwt",
                                                                    "orders"))
    assert refused.value.reason == "out_of_scope"


async def test_scope_types_drop_other_types_at_apply_and_snapshot_and_deny_them(
    plane: TestPlane, fleet: Fleet, bundle_key: SigningKey
) -> None:
    await plane.write("acme/project:p1#member@user:alice", "acme/document:d1#viewer@user:alice",
                      "acme/group:eng#member@user:bob")
    live = await fleet.start("billing-types", scope_types=("project", "group"))
    await eventually(lambda: live.sidecar.relations.applied_seq == 1 and live.sidecar.bundle_revision == "1", "seq 1")
    assert live.sidecar.relations.count() == 2  # the document tuple was dropped at apply
    assert decide(live.sidecar, "alice", "p1").allow
    doc = {**question("alice", "d1"), "resource": {"type": "document", "id": "d1"}}
    assert live.sidecar.decide(doc, None, door="test").reasons == ("out_of_scope",)

    await plane.snapshot()
    cold = await fleet.start("billing-types-snapshot", scope_types=("project", "group"))  # bootstraps from it
    await eventually(lambda: cold.sidecar.relations.applied_seq == 1, "snapshot loaded")
    assert cold.sidecar.relations.count() == 2
    assert node_list(cold) == [("group:eng", "user:bob"), ("project:p1", "user:alice")]

    # a policy asking tg.related about a type out of scope is denied out_of_scope, not "false"
    policy = """package feedtest

import rego.v1

default decision := {"allow": false, "reasons": ["not_a_viewer"]}

decision := {"allow": true, "reasons": []} if {
	tg.related("document:d1", "viewer", sprintf("user:%s", [input.subject.id]))
}
"""
    manifest = {"revision": "2", "roots": ["feedtest"], "metadata": {"decision": "data.feedtest.decision"}}
    await plane.bundle(build_bundle({".manifest": json.dumps(manifest), "policy.rego": policy}, "2",
                                    signing_key=bundle_key, serial=2), "2")
    await eventually(lambda: live.sidecar.bundle_revision == "2", "bundle 2")
    assert decide(live.sidecar, "alice", "p1").reasons == ("out_of_scope",)


def node_list(node: Any) -> list[tuple[str, str]]:
    return [(r.object, r.subject) for r in node.sidecar.relations.list("acme")]


async def test_a_cell_count_other_than_the_planes_keeps_the_sidecar_not_ready(
    cplane: TestPlane, fleet: Fleet
) -> None:
    node = await fleet.start("wrong-cells", cells=3)
    await eventually(lambda: node.sidecar.core.ready, "bundle active")
    await cplane.heartbeat()
    await eventually(lambda: node.sidecar.readiness.scope_problem is not None, "mismatch noticed")
    assert not node.sidecar.ready
    reason = node.sidecar.readiness.reason() or ""
    assert "3 cells" in reason and "runs 2" in reason
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(node.sidecar)),
                                 base_url="http://sidecar") as client:
        ready = await client.get("/ready")
        assert ready.status_code == 503 and "runs 2" in ready.json()["message"]


async def test_a_batch_or_snapshot_of_one_cell_replayed_onto_another_is_refused(
    cplane: TestPlane, fleet: Fleet, plane_key: SigningKey
) -> None:
    node = await fleet.start("both", cells=CELLS)
    await cplane.write(f"{T0}/project:p1#member@user:alice")
    await cplane.write(f"{T1}/project:p1#member@user:bob")
    await eventually(lambda: node.sidecar.relations.seqs() == {"c0": 1, "c1": 1}, "both cells at 1")

    # a genuine c1 batch with seq 2 (the next seq c0 expects), replayed onto c0's subject
    grant = ChangeBatch(2, (RelationChange("write", Relationship.parse(f"{T0}/project:p1#member@user:mallory")),))
    await cplane.raw(topology.relations_subject("c0"), sign_batch(plane_key, grant, cell="c1"))
    await eventually(lambda: rejected(node.sidecar, "event_wrong_cell") >= 1, "refused as another cell's")
    assert node.sidecar.relations.seqs() == {"c0": 1, "c1": 1}
    assert not decide(node.sidecar, "mallory", "p1", tenant=T0).allow

    # a genuine c1 snapshot (higher seq) announced on c0's manifest subject: a fresh sidecar refuses it
    await cplane.write(f"{T1}/project:p2#member@user:bob")
    await cplane.write(f"{T1}/project:p3#member@user:bob")
    c1 = cplane.indexes["c1"]
    data = snapshot_bytes(c1)
    store = await cplane.js.object_store(topology.BUCKET_SNAPSHOTS)
    await store.put(topology.snapshot_object(c1.applied_seq, "c0"), data)
    await cplane.raw(topology.snapshot_subject("c0"), sign_snapshot_manifest(plane_key, data, cell="c1"))
    fresh = await fleet.start("fresh", cells=CELLS)
    await eventually(lambda: fresh.sidecar.relations.index("c0").digest() == cplane.digest("c0")
                     and fresh.sidecar.relations.index("c1").digest() == cplane.digest("c1"), "both cells right")
    assert rejected(fresh.sidecar, "event_wrong_cell") >= 1


async def test_cold_start_restores_every_cell_from_persisted_state(
    cplane: TestPlane, fleet: Fleet, nats_server: NatsServer
) -> None:
    node = await fleet.start("cold", cells=CELLS)
    for i in range(3):
        await cplane.write(f"{T0}/project:p{i}#member@user:alice")
    await cplane.write(f"{T1}/project:p1#member@user:bob")
    await eventually(lambda: node.sidecar.relations.seqs() == {"c0": 3, "c1": 1}
                     and node.sidecar.bundle_revision == "1", "caught up")
    await fleet.stop(node)  # persists every cell on shutdown
    assert (node.state_dir / "feed" / "relations.snapshot").is_file()
    assert (node.state_dir / "feed" / "relations.c1.snapshot").is_file()
    await cplane.close()
    nats_server.kill()

    again = await fleet.start("cold", cells=CELLS)
    assert again.sidecar.relations.seqs() == {"c0": 3, "c1": 1}  # before any connection could succeed
    assert again.sidecar.relations.index("c1").digest() == cplane.digest("c1")
    assert again.sidecar.readiness.cells_bootstrapped == {"c0", "c1"}  # every cell bootstrapped from disk
    # ...but a restart never decides before its revocations are replayed from the live stream,
    # and NATS is down: not ready for that reason alone, every decision denied
    assert not again.sidecar.ready
    assert again.sidecar.readiness.reason_code() == "revocations_not_synced"
    assert decide(again.sidecar, "bob", "p1", tenant=T1).reasons == ("revocations_not_synced",)

    # the same state dir under another type scope is not believed (it may lack what is now in scope)
    await fleet.stop(again)
    other = await fleet.start("cold", cells=CELLS, scope_types=("project",))
    assert other.sidecar.relations.seqs() == {"c0": 0, "c1": 0} and not other.sidecar.ready


async def test_at_least_waits_for_the_cell_of_the_tenant_asked_about(cplane: TestPlane, fleet: Fleet) -> None:
    node = await fleet.start("tokens", cells=CELLS)
    for i in range(3):
        await cplane.write(f"{T0}/project:p{i}#member@user:alice")
    await cplane.write(f"{T1}/project:p1#member@user:bob")
    await eventually(lambda: node.sidecar.relations.seqs() == {"c0": 3, "c1": 1}, "caught up")
    assert await node.sidecar.wait_for_seq(1, T1)
    assert not await node.sidecar.wait_for_seq(2, T1)  # c1 is at 1, whatever c0's sequence
    assert await node.sidecar.wait_for_seq(3, T0)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(node.sidecar)),
                                 base_url="http://sidecar") as client:
        stale = (await client.post("/v1/check", json={**question("bob", "p1", tenant=T1), "at_least": 2})).json()
        assert stale["reasons"] == ["relations_stale"] and stale["relations_seq"] == 1
        fresh = (await client.post("/v1/check", json={**question("bob", "p1", tenant=T1), "at_least": 1})).json()
        assert fresh["allow"] is True and fresh["relations_seq"] == 1
        # a search's consistency token is the asked tenant's cell sequence (c0 at 3, c1 at 1), never their sum
        lookup = await client.post("/v1/lookup/resources", json={
            "subject": {"type": "user", "id": "bob", "properties": {"tenant_id": T1}},
            "action": {"name": "read"}, "resource": {"type": "project"}})
        assert lookup.status_code == 200 and lookup.json()["relations_seq"] == 1, lookup.json()


async def test_a_refusal_before_the_policy_reports_the_cell_sequence_of_its_tenant(cplane: TestPlane,
                                                                                   fleet: Fleet) -> None:
    """A sidecar serving one tenant (``--tenant``) refuses a question naming another before the
    core; the sequence in that deny is its own tenant's cell's, as a decision's would be, never
    the sum over the cells (which no consistency token from the plane could be compared with)."""
    node = await fleet.start("served", cells=CELLS, tenant=T1)
    for i in range(3):
        await cplane.write(f"{T0}/project:p{i}#member@user:alice")
    await cplane.write(f"{T1}/project:p1#member@user:bob")
    await eventually(lambda: node.sidecar.relations.seqs() == {"c0": 3, "c1": 1}
                     and node.sidecar.bundle_revision == "1", "caught up")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(node.sidecar)),
                                 base_url="http://sidecar") as client:
        refused = (await client.post("/v1/check", json=question("alice", "p1", tenant=T0))).json()
        assert refused["allow"] is False and refused["reasons"] == ["tenant_mismatch"]
        assert refused["relations_seq"] == 1  # T1's cell (c1), not c0's 3 nor the sum 4
        allowed = (await client.post("/v1/check", json=question("bob", "p1", tenant=T1))).json()
        assert allowed["allow"] is True and allowed["relations_seq"] == 1, allowed
    # the aggregate shows progress (the sum only grows) and is named as no token (docs/scoped-feeds.md)
    status = node.sidecar.status()
    assert (status["relations_seq"], status["relations"]["cell_seqs"]) == (4, {"c0": 3, "c1": 1})
    assert node.sidecar.metrics.registry.get_sample_value("tg_relations_seq") == 4
