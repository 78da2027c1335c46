"""Group commit: concurrent writes in a replica share one signed batch, each caller keeps its own answer.

Writes are made to queue up deterministically by pausing the nats-server (SIGSTOP): the
batch being committed waits for its ack while the next requests queue in the replica,
which reports how many are waiting (``/v1/status`` ``group_commit.waiting``); then the
server resumes. No test depends on timing beyond bounded waits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import topology as topo
from tenantguard.feed.events import RELATIONS_BATCH, batch_from_event, verify_event
from tenantguard.relations import ChangeBatch

from policy_plane.idempotency import key_hash, keys_of
from tests.harness.nats_raw import read_stream
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]


def _changes(objects: list[str], op: str = "write", subject: str = "user:alice") -> dict[str, Any]:
    return {"changes": [{"op": op, "rel": {"tenant": "acme", "object": o, "relation": "member",
                                           "subject": subject}} for o in objects]}


def _http(plane: PlaneProcess) -> httpx.Client:
    """One admin client per replica, shared by threads (a new client costs a TLS context: slow)."""
    if not plane.clients:
        plane.client()
    return plane.clients[0]


def _write(plane: PlaneProcess, objects: list[str], key: str | None = None, op: str = "write",
           subject: str = "user:alice") -> httpx.Response:
    headers = {"Idempotency-Key": key} if key else {}
    return _http(plane).post("/v1/relations", json=_changes(objects, op, subject), headers=headers)


def _stream(world: World) -> list[tuple[ChangeBatch, list[tuple[str, str]]]]:
    """Every relations batch stored, verified, with its idempotency keys."""
    out = []
    for msg in read_stream(world.nats.url, topo.STREAM_RELATIONS):
        event = verify_event(msg.data, world.event_trust(), expected_type=RELATIONS_BATCH)
        out.append((batch_from_event(event), keys_of(event.payload)))
    return out


def _objects(batch: ChangeBatch) -> list[str]:
    return [c.rel.object for c in batch.changes]


def _wait_waiting(plane: PlaneProcess, check: Callable[[int], bool], timeout: float = 10.0,
                  sent: Future[httpx.Response] | None = None) -> int:
    """Poll (tightly: NATS is paused meanwhile, and the replica gives up on it after a few
    seconds of silence) until the number of writes waiting in the replica passes ``check``
    (or ``sent`` was answered without waiting: the test then sees that answer)."""
    deadline = time.monotonic() + timeout
    while True:
        waiting = int(_http(plane).get("/v1/status").json()["group_commit"]["waiting"])
        if check(waiting) or (sent is not None and sent.done()):
            return waiting
        assert time.monotonic() < deadline, f"{waiting} writes waiting"
        time.sleep(0.005)


@contextlib.contextmanager
def _nats_paused(world: World) -> Iterator[None]:
    """nats-server stopped (SIGSTOP): connections stay open, nothing is answered."""
    pid = world.nats.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):  # killed meanwhile
            os.kill(pid, signal.SIGCONT)


def _queue(pool: ThreadPoolExecutor, plane: PlaneProcess, send: Callable[[], httpx.Response]) -> Future[httpx.Response]:
    """Send a write and return once the replica holds it (so the next one arrives after it)."""
    before = _wait_waiting(plane, lambda _: True)
    future = pool.submit(send)
    _wait_waiting(plane, lambda waiting: waiting > before, sent=future)
    return future


def test_concurrent_writes_share_a_batch_and_each_caller_gets_the_token_of_the_batch_holding_its_write(
        world: World) -> None:
    plane = world.start()
    _write(plane, ["doc:warm"]).raise_for_status()  # pays scrypt for the token before NATS is paused
    n = 20
    with ThreadPoolExecutor(n) as pool, _nats_paused(world):
        futures = [pool.submit(_write, plane, [f"doc:c{i}"], f"co-{i}") for i in range(n)]
        _wait_waiting(plane, lambda waiting: waiting == n)
    answers = [f.result() for f in futures]
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]

    stored = _stream(world)
    holder = {obj: batch.seq for batch, _ in stored for obj in _objects(batch)}
    for i, answer in enumerate(answers):  # each token is the batch holding that caller's write
        assert answer.json()["consistency_token"] == holder[f"doc:c{i}"]
    concurrent = [batch for batch, _ in stored if any(o.startswith("doc:c") for o in _objects(batch))]
    assert len(concurrent) <= 2  # the one in flight when they queued, then all the others together
    objects = [obj for batch, _ in stored for obj in _objects(batch)]
    assert sorted(objects) == sorted(["doc:warm", *(f"doc:c{i}" for i in range(n))])  # each exactly once
    assert [batch.seq for batch, _ in stored] == list(range(1, len(stored) + 1))
    keys = [key for _, pairs in stored for key, _ in pairs]
    assert sorted(keys) == sorted(key_hash(f"co-{i}", ["acme"]) for i in range(n))  # every key carried, once
    assert plane.status()["group_commit"]["batches"] == len(stored)


def test_members_that_cannot_share_a_batch_wait_for_the_next_one(world: World) -> None:
    """Same key as an earlier member: it waits for that member's outcome (replayed, or 422 with
    other changes). Past 1,000 changes: the next batch. Arrival order is kept."""
    plane = world.start()
    _write(plane, ["doc:warm"]).raise_for_status()
    big_b = [f"doc:b{i}" for i in range(400)]
    big_c = [f"doc:c{i}" for i in range(700)]
    with ThreadPoolExecutor(8) as pool:
        with _nats_paused(world):
            blocker = _queue(pool, plane, lambda: _write(plane, ["doc:blocker"]))
            a = _queue(pool, plane, lambda: _write(plane, ["doc:a"], "key-a"))
            d = _queue(pool, plane, lambda: _write(plane, ["doc:a"], "key-a"))  # a retry racing the first
            e = _queue(pool, plane, lambda: _write(plane, ["doc:other"], "key-a"))  # the key reused
            b = _queue(pool, plane, lambda: _write(plane, big_b))
            c = _queue(pool, plane, lambda: _write(plane, big_c))  # 403 + 700 > 1,000
            # the write a deletes, later in the same queue: applies after it, as it would alone
            f = _queue(pool, plane, lambda: _write(plane, ["doc:a"], op="delete"))
        answers = {name: fut.result() for name, fut in
                   {"blocker": blocker, "a": a, "d": d, "e": e, "b": b, "c": c, "f": f}.items()}

    for name in ("blocker", "a", "d", "b", "c", "f"):
        assert answers[name].status_code == 200, (name, answers[name].text)
    token = {name: answers[name].json()["consistency_token"] for name in ("blocker", "a", "d", "b", "c", "f")}
    assert token["a"] == token["b"] > token["blocker"]
    assert token["d"] == token["a"] and answers["d"].headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in answers["a"].headers
    assert answers["e"].status_code == 422 and answers["e"].json()["error"] == "idempotency_key_reused"
    assert answers["e"].json()["detail"]["consistency_token"] == token["a"]
    assert token["c"] == token["f"] == token["a"] + 1

    stored = {batch.seq: (batch, pairs) for batch, pairs in _stream(world)}
    assert _objects(stored[token["a"]][0]) == ["doc:a", *big_b]  # arrival order inside the batch
    assert _objects(stored[token["c"]][0]) == [*big_c, "doc:a"]
    assert [c.op for c in stored[token["c"]][0].changes][-1] == "delete"
    assert [k for _, pairs in stored.values() for k, _ in pairs] == [key_hash("key-a", ["acme"])]  # committed once
    check = plane.client().get("/v1/relations/check", params={
        "tenant": "acme", "object": "doc:a", "relation": "member", "subject": "user:alice"})
    assert check.json()["allowed"] is False  # written, then deleted: in order


def test_a_keyed_retry_replays_at_either_replica_and_after_a_restart_from_a_snapshot(world: World) -> None:
    a, b = world.start("--snapshot-every", "2"), world.start("--snapshot-every", "2")
    first = _write(a, ["doc:k1"], "retry-1")
    assert first.status_code == 200, first.text
    token = first.json()["consistency_token"]
    for i in range(3):  # the state moves on, and a snapshot is taken past the keyed write
        _write(a, [f"doc:later{i}"]).raise_for_status()
    a.wait_until(lambda s: s["snapshot"] is not None and s["snapshot"]["seq"] > token)
    batches = len(_stream(world))

    again = _write(b, ["doc:k1"], "retry-1")
    assert again.status_code == 200 and again.json()["consistency_token"] == token
    assert again.headers["Idempotent-Replayed"] == "true"

    code, err = a.stop()
    assert code == 0, err
    c = world.start()  # bootstraps from the snapshot, which already holds the keyed write
    assert c.status()["snapshot"]["seq"] > token
    for replica in (c, b):
        retried = _write(replica, ["doc:k1"], "retry-1")
        assert retried.status_code == 200, retried.text
        assert retried.json()["consistency_token"] == token and retried.headers["Idempotent-Replayed"] == "true"
    reused = _write(c, ["doc:k2"], "retry-1")
    assert reused.status_code == 422 and reused.json()["error"] == "idempotency_key_reused"
    assert len(_stream(world)) == batches  # nothing written twice


def test_when_nats_dies_every_waiting_write_fails_typed_and_nothing_acknowledged_is_lost(world: World) -> None:
    plane = world.start()
    acked = {}
    for i in range(3):
        answer = _write(plane, [f"doc:acked{i}"], f"acked-{i}")
        assert answer.status_code == 200, answer.text
        acked[f"doc:acked{i}"] = answer.json()["consistency_token"]
    n = 8
    with ThreadPoolExecutor(n) as pool:
        with _nats_paused(world):
            futures = [pool.submit(_write, plane, [f"doc:w{i}"], f"waiting-{i}") for i in range(n)]
            _wait_waiting(plane, lambda waiting: waiting == n)
            world.nats.kill()  # SIGKILL works on a stopped process
        failed = [f.result() for f in futures]
    for answer in failed:  # typed, retryable: the outcome of each is unknown to its caller
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"] in ("unavailable", "plane_not_ready") and answer.headers["Retry-After"]
    probe = plane.client(token=None)
    deadline = time.monotonic() + 30  # readiness follows the lost connection within a few pings
    while (ready := probe.get("/ready")).status_code == 200:
        assert time.monotonic() < deadline, "the plane still says ready with NATS gone"
        time.sleep(0.1)
    assert ready.status_code == 503 and ready.json()["error"] == "plane_not_ready", ready.text
    assert ready.headers["Retry-After"] == "1", "a 503 without Retry-After reads as 'down, give up'"

    world.nats.start()
    plane.wait_until(lambda s: s["ready"], timeout=60)
    for i in range(n):  # the callers retry with their keys: each write lands exactly once
        deadline = time.monotonic() + 30
        while (retried := _write(plane, [f"doc:w{i}"], f"waiting-{i}")).status_code == 503:
            assert time.monotonic() < deadline, retried.text
            time.sleep(0.2)
        assert retried.status_code == 200, retried.text

    stored = _stream(world)
    holder = {obj: batch.seq for batch, _ in stored for obj in _objects(batch)}
    assert all(holder[obj] == seq for obj, seq in acked.items())  # acknowledged writes are all there
    counts = Counter(obj for batch, _ in stored for obj in _objects(batch))
    assert counts == Counter([*acked, *(f"doc:w{i}" for i in range(n))])  # nothing lost, nothing twice
    assert [batch.seq for batch, _ in stored] == list(range(1, len(stored) + 1))


def test_two_replicas_under_concurrent_keyed_load_never_commit_a_key_twice(world: World) -> None:
    """Each keyed write is sent to both replicas at once (a retry racing the first attempt)."""
    a, b = world.start(), world.start()
    for i, replica in enumerate((a, b)):
        _write(replica, [f"doc:warm-{i}"]).raise_for_status()
    writers, per_writer = 4, 10

    def race(writer: int) -> list[tuple[httpx.Response, httpx.Response]]:
        out = []
        with ThreadPoolExecutor(2) as pair:
            for i in range(per_writer):
                key, obj = f"race-{writer}-{i}", [f"doc:r{writer}-{i}"]
                at_a, at_b = pair.submit(_write, a, obj, key), pair.submit(_write, b, obj, key)
                out.append((at_a.result(), at_b.result()))
        return out

    with ThreadPoolExecutor(writers) as pool:
        results = [pair for pairs in pool.map(race, range(writers)) for pair in pairs]
    for at_a, at_b in results:
        assert at_a.status_code == at_b.status_code == 200, (at_a.text, at_b.text)
        assert at_a.json() == at_b.json()  # one outcome
        assert sorted("Idempotent-Replayed" in r.headers for r in (at_a, at_b)) == [False, True]

    stored = _stream(world)
    keys = Counter(key for _, pairs in stored for key, _ in pairs)
    assert set(keys.values()) == {1} and len(keys) == writers * per_writer
    objects = Counter(obj for batch, _ in stored for obj in _objects(batch))
    assert set(objects.values()) == {1}
    assert [batch.seq for batch, _ in stored] == list(range(1, len(stored) + 1))
    # how often the replicas collided depends on scheduling; it is reported, never asserted
    print(f"conflicts: {[p.status()['conflicts']['relations'] for p in (a, b)]}, {len(stored)} batches")


def test_writes_that_fit_alone_but_not_together_under_max_payload_go_in_separate_batches(tmp_path: Path) -> None:
    """Three writes of ~170 KB each against a NATS with a 256 KiB max_payload: each fits alone,
    no two fit together once signed; each is committed, in its own batch, in order."""
    with NatsServer(tmp_path / "nats", max_payload=256 * 1024) as server:
        world = World(tmp_path, server)
        try:
            plane = world.start()
            _write(plane, ["doc:warm"]).raise_for_status()
            long = "x" * 250
            bodies = [[f"doc:{i}{long}{j}" for j in range(300)] for i in range(3)]
            with ThreadPoolExecutor(4) as pool:
                with _nats_paused(world):
                    blocker = _queue(pool, plane, lambda: _write(plane, ["doc:blocker"]))
                    queued = [_queue(pool, plane, lambda objs=objs: _write(plane, objs, subject=f"user:{long}"))
                              for objs in bodies]
                answers = [blocker.result(), *(f.result() for f in queued)]
            assert all(a.status_code == 200 for a in answers), [a.text[:200] for a in answers]
            tokens = [a.json()["consistency_token"] for a in answers]
            assert tokens == list(range(tokens[0], tokens[0] + 4))
            stored = {batch.seq: _objects(batch) for batch, _ in _stream(world)}
            assert [stored[t] for t in tokens[1:]] == bodies
        finally:
            for p in world.planes:
                p.stop()
