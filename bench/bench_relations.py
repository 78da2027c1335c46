"""Relations index at scale: load time, memory, query latency, snapshot cost.

Run: python bench/bench_relations.py [--count N] [--quick] [--against REV ... [--rounds N]]
Default 1,000,000 tuples over 10,000 tenants (100 per tenant: 30 users, 5 groups, one
group nested in another, 12 projects granted to users and to groups). Every id is unique
to its tenant (users are email-shaped), so interning only helps where real data would let
it: within a tenant, never across tenants.
Targets: whole-process RSS under 120 MB and load under 20 s for 1M tuples.

``--against REV`` compares implementations side by side in one run: the relations package
as committed at REV (``git show REV:sdk/tenantguard/relations/*.py`` into a temporary
package, imported as ``tenantguard._relations_at_rev`` so its ``..errors``/``..fsutil``
imports resolve) and the working tree's, each measured in its own subprocess so RSS is
clean. Nothing of the old code is kept in the repository.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import platform
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PACKAGE_PATH = "sdk/tenantguard/relations"
WORKTREE = "worktree"

# Bound by use_package(): the working tree's relations package unless --impl says otherwise.
ChangeBatch: Any = None
RelationChange: Any = None
RelationIndex: Any = None
Relationship: Any = None
read_snapshot: Any = None
write_snapshot: Any = None

NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
PER_TENANT = 100
USERS, GROUPS, PROJECTS = 30, 5, 12
Parts = tuple[str, str, str, str]


def package_at(rev: str, into: Path) -> ModuleType:
    """The relations package as committed at ``rev``, imported from a temporary directory."""
    def git(*args: str) -> bytes:
        return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True).stdout

    names = git("ls-tree", "--name-only", f"{rev}:{PACKAGE_PATH}").decode().split()
    for name in names:
        if name.endswith(".py"):
            (into / name).write_bytes(git("show", f"{rev}:{PACKAGE_PATH}/{name}"))
    modname = "tenantguard._relations_at_rev"
    spec = importlib.util.spec_from_file_location(
        modname, into / "__init__.py", submodule_search_locations=[str(into)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    return module


def use_package(module: ModuleType) -> None:
    global ChangeBatch, RelationChange, RelationIndex, Relationship, read_snapshot, write_snapshot
    ChangeBatch, RelationChange = module.ChangeBatch, module.RelationChange
    RelationIndex, Relationship = module.RelationIndex, module.Relationship
    read_snapshot, write_snapshot = module.read_snapshot, module.write_snapshot


def rss_mb() -> float:
    """Current resident set size (VmRSS), falling back to the peak from getrusage."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def user(t: int, i: int) -> str:
    return f"user:u{i}.t{t}@example.com"


def group(t: int, i: int) -> str:
    return f"group:{t}-g{i}"


def tenant_tuples(t: int, rng: random.Random) -> list[Parts]:
    """PER_TENANT distinct tuples of one tenant: memberships, one nesting, project grants."""
    tenant = f"t{t:05d}"
    out: dict[Parts, None] = {(tenant, group(t, 1), "member", f"{group(t, 0)}#member"): None}
    for i in range(USERS):
        out[(tenant, group(t, i % GROUPS), "member", user(t, i))] = None
    relations = ("viewer", "editor", "owner")
    while len(out) < PER_TENANT:
        group_grant = rng.random() < 0.25
        subject = f"{group(t, rng.randrange(GROUPS))}#member" if group_grant else None
        subject = subject or user(t, rng.randrange(USERS))
        project = f"project:{t}-p{rng.randrange(PROJECTS)}"
        out[(tenant, project, rng.choice(relations), subject)] = None
    return list(out)


def all_tuples(count: int, seed: int = 7) -> Iterator[Parts]:
    rng = random.Random(seed)
    for t in range(count // PER_TENANT):
        yield from tenant_tuples(t, rng)


def batches(count: int, size: int = 1000) -> Iterator[ChangeBatch]:
    """Validated batches, built lazily so the input never sits in memory all at once."""
    chunk: list[RelationChange] = []
    seq = 0
    for parts in all_tuples(count):
        chunk.append(RelationChange("write", Relationship(*parts)))
        if len(chunk) == size:
            seq += 1
            yield ChangeBatch(seq, tuple(chunk))
            chunk = []
    if chunk:
        yield ChangeBatch(seq + 1, tuple(chunk))


def latency(fn: Callable[..., object], calls: list[tuple[str, ...]]) -> tuple[float, float]:
    """Median and p99 in microseconds over single timed calls; arguments built beforehand."""
    samples = []
    for args in calls:
        start = time.perf_counter_ns()
        fn(*args)
        samples.append((time.perf_counter_ns() - start) / 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def queries(
    index: RelationIndex, tenants: int, n: int
) -> dict[str, tuple[Callable[..., object], list[tuple[str, ...]]]]:
    """Each query with n pre-built argument tuples over random tenants."""
    rng = random.Random(11)
    picks = [(f"t{t:05d}", t) for t in (rng.randrange(tenants) for _ in range(n))]
    users = [rng.randrange(USERS) for _ in range(n)]
    projects = [f"project:{t}-p{rng.randrange(PROJECTS)}" for _, t in picks]
    return {
        "relations_of(user)": (
            index.relations_of,
            [(tn, user(t, u)) for (tn, t), u in zip(picks, users, strict=True)],
        ),
        "check (direct hit)": (
            index.check,
            [(tn, group(t, 1), "member", f"{group(t, 0)}#member") for tn, t in picks],
        ),
        "check (via nested group: g1 <- g0 <- user)": (
            index.check,
            [(tn, group(t, 1), "member", user(t, 0)) for tn, t in picks],
        ),
        "check (random project/user, hit or miss)": (
            index.check,
            [
                (tn, p, "viewer", user(t, u))
                for (tn, t), p, u in zip(picks, projects, users, strict=True)
            ],
        ),
    }


def incremental_batch(index: RelationIndex, tenants: int, rng: random.Random) -> ChangeBatch:
    """100 writes spread over random tenants, as a steady-state plane would send."""
    changes = []
    for _ in range(100):
        t = rng.randrange(tenants)
        project = f"project:{t}-p{rng.randrange(99)}"
        rel = Relationship(f"t{t:05d}", project, "viewer", user(t, 99))
        changes.append(RelationChange("write", rel))
    return ChangeBatch(index.applied_seq + 1, tuple(changes))


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def load_and_query(count: int, iterations: int, snap: Path) -> tuple[list[tuple[str, str]], str]:
    """Everything done on the batch-loaded index; it is dropped when this returns."""
    rows: list[tuple[str, str]] = []
    tenants = count // PER_TENANT
    index = RelationIndex()
    _, load_s = timed(lambda: [index.apply(b) for b in batches(count)])
    gc.collect()
    rows.append(("load via 1,000-change batches (parse+validate+apply)", f"{load_s:.1f} s"))
    rows.append(("RSS after load (whole process)", f"{rss_mb():.0f} MB"))
    rows.append(("peak RSS during load", f"{peak_mb():.0f} MB"))
    rows.append(("index count / applied_seq", f"{index.count():,} / {index.applied_seq:,}"))

    assert index.check("t00000", group(0, 1), "member", user(0, 0)), "nested expansion broken"
    for name, (fn, calls) in queries(index, tenants, iterations).items():
        med, p99 = latency(fn, calls)
        rows.append((f"{name} median / p99", f"{med:.1f} / {p99:.1f} µs"))

    rng = random.Random(5)
    apply_ms = []
    for _ in range(20):
        batch = incremental_batch(index, tenants, rng)
        _, secs = timed(lambda b=batch: index.apply(b))
        apply_ms.append(secs * 1000)
    median_ms = statistics.median(apply_ms)
    rows.append(("apply a 100-change batch to the loaded index, median", f"{median_ms:.2f} ms"))

    digest, digest_s = timed(index.digest)
    rows.append(("digest()", f"{digest_s:.2f} s"))
    _, write_s = timed(lambda: write_snapshot(index, snap))
    size = snap.stat().st_size
    rows.append(("snapshot write (atomic, gzip)", f"{write_s:.2f} s"))
    rows.append(("snapshot size", f"{size / 1024 / 1024:.1f} MB ({size / count:.1f} B/tuple)"))
    return rows, str(digest)


def run(count: int, iterations: int) -> list[tuple[str, str]]:
    gc.collect()
    rows = [
        ("tuples / tenants", f"{count:,} / {count // PER_TENANT:,}"),
        ("RSS before load", f"{rss_mb():.0f} MB"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "relations.snap"
        measured, digest = load_and_query(count, iterations, snap)
        rows += measured
        gc.collect()
        loaded, read_s = timed(lambda: read_snapshot(snap))
    assert isinstance(loaded, RelationIndex)
    assert loaded.digest() == digest, "snapshot round-trip changed the state"
    rows.append(("snapshot read (verify+validate+load)", f"{read_s:.2f} s"))
    rows.append(("peak RSS (whole run)", f"{peak_mb():.0f} MB"))
    return rows


def measured_in_subprocess(impl: str, count: int, iterations: int) -> list[tuple[str, str]]:
    """One implementation's rows, measured in a fresh interpreter (clean RSS, own heap)."""
    cmd = [sys.executable, __file__, "--impl", impl, "--json", "--count", str(count),
           "--iterations", str(iterations)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [tuple(row) for row in json.loads(out.splitlines()[-1])]  # type: ignore[misc]


def median_cell(values: list[str]) -> str:
    """The per-position median of the numbers in one cell over rounds ("5.7 / 23.8 µs")."""
    numbers = [[float(n.replace(",", "")) for n in NUMBER.findall(v)] for v in values]
    if len({len(n) for n in numbers}) != 1:
        return values[-1]
    medians = iter(statistics.median(col) for col in zip(*numbers, strict=True))
    template = values[-1]

    def put(match: re.Match[str]) -> str:
        digits = match.group(0).replace(",", "")
        decimals = len(digits.partition(".")[2])
        return f"{next(medians):,.{decimals}f}" if "," in match.group(0) else f"{next(medians):.{decimals}f}"

    return NUMBER.sub(put, template)


def compare(revs: list[str], count: int, iterations: int, rounds: int) -> None:
    impls = [*revs, WORKTREE]
    cells: dict[str, dict[str, list[str]]] = {impl: {} for impl in impls}
    for r in range(rounds):  # one implementation at a time, alternating, so load drifts hit all alike
        for impl in impls if r % 2 == 0 else reversed(impls):
            print(f"round {r + 1}/{rounds}: measuring {impl} ...", file=sys.stderr, flush=True)
            for name, value in measured_in_subprocess(impl, count, iterations):
                cells[impl].setdefault(name, []).append(value)
    print(f"Python {sys.version.split()[0]}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())} at the end; "
          f"{'median of ' + str(rounds) + ' alternating rounds' if rounds > 1 else 'one round'}\n")
    print("| measure | " + " | ".join(impls) + " |")
    print("|---|" + "---:|" * len(impls))
    for name in cells[WORKTREE]:
        print(f"| {name} | " + " | ".join(
            median_cell(cells[impl][name]) if name in cells[impl] else "-" for impl in impls
        ) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 tuples (CI smoke)")
    parser.add_argument("--iterations", type=int, default=20_000)
    parser.add_argument("--against", action="append", default=[], metavar="REV",
                        help="also measure the relations package at this git revision (repeatable)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --against: alternate the implementations this many times, report medians")
    parser.add_argument("--impl", default=WORKTREE, help=argparse.SUPPRESS)  # REV or worktree
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    count = 100_000 if args.quick else args.count
    if args.against:
        compare(args.against, count, args.iterations, args.rounds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        if args.impl == WORKTREE:
            use_package(importlib.import_module("tenantguard.relations"))
        else:
            use_package(package_at(args.impl, Path(tmp)))
        rows = run(count, args.iterations)
    if args.json:
        print(json.dumps(rows))
        return
    print(f"Python {sys.version.split()[0]}, {platform.machine()}, {os.cpu_count()} CPUs\n")
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
