"""Decision pauses with a large relations index: CPython's full collections, and settle_heap().

Run: python bench/bench_pauses.py [--tuples 1000000] [--decisions 200000] [--quick]

A sidecar (in process, memo off so every decision evaluates) holds ``--tuples``
relationships over 10,000 tenants and decides in a loop while a one-change batch is
applied every 1,000 decisions, as a live feed does. Printed per mode: decision latency
median / p99 / p99.9 / max, and the full (generation 2) collections that ran with the
longest. Modes: the collector as CPython sets it up, then after
``authz_sidecar.runtime.settle_heap()`` (``gc.collect(); gc.freeze()``), which the
sidecar calls before serving and after every wholesale relations load.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_sidecar import QUESTION  # noqa: E402
from tenantguard.identity.tokens import mint  # noqa: E402
from tenantguard.relations import ChangeBatch, RelationIndex  # noqa: E402

from authz_sidecar.config import SidecarConfig  # noqa: E402
from authz_sidecar.runtime import Sidecar, settle_heap  # noqa: E402
from tests.harness.sidecar_world import World  # noqa: E402

TENANTS = 10_000


def big_index(tuples: int) -> RelationIndex:
    per_tenant = max(1, tuples // TENANTS)
    rows = [("acme", "project:p1", "member", "user:alice")]
    rows += [(f"t{t}", f"project:p{i % 10}", "member", f"user:u{i}") for t in range(TENANTS) for i in range(per_tenant)]
    return RelationIndex.from_trusted(1, rows)


class Collections:
    """Durations of the full collections that run while it is installed (gc.callbacks)."""

    def __init__(self) -> None:
        self.full_ms: list[float] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.full_ms.append((time.perf_counter() - self._started) * 1000)


def measure(sidecar: Sidecar, header: str, decisions: int) -> tuple[list[float], list[float]]:
    index = sidecar.relations.index_of("t1")  # the cell of the tenant the question names
    seq = index.applied_seq
    collections = Collections()
    gc.callbacks.append(collections)
    latencies = []
    try:
        for i in range(decisions):
            t0 = time.perf_counter_ns()
            sidecar.decide(QUESTION, sidecar.authenticate(header), door="bench")
            latencies.append((time.perf_counter_ns() - t0) / 1000)
            if i % 1000 == 0:
                seq += 1
                rel = {"tenant": "t1", "object": "project:p1", "relation": "member", "subject": f"user:x{i}"}
                index.apply(ChangeBatch.from_wire({"seq": seq, "changes": [{"op": "write", "rel": rel}]}))
                sidecar.decision_log._queue.clear()  # no drain task here: keep the queue from filling
    finally:
        gc.callbacks.remove(collections)
    return sorted(latencies), collections.full_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tuples", type=int, default=1_000_000)
    parser.add_argument("--decisions", type=int, default=200_000)
    parser.add_argument("--quick", action="store_true", help="50,000 tuples, 20,000 decisions")
    ns = parser.parse_args()
    tuples, decisions = (50_000, 20_000) if ns.quick else (ns.tuples, ns.decisions)
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp))
        token = mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="billing",
                     roles=["editor"], lifetime=3600)
        sidecar = Sidecar.from_config(SidecarConfig(
            service="billing", bundle_file=world.bundle_file, bundle_keys=(world.plane_pub,),
            trust_file=world.trust_file, decision_memo_size=0))
        sidecar.replace_relations(big_index(tuples))
        header = f"Bearer {token}"
        rows = []
        for mode in ("collector as CPython sets it up", "after settle_heap() (gc.collect + gc.freeze)"):
            if mode.startswith("after"):
                settle_heap()
            latencies, full = measure(sidecar, header, decisions)
            n = len(latencies)
            rows.append((mode, latencies[n // 2], latencies[int(n * 0.99)], latencies[int(n * 0.999)],
                         latencies[-1] / 1000, len(full), max(full, default=0.0)))
        gc.unfreeze()
    print(f"# decision pauses, {tuples:,} relationships, {decisions:,} decisions, a batch every 1,000\n")
    print("| mode | median µs | p99 µs | p99.9 µs | max ms | full collections | longest ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for mode, median, p99, p999, worst, count, longest in rows:
        print(f"| {mode} | {median:.1f} | {p99:.1f} | {p999:.1f} | {worst:.1f} | {count} | {longest:.1f} |")


if __name__ == "__main__":
    main()
