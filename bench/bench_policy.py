"""Policy decision latency and bundle swap gap for the example bundle.

Run: ``python bench/bench_policy.py``. Prints a markdown table (µs unless stated):

* per decision: the full ``PreparedPolicy.evaluate()`` call (entrypoint check, input
  conversion, evaluation, result conversion) with the small contract input, for the
  decision, exchange and propagation entrypoints;
* the same decision with 10,000 tenants x 10 relationships loaded into data;
* prepare: compiling a revision, and a thread's first use of it (each thread builds
  its own regorus engine; see tenantguard.engine);
* swap: while the main thread keeps deciding, a background thread prepares the next
  revision and swaps the reference; the max gap between consecutive decisions from the
  start of the prepare to 1,000 decisions after the swap, and the gap at the swap (the
  main thread's first decision on the new revision builds that thread's engine).
"""

from __future__ import annotations

import copy
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tenantguard.engine import RegorusEngine, RegorusPreparedPolicy
from tenantguard.policytest import load_bundle_dir

BUNDLE = Path(__file__).resolve().parents[1] / "bundles" / "tenantguard"
DECISION = "data.tenantguard.decision"
WARMUP = 2_000
ITERATIONS = 30_000
TENANTS = 10_000
RELATIONS_PER_TENANT = 10
SWAPS = 5

REQUEST = {
    "subject": {
        "type": "user",
        "id": "alice",
        "properties": {"tenant_id": "acme", "roles": ["editor"], "scope": ["invoices:read"]},
    },
    "action": {"name": "invoices:read"},
    "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}},
    "context": {"service": "billing"},
    "token": None,
    "actor_chain": ["svc:orders", "svc:edge"],
    "relations": {"project:p1": ["member"], "group:eng": ["member"]},
}
EXCHANGE = {
    "subject": REQUEST["subject"],
    "actor": {"service": "orders"},
    "audience": "billing",
    "scope": ["invoices:read"],
    "actor_chain": ["svc:edge"],
}
PROPAGATION = {"source": "orders", "target": "billing"}


def percentile(sorted_ns: list[int], fraction: float) -> float:
    """Nearest-rank percentile, in µs."""
    index = min(len(sorted_ns) - 1, max(0, round(fraction * len(sorted_ns)) - 1))
    return sorted_ns[index] / 1_000


def time_calls(call: Callable[[], Any], iterations: int = ITERATIONS) -> tuple[float, float]:
    """(median, p99) in µs of ``call`` after a warmup."""
    for _ in range(WARMUP):
        call()
    samples = []
    clock = time.perf_counter_ns
    for _ in range(iterations):
        started = clock()
        call()
        samples.append(clock() - started)
    samples.sort()
    return percentile(samples, 0.5), percentile(samples, 0.99)


def big_data(data: dict[str, Any]) -> dict[str, Any]:
    """The bundle's data plus 10,000 tenants x 10 relationships (100,000 tuples)."""
    bigger = copy.deepcopy(data)
    bigger["tenantguard"]["tenants"] = {
        f"tenant-{t:05d}": {
            f"project:p{r}": {"member": [f"user:u{t}-{r}"]} for r in range(RELATIONS_PER_TENANT)
        }
        for t in range(TENANTS)
    }
    return bigger


def first_use_ms(policy: RegorusPreparedPolicy) -> float:
    """Time for a fresh thread to build its engine and make its first decision."""
    box: dict[str, int] = {}

    def run() -> None:
        started = time.perf_counter_ns()
        policy.evaluate(DECISION, REQUEST)
        box["ns"] = time.perf_counter_ns() - started

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return box["ns"] / 1e6


def swap_gaps(
    engine: RegorusEngine, modules: dict[str, str], data: dict[str, Any]
) -> tuple[float, float, float]:
    """(prepare ms, max gap between decisions µs, gap at the swap µs), worst over SWAPS."""
    holder = {"policy": engine.prepare(modules, data)}
    runs = [one_swap(engine, modules, data, holder) for _ in range(SWAPS)]
    return tuple(max(run[i] for run in runs) for i in range(3))  # type: ignore[return-value]


def one_swap(
    engine: RegorusEngine,
    modules: dict[str, str],
    data: dict[str, Any],
    holder: dict[str, RegorusPreparedPolicy],
) -> tuple[float, float, float]:
    """Decide in a loop on this thread while another thread prepares and swaps."""
    prepared_ns: dict[str, int] = {}

    def background() -> None:
        started = time.perf_counter_ns()
        new = engine.prepare(modules, data)
        prepared_ns["ns"] = time.perf_counter_ns() - started
        holder["policy"] = new  # the swap: one reference assignment

    old = holder["policy"]
    for _ in range(WARMUP):
        old.evaluate(DECISION, REQUEST)
    thread = threading.Thread(target=background)
    last = time.perf_counter_ns()
    thread.start()
    worst = at = after_swap = 0
    while after_swap < 1_000:  # from the start of the prepare to well after the swap
        policy = holder["policy"]  # one read per decision
        policy.evaluate(DECISION, REQUEST)
        now = time.perf_counter_ns()
        gap, last = now - last, now
        worst = max(worst, gap)
        if policy is not old:
            after_swap += 1
            at = gap if after_swap == 1 else at
    thread.join()
    return prepared_ns["ns"] / 1e6, worst / 1_000, at / 1_000


def main() -> None:
    started = time.perf_counter()
    engine = RegorusEngine()
    modules, data = load_bundle_dir(BUNDLE, include_tests=False)
    small = engine.prepare(modules, data)
    assert small.evaluate(DECISION, REQUEST)["allow"] is True
    large_data = big_data(data)
    prepare_started = time.perf_counter_ns()
    large = engine.prepare(modules, large_data)
    large_prepare_ms = (time.perf_counter_ns() - prepare_started) / 1e6
    assert large.evaluate(DECISION, REQUEST)["allow"] is True

    rows: list[tuple[str, str, str]] = []

    def add(name: str, values: tuple[float, float]) -> None:
        rows.append((name, f"{values[0]:.1f}", f"{values[1]:.1f}"))

    add("decision, small input (µs)", time_calls(lambda: small.evaluate(DECISION, REQUEST)))
    add(
        "exchange decision (µs)",
        time_calls(lambda: small.evaluate("data.tenantguard.exchange.decision", EXCHANGE)),
    )
    add(
        "propagation mode (µs)",
        time_calls(lambda: small.evaluate("data.tenantguard.propagation.mode", PROPAGATION)),
    )
    add(
        f"decision, {TENANTS:,} tenants x {RELATIONS_PER_TENANT} relations in data (µs)",
        time_calls(lambda: large.evaluate(DECISION, REQUEST)),
    )
    small_prepare_ms = min(
        _timed_ms(lambda: engine.prepare(modules, data)) for _ in range(5)
    )
    rows.append(("prepare, example bundle (ms)", f"{small_prepare_ms:.2f}", "-"))
    rows.append(("prepare, with 100k relations in data (ms)", f"{large_prepare_ms:.1f}", "-"))
    rows.append(("first decision on a new thread, example bundle (ms)", f"{first_use_ms(small):.2f}", "-"))
    rows.append(("first decision on a new thread, 100k relations (ms)", f"{first_use_ms(large):.1f}", "-"))
    for label, swap_data in (("example bundle", data), ("100k relations", large_data)):
        prepare_ms, worst_us, at_us = swap_gaps(engine, modules, swap_data)
        rows.append((f"swap ({label}): background prepare (ms, worst)", f"{prepare_ms:.1f}", "-"))
        rows.append((f"swap ({label}): max gap between decisions (µs)", f"{worst_us:.0f}", "-"))
        rows.append((f"swap ({label}): of which first decision on new revision (µs)",
                     f"{at_us:.0f}", "-"))

    print(f"regorus policy benchmark (python {sys.version.split()[0]}, "
          f"{ITERATIONS:,} iterations after {WARMUP:,} warmup, {SWAPS} swaps each)\n")
    print("| measurement | median | p99 |")
    print("|---|---:|---:|")
    for name, median, p99 in rows:
        print(f"| {name} | {median} | {p99} |")
    print(f"\ntotal benchmark time: {time.perf_counter() - started:.1f} s")


def _timed_ms(call: Callable[[], Any]) -> float:
    started = time.perf_counter_ns()
    call()
    return (time.perf_counter_ns() - started) / 1e6


if __name__ == "__main__":
    main()
