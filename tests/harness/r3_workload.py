"""Load for fault tests on :mod:`tests.harness.r3_cluster`: writers with Idempotency-Keys that
retry refusals, sidecar checkers, and the verdicts on what they saw.

A *logical write* is one unique tuple, written with one Idempotency-Key until it is
acknowledged (200). A refusal (409/503 with ``Retry-After``) or a lost answer (timeout,
reset connection: the outcome is unknown) is retried with the same key after a jittered
backoff, on the next plane replica. Every HTTP attempt is recorded with its start and end
time, so that the verdict can say which attempts overlap a fault window.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import httpx

from .cluster import rel
from .r3_cluster import Deployment
from .waiting import eventually

RETRY_DEADLINE = 90.0  # one logical write gives up after this long (a hang bound, never expected)


@dataclass
class Attempt:
    start: float
    end: float
    plane: int
    status: int  # 0: no answer (timeout, connection refused or reset)
    error: str = ""  # the error code of a refusal, or the exception's type
    retry_after: bool = False
    message: str = ""

    @property
    def retryable(self) -> bool:
        return self.status == 0 or (self.status in (409, 503) and self.retry_after)


@dataclass
class LogicalWrite:
    tuple_: str
    key: str
    attempts: list[Attempt] = field(default_factory=list)
    token: int | None = None
    replayed: bool = False
    applied_here: bool = True

    @property
    def start(self) -> float:
        return self.attempts[0].start

    @property
    def end(self) -> float:
        return self.attempts[-1].end


class WriteLoad:
    """``threads`` writers spread over the plane replicas ``planes`` (all by default)."""

    def __init__(self, dep: Deployment, threads: int, prefix: str, *, planes: Sequence[int] | None = None,
                 pause: float = 0.0, limit: int | None = None) -> None:
        self.dep, self.threads, self.prefix = dep, threads, prefix
        self.planes = list(planes) if planes is not None else list(range(len(dep.planes)))
        self.pause, self.limit = pause, limit
        self.writes: list[LogicalWrite] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []

    def start(self) -> WriteLoad:
        for t in range(self.threads):
            worker = threading.Thread(target=self._run, args=(t,), name=f"writer-{self.prefix}-{t}", daemon=True)
            worker.start()
            self._workers.append(worker)
        return self

    def stop(self, timeout: float = RETRY_DEADLINE + 30, *, finish: bool = False) -> None:
        """Ask the writers to finish their current logical write (``finish``: all ``limit`` of
        them), and wait for them."""
        if not finish:
            self._stop.set()
        for worker in self._workers:
            worker.join(timeout)
        assert not any(w.is_alive() for w in self._workers), "a writer hung"

    def acked(self) -> int:
        with self._lock:
            return sum(1 for w in self.writes if w.token is not None)

    def wait_acked(self, n: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.acked() < n:
            assert time.monotonic() < deadline, f"only {self.acked()} of {n} writes acknowledged"
            time.sleep(0.05)

    def _run(self, t: int) -> None:
        rng = random.Random(f"{self.prefix}-{t}")
        # as PlaneClient: past the plane's 10 s write deadline, so its answer arrives rather than a timeout
        client = httpx.Client(timeout=15, headers={"Authorization": f"Bearer {self.dep.admin_token}"})
        n = 0
        try:
            while not self._stop.is_set() and (self.limit is None or n < self.limit):
                write = LogicalWrite(f"acme/project:{self.prefix}-{t}-{n}#owner@user:w{t}", uuid.uuid4().hex)
                with self._lock:
                    self.writes.append(write)
                self._write(client, t, write, rng)
                n += 1
                if self.pause:
                    time.sleep(self.pause)
        finally:
            client.close()

    def _write(self, client: httpx.Client, t: int, write: LogicalWrite, rng: random.Random) -> None:
        body = {"changes": [{"op": "write", "rel": rel(write.tuple_)}]}
        deadline = time.monotonic() + RETRY_DEADLINE
        for attempt in range(10_000):
            plane = self.planes[(t + attempt) % len(self.planes)]
            start = time.monotonic()
            try:
                r = client.post(f"{self.dep.planes[plane].url}/v1/relations", json=body,
                                headers={"Idempotency-Key": write.key})
            except httpx.HTTPError as exc:
                write.attempts.append(Attempt(start, time.monotonic(), plane, 0, type(exc).__name__))
            else:
                end = time.monotonic()
                if r.status_code == 200:
                    write.attempts.append(Attempt(start, end, plane, 200))
                    write.token = int(r.json()["consistency_token"])
                    write.replayed = r.headers.get("Idempotent-Replayed") == "true"
                    write.applied_here = r.headers.get("Tg-Applied-Here") != "false"
                    return
                try:
                    answer = r.json()
                    code, message = str(answer.get("error", "")), str(answer.get("message", ""))
                except ValueError:
                    code, message = "", r.text[:200]
                write.attempts.append(Attempt(start, end, plane, r.status_code, code, "Retry-After" in r.headers,
                                              message))
                if not write.attempts[-1].retryable:
                    return  # a refusal that says "do not retry": the verdict reports it
            if time.monotonic() > deadline:
                return
            time.sleep(min(1.0, 0.05 * 2 ** min(attempt, 5)) * rng.uniform(0.5, 1.0))


@dataclass
class Window:
    kind: str
    target: str
    start: float
    end: float = float("inf")
    steps: dict[str, float] = field(default_factory=dict)  # seconds from start to each recovery step

    def overlaps(self, start: float, end: float) -> bool:
        return start <= self.end and end >= self.start


def in_any(windows: Iterable[Window], start: float, end: float) -> bool:
    return any(w.overlaps(start, end) for w in windows)


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary_ms(values: Sequence[float]) -> dict[str, float | int | None]:
    ms = [v * 1000 for v in values]
    return {"n": len(ms), "median_ms": round(statistics.median(ms), 1) if ms else None,
            "p99_ms": round(percentile(ms, 0.99) or 0, 1) if ms else None,
            "max_ms": round(max(ms), 1) if ms else None}


class Checker:
    """Asks one sidecar, in a loop, whether alice (acme, member of p1) may read an invoice, and
    whether a globex user may: counts answers, failures (no answer, or not 200) and, once
    the globex kill switch is seen at this sidecar, any globex allow after it."""

    def __init__(self, dep: Deployment, service: str) -> None:
        self.dep, self.service = dep, service
        self.answers = 0
        self.answered_at: list[float] = []  # when each answer came (to count answers inside a fault)
        self.failures: list[tuple[float, float, str]] = []  # (start, end, what)
        self.globex_denied_at: float | None = None
        self.globex_allowed_after_deny: list[float] = []
        self.alice_denied: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"checker-{service}", daemon=True)

    def start(self) -> Checker:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _ask(self, sub: str, tenant: str, project: str) -> bool | None:
        now = time.monotonic()
        try:
            r = self.dep.check(self.service, sub, tenant=tenant, project=project, timeout=5)
        except httpx.HTTPError as exc:
            self.failures.append((now, time.monotonic(), type(exc).__name__))
            return None
        if r.status_code == 401:  # a revoked tenant's token: refused outright
            self.answers += 1
            self.answered_at.append(time.monotonic())
            return False
        if r.status_code != 200:
            self.failures.append((now, time.monotonic(), f"HTTP {r.status_code}"))
            return None
        self.answers += 1
        self.answered_at.append(time.monotonic())
        return bool(r.json()["allow"])

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            if self._ask("alice", "acme", "p1") is False:
                self.alice_denied.append(now)
            globex = self._ask("gina", "globex", "g1")
            if globex is False and self.globex_denied_at is None:
                self.globex_denied_at = now
            elif globex is True and self.globex_denied_at is not None:
                self.globex_allowed_after_deny.append(now)
            time.sleep(0.02)


# --------------------------------------------------------------------------- verdicts


def stream_is_exact(dep: Deployment, load: WriteLoad) -> dict[str, int]:
    """Every acknowledged write is in the stream exactly once, at the sequence it was answered
    with; the stream's batches are gap-free; a write never acknowledged is there at most once."""
    batches = dep.stored_batches()
    seqs = [b.seq for _, b in batches]
    assert seqs == list(range(1, len(seqs) + 1)), "relations batches are not gap-free"
    where: dict[str, list[int]] = {}
    for _, batch in batches:
        for change in batch.changes:
            where.setdefault(_text(change.rel), []).append(batch.seq)
    unacked = 0
    for write in load.writes:
        found = where.get(write.tuple_, [])
        if write.token is None:
            unacked += 1
            assert len(found) <= 1, f"{write.tuple_} applied {len(found)} times"
        else:
            assert found == [write.token], f"{write.tuple_} answered {write.token}, stored at {found}"
    return {"batches": len(seqs), "unacked": unacked}


def _text(r: object) -> str:
    return f"{r.tenant}/{r.object}#{r.relation}@{r.subject}"  # type: ignore[attr-defined]


def converge(dep: Deployment) -> float:
    """Seconds until every plane and sidecar holds the same relations (bounded)."""
    start = time.monotonic()
    eventually(dep.converged, "planes and sidecars hold the same relations", timeout=90)
    return time.monotonic() - start


def no_error_surfaced(dep: Deployment, load: WriteLoad, checkers: list[Checker],
                      started: float) -> tuple[dict[str, int], float, int]:
    """Assert no write attempt was answered anything but 200, no check failed and the stream holds
    each acknowledged write once; then (stream counts, seconds to converge, publishes sent again)."""
    attempts = [a for w in load.writes for a in w.attempts]
    refused = [(round(a.start - started, 2), a.status, a.error, a.message[:100]) for a in attempts if a.status != 200]
    assert refused == [], refused
    for checker in checkers:
        assert checker.failures == [] and checker.alice_denied == [], (checker.service, checker.failures[:3])
    counts = stream_is_exact(dep, load)
    convergence = converge(dep)
    republished = sum(dep.plane_status(i)["republished"] for i in range(len(dep.planes)))
    return counts, convergence, republished
