"""Search and lookup: the graph proposes, the policy decides, one pinned state per page.

Resource lookup over an index of N tuples (1,000,000 by default) for subjects who reach
10, 1,000 and 10,000 documents (half directly, half through a group), first page of 100
(a new search each time, so the pinning and the walk are paid every time), against the
same question asked as one check per reachable document; subject lookup for a document
with 1,000 members (half through a group), first page of 100 and the whole list.
The policy grants through ``tg.related`` (it never reads ``input.relations``).

Run: python bench/bench_search.py [--quick]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from stats import timed  # bench/stats.py, beside this script
from tenantguard.decision.core import RELATED_EXTENSION, DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.policy.engine import RegorusEngine
from tenantguard.relations import RelationIndex
from tenantguard.search import Question, Searcher

POLICY = """package bench
import rego.v1
default decision := false
decision if tg.related(concat(":", [input.resource.type, input.resource.id]), "viewer",
                       concat(":", [input.subject.type, input.subject.id]))
"""


def build(total: int, reach: tuple[int, ...], members: int) -> RelationIndex:
    rng = random.Random(7)
    tuples: list[tuple[str, str, str, str]] = []
    for n in reach:
        who = f"user:reach{n}"
        tuples += [("acme", f"doc:r{n}-{i}", "viewer", who) for i in range(n // 2)]
        tuples.append(("acme", f"group:g{n}", "member", who))
        tuples += [("acme", f"doc:r{n}-{i}", "viewer", f"group:g{n}#member") for i in range(n // 2, n)]
    tuples += [("acme", "doc:popular", "viewer", f"user:m{i}") for i in range(members // 2)]
    tuples.append(("acme", "doc:popular", "viewer", "group:crowd#member"))
    tuples += [("acme", "group:crowd", "member", f"user:c{i}") for i in range(members - members // 2)]
    users = max(1, total // 20)
    while len(tuples) < total:  # the background: other users' documents
        tuples.append(("acme", f"doc:b{len(tuples)}", "viewer", f"user:u{rng.randrange(users)}"))
    return RelationIndex.from_trusted(1, tuples)


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def row(label: str, samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return f"| {label} | {len(ms)} | {statistics.median(ms):.2f} | {percentile(ms, 99):.2f} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100,000 tuples, fewer runs (seconds)")
    ns = parser.parse_args()
    total, runs, reach = (100_000, 20, (10, 1000, 10_000)) if ns.quick else (1_000_000, 200, (10, 1000, 10_000))
    started = time.perf_counter()
    index = build(total, reach, 1000)
    built = time.perf_counter() - started
    prepared = RegorusEngine().prepare({"b.rego": POLICY}, {}, extensions=RELATED_EXTENSION,
                                       entrypoints=("data.bench.decision",))
    core = DecisionCore("bench", index)
    core.activate(PolicyRevision("1", prepared, entrypoint="data.bench.decision"))
    searcher = Searcher(core)
    print(f"{index.count():,} tuples built in {built:.1f} s\n")
    print("| question | runs | median ms | p99 ms |")
    print("|---|---|---|---|")
    for n in reach:
        subject = {"type": "user", "id": f"reach{n}", "properties": {"tenant_id": "acme"}}
        question = Question(subject, {"name": "read"}, {"type": "doc"})

        def first_page(q: Question = question, n: int = n) -> object:
            searcher.states = type(searcher.states)(searcher.limits, time.monotonic)  # a new pin every time
            page = searcher.resources(q, limit=100)
            assert len(page.results) == min(100, n)
            return page

        print(row(f"resource lookup, subject reaching {n:,}: first page of 100", timed(first_page, runs)), flush=True)
        if n == reach[-1]:
            docs = [f"r{n}-{i}" for i in range(n)]

            def as_checks(s: dict[str, object] = subject, d: list[str] = docs) -> None:
                for doc in d:
                    assert core.decide(DecisionRequest.from_wire({"subject": s, "action": {"name": "read"},
                                                                  "resource": {"type": "doc", "id": doc}})).allow

            print(row(f"the same as {n:,} checks (every reachable document)", timed(as_checks, max(3, runs // 40))),
                  flush=True)

            def whole(q: Question = question, n: int = n) -> None:
                token = None
                got = 0
                while True:
                    page = searcher.resources(q, limit=1000, token=token)
                    got += len(page.results)
                    token = page.next_token
                    if not token:
                        break
                assert got == n

            print(row(f"resource lookup, all {n:,} in pages of 1,000", timed(whole, max(3, runs // 40))), flush=True)
    members = Question({"type": "user", "properties": {}}, {"name": "read"}, {"type": "doc", "id": "popular"})

    def subjects_first() -> object:
        searcher.states = type(searcher.states)(searcher.limits, time.monotonic)
        return searcher.subjects(members, "acme", limit=100)

    def subjects_all() -> None:
        token, got = None, 0
        while True:
            page = searcher.subjects(members, "acme", limit=1000, token=token)
            got += len(page.results)
            token = page.next_token
            if not token:
                break
        assert got == 1000

    print(row("subject lookup, document with 1,000 members: first page of 100", timed(subjects_first, runs)))
    print(row("subject lookup, all 1,000 members", timed(subjects_all, max(3, runs // 10))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
