"""Policy decision latency and bundle swap gap for the example bundle.

Run: ``python bench/bench_policy.py [--bundle DIR] [--quick] [--against REV]``. Prints a
markdown table (µs unless stated, median and p99):

* per decision: the full ``PreparedPolicy.evaluate()`` call (entrypoint check, input
  conversion, evaluation, result conversion). The allow is the request the sidecar
  sends (verified token claims without a scope, no actor chain, the subject's
  relations); the Envoy route question is the same user asking ``route:read`` on a
  resource that names no project; the denies change one field of the first (another
  tenant's resource; a viewer writing); the contract example is a call through orders
  and edge with a subject scope;
* the same decisions with 10,000 tenants x 10 relations (100,000 tuples) in data;
* the exchange and propagation entrypoints;
* two floor rows, timed the same way: an empty call (what the timer itself costs) and a
  pure-Python loop calibrated to last as long as an allow (no regorus, no allocation). A
  decision's p99 far above its median while the loop's p99 is as far above its own is
  the machine (preemption, other processes, frequency), not the policy; under the table,
  the involuntary context switches and the garbage collections (``gc.callbacks``) that
  happened during the timed calls;
* swapping revisions while one thread keeps deciding, as the sidecar's event loop does.
  The max gap between two consecutive decisions, from the start of the swap to 1,000
  decisions after it, worst of a few swaps, for three ways of preparing the next revision:
  ``prepare`` on the deciding thread (one blocking call); ``prepare`` on a worker thread
  (the deciding thread then builds its own engine at its first decision, and waits for
  the GIL while the worker holds it); ``prepare_steps`` on the deciding thread, one step
  between two decisions (see tenantguard.policy.engine).

With ``--core``, it measures decisions through the decision core instead (``DecisionCore.decide``
with the verdict memo a sidecar has, the example bundle, relations in a real index): a question
asked again with the same token (the memo's exact key); the same user's question with a new token
and another resource id each time (an exchanged token per hop; the memo's key derived from what the
bundle reads, ``tenantguard.decision.verdicts.projected_key``, when the library has it); and a new subject
each time (nothing to reuse: the policy is evaluated). Run it with another checkout's ``sdk`` first
on ``PYTHONPATH`` to compare libraries.

Every request is the input a sidecar sends: with the input facts ``actor_services`` and
``scope_limits`` (``tenantguard.decision.core.input_facts``, docs/decision-input.md).

With ``--against REV`` (a git revision), it measures only the per-request rows and the
floor, for the bundle as it is and as it was at REV (extracted with ``git archive``), in
one process: the two alternate in chunks of calls, so both see the same machine load (the
floor row's two columns are the same loop: their difference is the method's noise). The
bundle at REV gets the input facts only if its modules read them, as a sidecar of its day
sent them. It also checks that both give the same answer to every request.
"""

from __future__ import annotations

import argparse
import copy
import gc
import io
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tenantguard.decision.core import RELATED_EXTENSION, input_facts
from tenantguard.policy.engine import RegorusEngine, RegorusPreparedPolicy
from tenantguard.policy.testrunner import load_bundle_dir

BUNDLE = Path(__file__).resolve().parents[1] / "bundles" / "tenantguard"
DECISION = "data.tenantguard.decision"
EXCHANGE_ENTRYPOINT = "data.tenantguard.exchange.decision"
PROPAGATION_ENTRYPOINT = "data.tenantguard.propagation.mode"
WARMUP = 2_000
ITERATIONS = 30_000
TENANTS = 10_000
RELATIONS_PER_TENANT = 10
SWAPS = 3
AFTER_SWAP = 1_000
CHUNK = 250  # --against: calls of one side before switching to the other

# What the sidecar sends for a user calling directly with a verified token.
REQUEST: dict[str, Any] = {
    "subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme", "roles": ["editor"]}},
    "action": {"name": "invoices:read"},
    "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}},
    "context": {"service": "billing"},
    "token": {
        "iss": "https://idp.example",
        "sub": "alice",
        "tenant_id": "acme",
        "aud": "billing",
        "exp": 2_000_000_000,
        "iat": 1_700_000_000,
        "nbf": 1_700_000_000,
        "jti": "tok-1",
        "roles": ["editor"],
    },
    "actor_chain": [],
    "relations": {"project:p1": ["member"]},
}
# What the sidecar sends for the Envoy ext_authz door's question (question_for in
# authz_sidecar/grpc_ext_authz.py: GET /tenants/acme/invoices/inv-1 with the same token),
# once _policy_input has added the token, the subject and the relations: a route names
# a tenant but no project.
ENVOY_ROUTE: dict[str, Any] = {
    **copy.deepcopy(REQUEST),
    "action": {"name": "route:read", "properties": {"method": "GET", "path": "/tenants/acme/invoices/inv-1"}},
    "resource": {
        "type": "route",
        "id": "/tenants/acme/invoices/inv-1",
        "properties": {"host": "billing", "tenant_id": "acme"},
    },
    "context": {"transport": "envoy", "service": "billing"},
}
TENANT_MISMATCH = copy.deepcopy(REQUEST)
TENANT_MISMATCH["resource"]["properties"]["tenant_id"] = "globex"
MISSING_ROLE = copy.deepcopy(REQUEST)
MISSING_ROLE["subject"]["properties"]["roles"] = ["viewer"]
MISSING_ROLE["action"]["name"] = "invoices:write"
# The request from the contract in bundles/README.md: a call through orders and edge.
CONTRACT_EXAMPLE: dict[str, Any] = {
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
# What the sidecar sends for the same user's call through orders (and edge before it) with
# the exchanged token orders got for billing: the chain from its `act` claims, its scope on
# the token and copied to the subject (tenantguard.decision.core.policy_input).
EXCHANGED_TOKEN: dict[str, Any] = {
    **copy.deepcopy(REQUEST),
    "subject": {"type": "user", "id": "alice",
                "properties": {"tenant_id": "acme", "roles": ["editor"], "scope": "invoices:read"}},
    "token": {**REQUEST["token"], "iss": "sidecar:orders", "scope": "invoices:read",
              "act": {"sub": "svc:orders", "act": {"sub": "svc:edge"}}, "tg_chain": ["tok-0"],
              "tg_root_iat": 1_700_000_000},
    "actor_chain": ["svc:orders", "svc:edge"],
}
MISSING_ROLE_VIA_CHAIN = copy.deepcopy(EXCHANGED_TOKEN)
MISSING_ROLE_VIA_CHAIN["subject"]["properties"]["roles"] = ["auditor"]
EXCHANGE: dict[str, Any] = {
    "subject": CONTRACT_EXAMPLE["subject"],
    "actor": {"service": "orders"},
    "audience": "billing",
    "scope": ["invoices:read"],
    "actor_chain": ["svc:edge"],
}
PROPAGATION: dict[str, Any] = {"source": "orders", "target": "billing"}
DECISIONS = (
    ("allow (sidecar request)", REQUEST, True),
    ("allow without a project (Envoy route question)", ENVOY_ROUTE, True),
    ("deny: tenant_mismatch", TENANT_MISMATCH, ["tenant_mismatch"]),
    ("deny: missing_role", MISSING_ROLE, ["missing_role"]),
    ("allow (contract example: actor chain, subject scope)", CONTRACT_EXAMPLE, True),
    ("allow (exchanged token: actor chain, token scope)", EXCHANGED_TOKEN, True),
    ("deny: missing_role through a service call", MISSING_ROLE_VIA_CHAIN, ["missing_role"]),
)
FACTS = ("actor_services", "scope_limits")


def as_sent(request: Mapping[str, Any]) -> dict[str, Any]:
    """``request`` with the input facts, as the decision core completes every input."""
    return {**request, **input_facts(request)}


def schema_of(bundle: Path) -> Any:
    """The bundle directory's relationship schema, prepared (None without one)."""
    from tenantguard.decision.permissions import schema_engine
    from tenantguard.schema import load

    for name in ("schema.fga", "schema.json", "schema.zed"):
        if (bundle / name).is_file():
            return schema_engine(load((bundle / name).read_text(), name))
    return None


def bound_to_alice(bundle: Path) -> Any:
    """``tg.related`` bound as in a decision in tenant acme, where alice is a member of p1 (the
    example asks its schema about project membership): a context manager for the whole run."""
    from tenantguard.decision.core import bound_relations
    from tenantguard.relations import RelationIndex

    index = RelationIndex.from_trusted(1, [("acme", "project:p1", "member", "user:alice")])
    return bound_relations(index.tenant("acme"), None, schema_of(bundle), None)


def evaluation(policy: RegorusPreparedPolicy, entrypoint: str, request: Mapping[str, Any]) -> Callable[[], Any]:
    """One decision, as a call to time."""
    return lambda: policy.evaluate(entrypoint, request)


def reads_input_facts(modules: Mapping[str, str]) -> bool:
    """Whether a bundle's modules name an input fact (bundles from before them do not)."""
    return any(fact in source for source in modules.values() for fact in FACTS)


def percentile(sorted_ns: list[int], fraction: float) -> float:
    """Nearest-rank percentile, in µs."""
    index = min(len(sorted_ns) - 1, max(0, round(fraction * len(sorted_ns)) - 1))
    return sorted_ns[index] / 1_000


@dataclass
class Timing:
    """What was measured for one timed call, in µs, and what happened meanwhile."""

    median: float
    p99: float
    calls: int
    collections: int  # garbage collections (any generation) that ran during its timed calls
    switches: int  # involuntary context switches of this thread during its timed calls


class _Counts:
    """Garbage collections (gc.callbacks) and involuntary context switches, per timed call."""

    def __init__(self, slots: int) -> None:
        self.collections = [0] * slots
        self.switches = [0] * slots
        self.current = 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.collections[self.current] += 1

    @staticmethod
    def switches_now() -> int:
        return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw


def _timings(samples: list[list[int]], counts: _Counts) -> list[Timing]:
    out = []
    for index, values in enumerate(samples):
        values.sort()
        out.append(Timing(percentile(values, 0.5), percentile(values, 0.99), len(values),
                          counts.collections[index], counts.switches[index]))
    return out


def time_calls(call: Callable[[], Any], iterations: int) -> Timing:
    """(median, p99) in µs of ``call`` after a warmup."""
    return time_alternately([call], iterations)[0]


def time_alternately(calls: Sequence[Callable[[], Any]], iterations: int) -> list[Timing]:
    """Each of ``calls`` timed ``iterations`` times, in alternating chunks of CHUNK calls
    (the order rotating every round), so that every call sees the same machine load."""
    for call in calls:
        for _ in range(WARMUP):
            call()
    samples: list[list[int]] = [[] for _ in calls]
    counts = _Counts(len(calls))
    clock, switches = time.perf_counter_ns, counts.switches_now
    gc.callbacks.append(counts)
    try:
        for round_ in range(max(1, iterations // CHUNK)):
            for offset in range(len(calls)):
                index = (round_ + offset) % len(calls)
                call, out = calls[index], samples[index]
                counts.current = index
                before = switches()
                for _ in range(CHUNK if len(calls) > 1 else iterations):
                    started = clock()
                    call()
                    out.append(clock() - started)
                counts.switches[index] += switches() - before
            if len(calls) == 1:
                break
    finally:
        gc.callbacks.remove(counts)
    return _timings(samples, counts)


# --------------------------------------------------------------------------- the floor


def empty_call() -> None:
    """The floor of the timer itself."""


def spin(rounds: int) -> int:
    """Pure-Python work with no allocation (small ints are cached) and no regorus."""
    total = 0
    for i in range(rounds):
        total += i
    return total


def spin_like(call: Callable[[], Any]) -> Callable[[], int]:
    """A :func:`spin` that lasts about as long as ``call`` (medians after a warmup)."""

    def median_ns(fn: Callable[[], Any]) -> float:
        for _ in range(200):
            fn()
        runs = []
        for _ in range(2_000):
            started = time.perf_counter_ns()
            fn()
            runs.append(time.perf_counter_ns() - started)
        runs.sort()
        return runs[len(runs) // 2]

    rounds = max(1, round(1_000 * median_ns(call) / median_ns(lambda: spin(1_000))))
    return lambda: spin(rounds)


FLOOR_ROWS = ("floor: an empty call (the timer alone)",
              "floor: a pure-Python loop as long as an allow (no regorus, no allocation)")


def summary(timings: Sequence[Timing]) -> str:
    calls = sum(timing.calls for timing in timings)
    switches = sum(timing.switches for timing in timings)
    collections = sum(timing.collections for timing in timings)
    return (f"during the {calls:,} timed calls: {collections} garbage collections; {switches:,} involuntary "
            f"context switches (the CPU taken from ~{100 * switches / max(1, calls):.1f} % of the calls)")


def bundle_at(revision: str, bundle: Path, into: Path) -> Path:
    """The bundle directory as it was at ``revision``, extracted under ``into``."""
    bundle = bundle.resolve()
    top = Path(subprocess.run(["git", "-C", str(bundle), "rev-parse", "--show-toplevel"],
                              check=True, capture_output=True, text=True).stdout.strip())
    relative = bundle.relative_to(top).as_posix()
    archive = subprocess.run(["git", "-C", str(top), "archive", "--format=tar", revision, relative],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / relative


def compare(bundle: Path, revision: str, iterations: int) -> None:
    """Per-request rows for ``bundle`` now and at ``revision``, side by side (see --against)."""
    engine = RegorusEngine()
    with tempfile.TemporaryDirectory() as tmp:
        old_modules, old_data = load_bundle_dir(bundle_at(revision, bundle, Path(tmp)), include_tests=False)
    old = engine.prepare(old_modules, old_data, extensions=RELATED_EXTENSION)
    new = engine.prepare(*load_bundle_dir(bundle, include_tests=False), extensions=RELATED_EXTENSION)
    old_facts = reads_input_facts(old_modules)
    # (name, entrypoint, the input for the bundle at REV, the input for the bundle now)
    cases = [(f"decision, {name}", DECISION, as_sent(request) if old_facts else request, as_sent(request))
             for name, request, _ in DECISIONS]
    cases += [("exchange decision", EXCHANGE_ENTRYPOINT, EXCHANGE, EXCHANGE),
              ("propagation mode", PROPAGATION_ENTRYPOINT, PROPAGATION, PROPAGATION)]
    for name, entrypoint, before_input, after_input in cases:
        before, after = old.evaluate(entrypoint, before_input), new.evaluate(entrypoint, after_input)
        assert before == after, f"{name}: {revision} gives {before}, the bundle now {after}"
    for _, request, expected in DECISIONS:
        check(new, as_sent(request), expected)
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"regorus policy benchmark: {bundle.name} at {revision} vs now (python {sys.version.split()[0]}, "
          f"{iterations:,} iterations each after {WARMUP:,} warmup, alternating in chunks of {CHUNK}, "
          f"load average {load} before; {revision} {'with' if old_facts else 'without'} the input facts)\n")
    print(f"| measurement (µs) | {revision} median | {revision} p99 | now median | now p99 |")
    print("|---|---:|---:|---:|---:|")
    allow = as_sent(REQUEST)
    floor = spin_like(lambda: new.evaluate(DECISION, allow))
    rows: list[tuple[str, list[Timing]]] = [
        (FLOOR_ROWS[0], time_alternately([empty_call, empty_call], iterations)),
        (FLOOR_ROWS[1], time_alternately([floor, floor], iterations)),
    ]
    for name, entrypoint, before_input, after_input in cases:
        rows.append((name, time_alternately([evaluation(old, entrypoint, before_input),
                                             evaluation(new, entrypoint, after_input)], iterations)))
    for name, (before, after) in rows:
        print(f"| {name} | {before.median:.1f} | {before.p99:.1f} | {after.median:.1f} | {after.p99:.1f} |")
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"\n{summary([timing for _, timings in rows for timing in timings])}; load average after: {load}")


def big_data(data: dict[str, Any]) -> dict[str, Any]:
    """The bundle's data plus 10,000 tenants x 10 relationships (100,000 tuples)."""
    bigger = copy.deepcopy(data)
    bigger["tenantguard"]["tenants"] = {
        f"tenant-{t:05d}": {f"project:p{r}": {"member": [f"user:u{t}-{r}"]} for r in range(RELATIONS_PER_TENANT)}
        for t in range(TENANTS)
    }
    return bigger


def check(policy: RegorusPreparedPolicy, request: dict[str, Any], expected: bool | list[str]) -> None:
    result = policy.evaluate(DECISION, request)
    if expected is True:
        assert result["allow"] is True, result
    else:
        assert result["allow"] is False and result["reasons"] == expected, result


# --------------------------------------------------------------------------- swaps


class Decider:
    """Decides in a loop on this thread and records the gaps between decisions."""

    def __init__(self, policy: RegorusPreparedPolicy) -> None:
        self.policy = policy
        self.worst_ns = 0
        self.last = time.perf_counter_ns()

    def decide(self) -> None:
        self.policy.evaluate(DECISION, REQUEST)  # one read of the reference per decision
        now = time.perf_counter_ns()
        self.worst_ns = max(self.worst_ns, now - self.last)
        self.last = now

    def settle(self) -> None:
        for _ in range(AFTER_SWAP):
            self.decide()


def swap_inline(engine: RegorusEngine, modules: dict[str, str], data: dict[str, Any], decider: Decider) -> None:
    decider.policy = engine.prepare(modules, data, extensions=RELATED_EXTENSION, entrypoints=(DECISION,))


def swap_worker(engine: RegorusEngine, modules: dict[str, str], data: dict[str, Any], decider: Decider) -> None:
    box: dict[str, RegorusPreparedPolicy] = {}
    worker = threading.Thread(target=lambda: box.setdefault("new", engine.prepare(modules, data,
                                                                                 extensions=RELATED_EXTENSION)))
    worker.start()
    while worker.is_alive():
        decider.decide()
    worker.join()
    decider.policy = box["new"]


def swap_steps(engine: RegorusEngine, modules: dict[str, str], data: dict[str, Any], decider: Decider) -> None:
    steps = engine.prepare_steps(modules, data, extensions=RELATED_EXTENSION, entrypoints=(DECISION,))
    while True:
        try:
            next(steps)
        except StopIteration as done:
            decider.policy = done.value
            return
        decider.decide()  # the event loop runs decisions between two steps


def worst_gap_ms(
    swap: Callable[..., None], engine: RegorusEngine, modules: dict[str, str], data: dict[str, Any]
) -> tuple[float, float]:
    """(worst gap between decisions in ms, worst swap duration in ms) over SWAPS swaps."""
    decider = Decider(engine.prepare(modules, data, extensions=RELATED_EXTENSION))
    gaps, durations = [], []
    for _ in range(SWAPS):
        for _ in range(WARMUP):
            decider.decide()
        decider.worst_ns = 0
        decider.last = started = time.perf_counter_ns()
        swap(engine, modules, data, decider)
        durations.append(time.perf_counter_ns() - started)
        decider.settle()
        gaps.append(decider.worst_ns)
    return max(gaps) / 1e6, max(durations) / 1e6


# --------------------------------------------------------------------------- through the core


def core_rows(bundle: Path, iterations: int) -> list[tuple[str, Timing]]:
    """Decisions through ``DecisionCore`` with a verdict memo (see --core)."""
    from tenantguard.decision.core import DecisionCore, DecisionRequest, PolicyRevision
    from tenantguard.decision.verdicts import VerdictMemo
    from tenantguard.identity.tokens import Claims
    from tenantguard.relations import RelationIndex

    modules, data = load_bundle_dir(bundle)  # tests included, as a built archive carries them
    policy = RegorusEngine().prepare(modules, data, extensions=RELATED_EXTENSION)
    users = [f"u{n}" for n in range(iterations + WARMUP + 10)]
    index = RelationIndex.from_trusted(1, [("acme", "project:p1", "member", f"user:{user}") for user in users])
    core = DecisionCore("billing", index, memo=VerdictMemo())
    core.activate(PolicyRevision(revision="1", policy=policy, schema=schema_of(bundle)))

    def claims(sub: str, jti: str) -> Claims:
        raw = {**REQUEST["token"], "sub": sub, "jti": jti}
        return Claims(iss=raw["iss"], sub=sub, tenant_id="acme", aud=("billing",), exp=raw["exp"], iat=raw["iat"],
                      nbf=raw["nbf"], jti=jti, roles=("editor",), kid="k", raw=raw)

    def body(resource_id: str) -> dict[str, Any]:
        return {"action": {"name": "invoices:read"},
                "resource": {"type": "invoice", "id": resource_id, "properties": {"project": "p1"}}}

    alice = claims("u0", "t0")
    same = DecisionRequest.from_wire(body("inv-1"), alice)
    fresh = iter(range(10**9))

    def new_token() -> Any:
        n = next(fresh)
        return core.decide(DecisionRequest.from_wire(body(f"inv-{n}"), claims("u1", f"t{n}")))

    subjects = iter(users[2:])

    def new_subject() -> Any:
        return core.decide(DecisionRequest.from_wire(body("inv-1"), claims(next(subjects), "t")))

    assert core.decide(same).allow and new_token().allow and new_subject().allow
    return [
        ("core: the same question and token again (memo, exact key)", time_calls(lambda: core.decide(same),
                                                                                  iterations)),
        ("core: the same user, a new token and resource id each time", time_calls(new_token, iterations)),
        ("core: a new subject each time (the policy is evaluated)", time_calls(new_subject, iterations)),
    ]


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=BUNDLE, help="bundle directory (default: the example)")
    parser.add_argument("--quick", action="store_true", help="fewer iterations, for a smoke run")
    parser.add_argument("--against", metavar="REV",
                        help="compare the per-request rows with the bundle at git revision REV, in one run")
    parser.add_argument("--core", action="store_true",
                        help="measure decisions through the decision core and its verdict memo instead")
    args = parser.parse_args()
    with bound_to_alice(args.bundle):
        run(args)


def run(args: argparse.Namespace) -> None:
    """The benchmark ``main`` asked for, with ``tg.related`` bound as in a decision."""
    iterations = 1_000 if args.quick else ITERATIONS
    if args.core:
        import tenantguard

        print(f"decision core benchmark: {args.bundle.name}, library {Path(tenantguard.__file__).parent} "
              f"({iterations:,} iterations after {WARMUP:,} warmup)\n")
        print("| measurement (µs) | median | p99 |")
        print("|---|---:|---:|")
        core_timings = core_rows(args.bundle, iterations)
        for name, timing in core_timings:
            print(f"| {name} | {timing.median:.1f} | {timing.p99:.1f} |")
        print(f"\n{summary([timing for _, timing in core_timings])}")
        return
    if args.against:
        compare(args.bundle, args.against, iterations)
        return

    started = time.perf_counter()
    engine = RegorusEngine()
    modules, data = load_bundle_dir(args.bundle, include_tests=False)
    large_data = big_data(data)
    small = engine.prepare(modules, data, extensions=RELATED_EXTENSION)
    large = engine.prepare(modules, large_data, extensions=RELATED_EXTENSION)
    for policy in (small, large):
        for _, request, expected in DECISIONS:
            check(policy, as_sent(request), expected)

    rows: list[tuple[str, str, str]] = []
    timings: list[Timing] = []

    def add(name: str, timing: Timing) -> None:
        rows.append((name, f"{timing.median:.1f}", f"{timing.p99:.1f}"))
        timings.append(timing)

    allow = as_sent(REQUEST)
    add(f"{FLOOR_ROWS[0]} (µs)", time_calls(empty_call, iterations))
    add(f"{FLOOR_ROWS[1]} (µs)", time_calls(spin_like(lambda: small.evaluate(DECISION, allow)), iterations))
    with_tenants = f", {TENANTS:,} tenants x {RELATIONS_PER_TENANT} relations in data"
    for label, policy in (("", small), (with_tenants, large)):
        for name, request, _ in DECISIONS:
            timed = time_calls(evaluation(policy, DECISION, as_sent(request)), iterations)
            add(f"decision, {name}{label} (µs)", timed)
    add("exchange decision (µs)", time_calls(lambda: small.evaluate(EXCHANGE_ENTRYPOINT, EXCHANGE), iterations))
    add("propagation mode (µs)", time_calls(lambda: small.evaluate(PROPAGATION_ENTRYPOINT, PROPAGATION), iterations))
    counted = summary(timings)

    relations = f"{TENANTS * RELATIONS_PER_TENANT // 1000}k relations"
    for label, swap_data in (("example bundle", data), (relations, large_data)):
        for how, swap in (
            ("prepare on the deciding thread", swap_inline),
            ("prepare on a worker thread", swap_worker),
            ("prepare_steps on the deciding thread", swap_steps),
        ):
            if swap is swap_steps and not hasattr(engine, "prepare_steps"):  # an older engine
                continue
            gap_ms, duration_ms = worst_gap_ms(swap, engine, modules, swap_data)
            rows.append((f"swap ({label}), {how}: max gap between decisions (ms)", f"{gap_ms:.2f}", "-"))
            rows.append((f"swap ({label}), {how}: swap duration (ms)", f"{duration_ms:.1f}", "-"))

    print(
        f"regorus policy benchmark: {args.bundle.name} (python {sys.version.split()[0]}, "
        f"{iterations:,} iterations after {WARMUP:,} warmup, worst of {SWAPS} swaps)\n"
    )
    print("| measurement | median | p99 |")
    print("|---|---:|---:|")
    for name, median, p99 in rows:
        print(f"| {name} | {median} | {p99} |")
    print(f"\n{counted} (the per-request rows)")
    print(f"total benchmark time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
