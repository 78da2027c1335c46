"""Single writer per cell: real replicas hand writes to the cell's writer over signed NATS messages."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from typing import Any

import pytest
from tenantguard import topology as topo
from tenantguard.events import EventMalformed, verify_batch
from tenantguard.keys import SigningKey
from tenantguard.relations import RelationChange

from policy_plane.forwarding.wire import ForwardRequest, Write, channel_key, sign_request, verify_reply
from policy_plane.writer import Written

from .conftest import World
from .process import PlaneProcess, publish_core, read_stream, request_core

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]


def _change(obj: str, subject: str = "user:ann", op: str = "write") -> dict[str, Any]:
    return {"op": op, "rel": {"tenant": "acme", "object": obj, "relation": "owner", "subject": subject}}


def _pair(world: World, *extra: str) -> tuple[PlaneProcess, PlaneProcess]:
    """Two replicas that have heard each other; (writer of the one cell, the other one)."""
    a, b = world.start(*extra), world.start(*extra)
    for p in (a, b):
        p.wait_until(lambda s: len(s["forwarding"]["peers"]) == 1)
    # the writer is the one whose first write is not forwarded
    a.client().post("/v1/relations", json={"changes": [_change("doc:probe")]}).raise_for_status()
    return (a, b) if a.status()["forwarding"]["sent"]["writes"] == 0 else (b, a)


def _sent(p: PlaneProcess) -> dict[str, int]:
    return p.status()["forwarding"]["sent"]


def _received(p: PlaneProcess) -> dict[str, int]:
    return p.status()["forwarding"]["received"]


def test_writes_at_either_replica_are_committed_by_the_cells_one_writer(world: World) -> None:
    writer, other = _pair(world)
    before = _sent(other)["writes"]  # the probe, when it went to the other one
    jobs = [(p, f"{name}{w}") for p, name in ((writer, "w"), (other, "o")) for w in range(4)]

    def write(job: tuple[PlaneProcess, str]) -> list[tuple[str, int]]:
        plane, name = job
        http = plane.client()
        out = []
        for i in range(8):
            r = http.post("/v1/relations", json={"changes": [_change(f"doc:{name}-{i}")]})
            assert r.status_code == 200, r.text
            token = r.json()["consistency_token"]
            out.append((f"doc:{name}-{i}", token))
            # read your write at the replica that answered, forwarded or not
            check = http.get("/v1/relations/check", params={"tenant": "acme", "object": f"doc:{name}-{i}",
                                                            "relation": "owner", "subject": "user:ann"})
            assert check.json()["allowed"] is True, check.text
        return out

    with ThreadPoolExecutor(len(jobs)) as pool:
        results = list(pool.map(write, jobs))
    batches = [verify_batch(m.data, world.event_trust()) for m in read_stream(world.nats.url, topo.STREAM_RELATIONS)]
    assert [b.seq for b in batches] == list(range(1, len(batches) + 1))
    holder = {c.rel.object: b.seq for b in batches for c in b.changes}
    for writes in results:
        assert [token for _, token in writes] == [holder[obj] for obj, _ in writes]
        assert all(x < y for x, y in pairwise(t for _, t in writes))
    # one writer: no sequence race was run, and every write that arrived at the other one went over
    assert writer.status()["conflicts"]["relations"] == 0
    assert other.status()["conflicts"]["relations"] == 0
    assert _sent(other)["writes"] == _received(writer)["writes"] == before + 4 * 8
    assert _sent(other)["requests"] <= before + 4 * 8  # grouped: never more requests than writes
    assert _sent(writer)["writes"] == 0
    assert _sent(other)["unknown"] == _sent(other)["not_delivered"] == 0


def test_an_idempotency_key_means_the_same_through_the_writer(world: World) -> None:
    writer, other = _pair(world)
    first = other.client().post("/v1/relations", json={"changes": [_change("doc:k")]},
                                headers={"Idempotency-Key": "k-1"})
    assert first.status_code == 200, first.text
    again = other.client().post("/v1/relations", json={"changes": [_change("doc:k")]},
                                headers={"Idempotency-Key": "k-1"})
    assert again.status_code == 200 and again.json()["consistency_token"] == first.json()["consistency_token"]
    assert again.headers.get("Idempotent-Replayed") == "true"
    reused = other.client().post("/v1/relations", json={"changes": [_change("doc:other")]},
                                 headers={"Idempotency-Key": "k-1"})
    assert reused.status_code == 422 and reused.json()["error"] == "idempotency_key_reused", reused.text
    assert reused.json()["detail"]["consistency_token"] == first.json()["consistency_token"]
    assert _received(writer)["writes"] >= 3  # all three went over


def test_writes_are_committed_where_they_arrive_once_the_writer_is_gone(world: World) -> None:
    writer, other = _pair(world)
    writer.proc.kill()
    writer.proc.wait()
    started = time.monotonic()
    r = other.client().post("/v1/relations", json={"changes": [_change("doc:after")]})
    assert r.status_code == 200, r.text
    assert time.monotonic() - started < 5.0  # NATS says nobody listens: no wait for a timeout
    assert _sent(other)["not_delivered"] >= 1 or _sent(other)["writes"] == 0  # or its heartbeat had lapsed
    r = other.client().post("/v1/relations", json={"changes": [_change("doc:after-2")]})
    assert r.status_code == 200, r.text


def test_no_forwarding_when_it_is_off(world: World) -> None:
    a, b = world.start("--no-forward-writes"), world.start("--no-forward-writes")
    for p in (a, b):
        p.client().post("/v1/relations", json={"changes": [_change(f"doc:{p.base_url[-5:]}")]}).raise_for_status()
        assert p.status()["forwarding"] == {"on": False}


# --------------------------------------------------------------------------- attacks on the channel


def _request(world: World, to: str, *, key: SigningKey | None = None, number: int = 1,
             now: float | None = None, obj: str = "doc:forged") -> bytes:
    write = Write((RelationChange.from_wire(_change(obj)),))
    request = ForwardRequest("attacker", "e" * 16, number, to, "c0", (write,))
    return sign_request(channel_key(key or world.event_key), request, now=now)


def _writer_token(writer: PlaneProcess) -> str:
    return writer.status()["forwarding"]["replica_token"]


def _objects(world: World) -> list[str]:
    return [c.rel.object for m in read_stream(world.nats.url, topo.STREAM_RELATIONS)
            for c in verify_batch(m.data, world.event_trust()).changes]


def test_forged_stale_replayed_and_misaddressed_requests_commit_nothing(world: World) -> None:
    writer, _other = _pair(world)
    token = _writer_token(writer)
    subject = topo.forward_subject(token)
    forged_key = SigningKey.generate()
    publish_core(world.nats.url, subject, _request(world, token, key=forged_key, obj="doc:forged"))
    publish_core(world.nats.url, subject, _request(world, token, now=time.time() - 120, obj="doc:stale"))
    publish_core(world.nats.url, subject, b'{"v":1,"type":"plane.forward"}')
    writer.wait_until(lambda s: s["forwarding"]["received"]["dropped"] >= 3)

    # a genuine request, accepted once: the same bytes again (a replay) are dropped
    taken = _received(writer)["taken"]  # the probe's, when it came from the other replica
    genuine = _request(world, token, number=7, obj="doc:once")
    publish_core(world.nats.url, subject, genuine)
    writer.wait_until(lambda s: s["forwarding"]["received"]["taken"] == taken + 1)
    publish_core(world.nats.url, subject, genuine)
    writer.wait_until(lambda s: s["forwarding"]["received"]["dropped"] >= 4)
    # addressed to another replica: refused (answered, nothing queued)
    publish_core(world.nats.url, subject, _request(world, "someone-else", number=8, obj="doc:elsewhere"))
    writer.wait_until(lambda s: s["forwarding"]["received"]["refused"] == 1)

    objects = _objects(world)
    assert objects.count("doc:once") == 1
    assert not {"doc:forged", "doc:stale", "doc:elsewhere"} & set(objects)


def test_the_answer_is_signed_for_the_request_it_answers(world: World) -> None:
    writer, _other = _pair(world)
    token = _writer_token(writer)
    data = _request(world, token, number=9, obj="doc:answered")
    answer = request_core(world.nats.url, topo.forward_subject(token), data, topo.replies_subject("attacker", 9))
    request = ForwardRequest("attacker", "e" * 16, 9, token, "c0",
                             (Write((RelationChange.from_wire(_change("doc:answered")),)),))
    [outcome] = verify_reply(answer, channel_key(world.event_key), request, max_bytes=1 << 20)
    assert isinstance(outcome, Written)
    stored = [verify_batch(m.data, world.event_trust()) for m in read_stream(world.nats.url, topo.STREAM_RELATIONS)]
    assert outcome.seq == next(b.seq for b in stored if any(c.rel.object == "doc:answered" for c in b.changes))
    # the same answer is refused for any other request: another number, another writer
    for other in (ForwardRequest("attacker", "e" * 16, 10, token, "c0", request.writes),
                  ForwardRequest("attacker", "e" * 16, 9, "not-the-writer", "c0", request.writes)):
        with pytest.raises(EventMalformed):
            verify_reply(answer, channel_key(world.event_key), other, max_bytes=1 << 20)
    body = json.loads(answer[32:])
    assert body["type"] == "plane.forward.reply" and body["to"] == "attacker"
