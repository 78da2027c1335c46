"""One Idempotency-Key sent concurrently to two replicas: the write is committed once, every
answer with the first body is that write (replayed or not), and every answer with another
body is 422 ``idempotency_key_reused``, whichever replica won. No timing is asserted: the
requests race as they come, and the invariants must hold for any interleaving."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from tenantguard.feed import topology as topo
from tenantguard.feed.events import REVOCATION, verify_batch, verify_event

from tests.harness.nats_raw import read_stream
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

ROUNDS = 24


def _race(replicas: list[PlaneProcess], path: str, key: str, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    """Send ``bodies[i % len(bodies)]`` with ``key`` to replica ``i % 2``, ROUNDS times at once."""
    clients = [replica.client() for replica in replicas]

    def send(i: int) -> httpx.Response:
        return clients[i % 2].post(path, json=bodies[i % len(bodies)], headers={"Idempotency-Key": key})

    with ThreadPoolExecutor(ROUNDS) as pool:
        return list(pool.map(send, range(ROUNDS)))


def _rel(obj: str) -> dict[str, Any]:
    return {"changes": [{"op": "write", "rel": {"tenant": "acme", "object": obj, "relation": "member",
                                                "subject": "user:alice"}}]}


def test_one_key_racing_at_two_replicas_commits_one_relations_batch(world: World) -> None:
    replicas = [world.start(), world.start()]
    answers = _race(replicas, "/v1/relations", "race-1", [_rel("doc:a"), _rel("doc:b")])
    statuses = {r.status_code for r in answers}
    assert statuses <= {200, 422}, [r.text for r in answers if r.status_code not in (200, 422)]
    ok = [r for r in answers if r.status_code == 200]
    assert ok and len({r.json()["consistency_token"] for r in ok}) == 1
    assert all(r.json()["error"] == "idempotency_key_reused" for r in answers if r.status_code == 422)
    batches = [verify_batch(m.data, world.event_trust()) for m in read_stream(world.nats.url, topo.STREAM_RELATIONS)]
    assert len(batches) == 1 and len(batches[0].changes) == 1
    winner = batches[0].changes[0].rel.object
    for i, answer in enumerate(answers):  # the winner's body was answered 200, the other body 422
        assert answer.status_code == (200 if ("doc:a", "doc:b")[i % 2] == winner else 422), (i, answer.text)


def test_one_key_racing_at_two_replicas_publishes_one_revocation(world: World) -> None:
    replicas = [world.start(), world.start()]
    bodies = [{"kind": "kid", "kid": "kid-a"}, {"kind": "kid", "kid": "kid-b"}]
    answers = _race(replicas, "/v1/revocations", "race-2", bodies)
    assert {r.status_code for r in answers} <= {200, 422}, [r.text for r in answers]
    events = [verify_event(m.data, world.event_trust(), expected_type=REVOCATION)
              for m in read_stream(world.nats.url, topo.STREAM_REVOCATIONS)]
    assert len(events) == 1
    winner = events[0].payload["kid"]
    for i, answer in enumerate(answers):
        want = 200 if bodies[i % 2]["kid"] == winner else 422
        assert answer.status_code == want, (i, answer.text)
        if want == 200:
            assert answer.json()["seq"] == events[0].seq


def _rel_of(tenant: str, obj: str) -> dict[str, Any]:
    return {"changes": [{"op": "write", "rel": {"tenant": tenant, "object": obj, "relation": "member",
                                                "subject": "user:alice"}}]}


def test_one_key_racing_for_two_cells_is_two_keys_each_committed_once(world: World) -> None:
    """An Idempotency-Key is scoped to the tenants its write touches. Unscoped, one key sent at
    once with two bodies for tenants of two cells could commit both (two subjects, two sequences,
    nothing to arbitrate) while the same reuse one after the other was a 422: which one you got
    depended on timing. Scoped, each tenant's write is its own key, committed exactly once
    however the requests race, and a retry of either replays it."""
    replicas = [world.start("--cells", "4"), world.start("--cells", "4")]
    assert (topo.cell_of("acme", 4), topo.cell_of("beta", 4)) == ("c0", "c1")
    bodies = [_rel_of("acme", "doc:a"), _rel_of("beta", "doc:b")]
    answers = _race(replicas, "/v1/relations", "race-cells", bodies)
    assert {r.status_code for r in answers} == {200}, [r.text for r in answers]
    batches = [verify_batch(m.data, world.event_trust()) for m in read_stream(world.nats.url, topo.STREAM_RELATIONS)]
    assert sorted(c.rel.tenant for b in batches for c in b.changes) == ["acme", "beta"]  # each once
    for i, answer in enumerate(answers):
        assert answer.json()["cell"] == ("c0", "c1")[i % 2]
    tokens = {answer.json()["cell"]: answer.json()["consistency_token"] for answer in answers}
    assert len({(a.json()["cell"], a.json()["consistency_token"]) for a in answers}) == 2

    # the same reuse one after the other: the same outcome (no 422 that depended on timing)
    first = replicas[0].client().post("/v1/relations", json=_rel_of("acme", "doc:seq"),
                                      headers={"Idempotency-Key": "seq-cells"})
    second = replicas[1].client().post("/v1/relations", json=_rel_of("beta", "doc:seq"),
                                       headers={"Idempotency-Key": "seq-cells"})
    assert first.status_code == second.status_code == 200, (first.text, second.text)
    assert "Idempotent-Replayed" not in second.headers
    # within one tenant the key still means one write: another body is 422, the same body replays
    other = replicas[1].client().post("/v1/relations", json=_rel_of("acme", "doc:other"),
                                      headers={"Idempotency-Key": "race-cells"})
    assert other.status_code == 422 and other.json()["error"] == "idempotency_key_reused", other.text
    assert other.json()["detail"]["consistency_token"] == tokens["c0"]  # acme's own write, never beta's
    again = replicas[0].client().post("/v1/relations", json=bodies[1], headers={"Idempotency-Key": "race-cells"})
    assert again.status_code == 200 and again.json() == {"consistency_token": tokens["c1"], "cell": "c1"}
    assert again.headers["Idempotent-Replayed"] == "true"
