"""Consistency tokens (``at_least``) as an attacker sends them: another cell's, another tenant's,
far-future, negative, huge, non-canonical. Expected: a typed 400, or a bounded wait then a
fail-closed ``relations_stale`` deny; never an answer from data older than the token promised.

Real nats-server, the test plane publishing two cells, an in-process sidecar with its real
feed, asked through its real HTTP app (the hot doors and the routes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import topology
from tenantguard.identity.keys import SigningKey

from authz_sidecar.app import create_app
from tests.harness.fleet import Fleet, eventually, make_bundle
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]

CELLS = 2
T0 = next(f"t{i}" for i in range(100) if topology.cell_of(f"t{i}", CELLS) == "c0")
T1 = next(f"t{i}" for i in range(100) if topology.cell_of(f"t{i}", CELLS) == "c1")


@pytest.fixture
async def cplane(nats_server: NatsServer, plane_key: SigningKey, bundle_key: SigningKey) -> AsyncIterator[TestPlane]:
    publisher = await TestPlane.connect(nats_server.url, plane_key, cells=CELLS)
    await publisher.create_topology()
    await publisher.bundle(make_bundle(bundle_key, 1), "1")
    yield publisher
    await publisher.close()


async def _two_cells(cplane: TestPlane) -> tuple[int, int]:
    """T0's cell at 1, T1's cell at 4: T1's tokens are numbers T0's cell has not reached."""
    t0 = await cplane.write(f"{T0}/project:p1#member@user:alice")
    t1 = 0
    for i in range(4):
        t1 = await cplane.write(f"{T1}/project:q{i}#member@user:alice")
    return t0, t1


def _check(user: str, tenant: str | None, at_least: Any, *, resource_tenant: str | None = None) -> dict[str, Any]:
    subject: dict[str, Any] = {"type": "user", "id": user}
    if tenant is not None:
        subject["properties"] = {"tenant_id": tenant}
    resource: dict[str, Any] = {"type": "project", "id": "p1"}
    if resource_tenant is not None:
        resource["properties"] = {"tenant_id": resource_tenant}
    return {"subject": subject, "action": {"name": "read"}, "resource": resource, "at_least": at_least}


async def test_a_token_of_another_cell_never_buys_an_answer_older_than_it_promises(
        cplane: TestPlane, fleet: Fleet) -> None:
    """T1's token (4) is a number of T1's cell; asked about T0 (cell at 1) it must wait for T0's
    cell, then deny relations_stale. The bound-tenant variant was the hole: with ``--tenant``
    and a body naming only the resource's tenant, the native door waited in the RESOURCE's
    cell (already at 4) and answered at once from T0's relations at seq 1."""
    node = await fleet.start("cells", cells=CELLS, max_wait_ms=200)
    bound = await fleet.start("bound", cells=CELLS, max_wait_ms=200, tenant=T0)
    t0, t1 = await _two_cells(cplane)
    for n in (node, bound):
        await eventually(lambda n=n: n.sidecar.relations.seqs() == {"c0": t0, "c1": t1} and n.sidecar.ready,
                         "both cells applied, bundle active")
    assert (t0, t1) == (1, 4)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(node.sidecar)),
                                 base_url="http://sidecar") as client:
        fine = (await client.post("/v1/check", json=_check("alice", T0, t0))).json()
        assert fine["allow"] is True and fine["relations_seq"] == t0
        other_cell = (await client.post("/v1/check", json=_check("alice", T0, t1))).json()
        assert other_cell["allow"] is False and other_cell["reasons"] == ["relations_stale"], other_cell
        assert other_cell["relations_seq"] == t0  # says what it had
        # the resource naming T1 (whose cell is at 4) changes nothing: the decision reads T0's relations
        crossed = (await client.post("/v1/check", json=_check("alice", T0, t1, resource_tenant=T1))).json()
        assert crossed["reasons"] == ["relations_stale"], crossed

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(bound.sidecar)),
                                 base_url="http://sidecar") as client:
        answer = (await client.post("/v1/check", json=_check("alice", None, t1, resource_tenant=T1))).json()
        assert answer["reasons"] == ["relations_stale"], answer  # was tenant_mismatch at relations_seq 1 < 4
        assert answer["relations_seq"] == t0
        ok = (await client.post("/v1/check", json=_check("alice", None, t0))).json()
        assert ok["allow"] is True


FAR = 10**15  # a JSON integer no cell will reach


def _asked(tenant: str, value: Any) -> dict[str, dict[str, Any]]:
    """The same question, with ``at_least``, at every door that decides or lists."""
    subject = {"type": "user", "id": "alice", "properties": {"tenant_id": tenant}}
    one = {"subject": subject, "action": {"name": "read"}, "resource": {"type": "project", "id": "p1"}}
    listed = {"subject": subject, "action": {"name": "read"}, "resource": {"type": "project"}}
    return {
        "/v1/check": {**one, "at_least": value},
        "/access/v1/evaluation": {**one, "at_least": value},
        "/access/v1/evaluations": {"subject": subject, "action": {"name": "read"}, "at_least": value,
                                   "evaluations": [{"resource": {"type": "project", "id": "p1"}}],
                                   "options": {"tenantguard_context": True}},
        "/access/v1/search/resource": {**listed, "at_least": value},
        "/access/v1/search/action": {"subject": subject, "resource": {"type": "project", "id": "p1"},
                                     "at_least": value},
        "/v1/lookup/resources": {**listed, "at_least": value},
    }


def _allowed(path: str, answer: httpx.Response) -> bool:
    body = answer.json()
    if path == "/v1/check":
        return bool(body["allow"])
    if path == "/access/v1/evaluation":
        return bool(body["decision"])
    if path == "/access/v1/evaluations":
        return all(e["decision"] for e in body["evaluations"])
    return bool(body["results"])


def _stale(path: str, answer: httpx.Response) -> bool:
    body = answer.json()
    if path == "/v1/check":
        return answer.status_code == 200 and body["reasons"] == ["relations_stale"]
    if path == "/access/v1/evaluation":
        return answer.status_code == 200 and body["context"]["reasons"] == ["relations_stale"]
    if path == "/access/v1/evaluations":
        return answer.status_code == 200 and [e["context"]["reasons"] for e in body["evaluations"]] == [
            ["relations_stale"]]
    return answer.status_code == 409 and body["error"] == "relations_stale"


@pytest.mark.parametrize("value", [0, FAR, -1, 1.5, "1", True, 2**63, 10**30, "0x1", [1], {"seq": 1}])
async def test_every_door_honours_at_least_or_refuses_it(cplane: TestPlane, fleet: Fleet, value: Any) -> None:
    """The AuthZEN doors (evaluation, evaluations, search) ignored ``at_least`` (an unknown
    member): a PEP asking for its own write got an answer from whatever state was held, and the
    searches read ``-1`` or ``true`` as nothing at all. The native check read ``true`` as 1 and
    ``"1"`` as 1. Now: a JSON integer is waited for at every door, anything else is a 400."""
    node = await fleet.start("odd", cells=CELLS, max_wait_ms=100)
    t0, _ = await _two_cells(cplane)
    await eventually(lambda: node.sidecar.relations.seq_of(T0) == t0 and node.sidecar.ready,
                     "T0's cell applied, bundle active")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(node.sidecar)),
                                 base_url="http://sidecar") as client:
        for path, body in _asked(T0, value).items():
            answer = await client.post(path, json=body)
            if value == 0 and path == "/access/v1/search/action":  # this bundle lists no search_actions
                assert answer.json()["error"] == "search_not_supported", answer.text
            elif value == 0:  # a token every state satisfies
                assert answer.status_code == 200 and _allowed(path, answer), (path, answer.text)
            elif value == FAR:  # a bounded wait, then fail closed: never an answer from an older state
                assert _stale(path, answer), (path, answer.text)
            else:
                assert answer.status_code == 400, (path, answer.text)
                assert answer.json()["error"] in ("invalid_request", "json_not_interoperable"), (path, answer.text)
