"""Safe rollout: how fast impact analysis replays, and what a shadow costs the decision path.

Run: python bench/bench_rollout.py [--quick]

- Replay throughput (``tenantguard.rollout.ImpactAnalyzer``): recorded decisions per second
  against a candidate that locks project members out (bundles/tenantguard with
  ``project_relations`` narrowed to owners), with a baseline bundle (two evaluations per
  record), against the recorded results (one), and from decision-log records without an
  input (rebuilt, relations from an index).
- The shadow on the decision path: one event loop, as in the sidecar; each decision is
  issued after yielding to the loop once (a request arriving), so a shadow judgment the
  worker runs in between is inside the measured time, exactly as a request waiting on the
  loop would feel it. Decisions are the common allowed request (the fast path); the shadow
  is the lock-out candidate, which denies them on its slow path (the worst case: every
  judgment is a disagreement). Medians and p99s in microseconds, shadow off and on at two
  rate limits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tenantguard.decision.core import DecisionCore, DecisionRequest
from tenantguard.relations import RelationIndex
from tenantguard.rollout import (
    ImpactAnalyzer,
    ReplayRecord,
    ShadowEvaluator,
    ShadowSettings,
    load_bundle,
    prepare_revision,
)

BUNDLE_DIR = Path(__file__).resolve().parents[1] / "bundles" / "tenantguard"


def lockout_dir(root: Path) -> Path:
    target = root / "lockout"
    shutil.copytree(BUNDLE_DIR, target, ignore=shutil.ignore_patterns("*_test.rego"))
    data = json.loads((target / "data.json").read_text())
    data["tenantguard"]["config"]["project_relations"] = ["owner"]
    (target / "data.json").write_text(json.dumps(data))
    return target


def recorded(i: int) -> dict[str, Any]:
    """A mix: members (flip), owners (agree), non-members (denied both ways), across 20 tenants."""
    held = (["member"], ["owner"], [])[i % 3]
    tenant, sub = f"t{i % 20}", f"u{i}"
    return {"v": 1, "decision_id": f"d{i}", "tenant": tenant, "service": "orders", "action": "invoices:read",
            "subject": f"user:{sub}", "resource": f"invoice:i{i}", "allow": bool(held),
            "reasons": [] if held else ["not_project_member"], "bundle_revision": "1", "relations_seq": 1,
            "input": {"subject": {"type": "user", "id": sub, "properties": {"tenant_id": tenant,
                                                                            "roles": ["editor"]}},
                      "action": {"name": "invoices:read"},
                      "resource": {"type": "invoice", "id": f"i{i}",
                                   "properties": {"tenant_id": tenant, "project": "p1"}},
                      "context": {"service": "orders"}, "token": None, "actor_chain": [],
                      "relations": {"project:p1": held} if held else {}}}


def replay_rows(n: int, candidate: Any, baseline: Any) -> list[tuple[str, float, int]]:
    with_input = [ReplayRecord.from_wire(recorded(i)) for i in range(n)]
    logged = [ReplayRecord.from_wire({k: v for k, v in recorded(i).items() if k != "input"}) for i in range(n)]
    index = RelationIndex.from_trusted(1, [(f"t{i % 20}", "project:p1", "member", f"user:u{i}")
                                          for i in range(0, n, 3)])
    rows = []
    for name, records, options in (
            ("replay with a baseline bundle (2 evaluations per record)", with_input, {"baseline": baseline}),
            ("replay against the recorded results (1 evaluation)", with_input, {}),
            ("replay of decision-log records (input rebuilt, relations index)", logged,
             {"baseline": baseline, "relations": index})):
        ImpactAnalyzer(candidate, **options).add_all(records[:200])  # warm this thread's engines
        start = time.perf_counter()
        report = ImpactAnalyzer(candidate, **options).add_all(records)
        seconds = time.perf_counter() - start
        rows.append((name, len(records) / seconds, report.flipped))
    return rows


async def decision_path(core: DecisionCore, shadow: ShadowEvaluator | None, n: int) -> list[float]:
    request = DecisionRequest.from_wire({
        "subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme", "roles": ["editor"]}},
        "action": {"name": "invoices:read"},
        "resource": {"type": "invoice", "id": "inv-1", "properties": {"project": "p1"}}})
    worker = asyncio.get_running_loop().create_task(shadow.run()) if shadow is not None else None
    samples = []
    try:
        for _ in range(n):
            start = time.perf_counter_ns()
            await asyncio.sleep(0)  # a request arrives: whatever the loop runs first is on its path
            assert core.decide(request).allow
            samples.append((time.perf_counter_ns() - start) / 1000)
    finally:
        if worker is not None:
            worker.cancel()
    return samples


def quantiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.99) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small counts (CI)")
    ns = parser.parse_args()
    records, decisions = (1_000, 3_000) if ns.quick else (10_000, 30_000)
    with tempfile.TemporaryDirectory() as tmp:
        candidate = prepare_revision(load_bundle(lockout_dir(Path(tmp))))
    baseline = prepare_revision(load_bundle(BUNDLE_DIR))

    print("### Impact analysis: replay throughput\n")
    print("| replay | records | records/s | flips found |")
    print("|---|---:|---:|---:|")
    for name, rate, flips in replay_rows(records, candidate, baseline):
        print(f"| {name} | {records:,} | {rate:,.0f} | {flips:,} |")

    index = RelationIndex.from_trusted(1, [("acme", "project:p1", "member", "user:alice")])
    core = DecisionCore("orders", index)
    core.activate(baseline)
    print("\n### Shadow evaluation: the decision path, shadow off and on\n")
    print(f"{decisions:,} decisions on one event loop (the sidecar's), memo off; microseconds.\n")
    print("| shadow | decision p50 | decision p99 | judged | disagreements | rate-limited |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, rate in (("off", None), ("on, max 50/s", 50), ("on, max 1000/s", 1000)):
        shadow = None
        core.observer = None
        if rate is not None:
            shadow = ShadowEvaluator(core)
            shadow.set_candidate(candidate, ShadowSettings(1.0, rate), scope="all")
            core.observer = shadow.offer
        asyncio.run(decision_path(core, shadow, 500))  # warm up
        if shadow is not None:
            shadow.set_candidate(candidate, ShadowSettings(1.0, rate), scope="all")
        p50, p99 = quantiles(asyncio.run(decision_path(core, shadow, decisions)))
        judged = f"{shadow.evaluated:,}" if shadow else "-"
        disagreed = f"{shadow.disagreed['allow->deny']:,}" if shadow else "-"
        limited = f"{shadow.rate_limited:,}" if shadow else "-"
        print(f"| {label} | {p50:.1f} | {p99:.1f} | {judged} | {disagreed} | {limited} |")
    core.observer = None


if __name__ == "__main__":
    main()
