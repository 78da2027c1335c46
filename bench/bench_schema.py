"""Schema engine costs over MemoryReads: a check through a 3-level folder hierarchy with 2
levels of nested groups against a direct-tuple check, and the first page of 100 of
lookup_resources for a subject reaching 10,000 documents, and a check through a group of
50,000 members beside the same check reading every member (how the engine read a relation
before its point reads). Medians and p99s in microseconds.

Run: python bench/bench_schema.py [--iterations N]
(MemoryReads, not the compact index: this measures the engine's own work; the index's reads
are measured in bench_relations.py.)
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Iterator

from stats import measure  # bench/stats.py, beside this script
from tenantguard.relations.reads import Fact, MemoryReads
from tenantguard.schema import load
from tenantguard.schema.engine import SchemaEngine

MODEL = """model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define parent: [folder]
    define viewer: [user, group#member] or viewer from parent
type doc
  relations
    define parent: [folder]
    define viewer: [user, group#member] or viewer from parent
"""


def build(docs: int) -> MemoryReads:
    r = MemoryReads()
    r.write("group:inner", "member", "user:anne")  # 2 levels of nested groups
    r.write("group:outer", "member", "group:inner#member")
    r.write("folder:root", "viewer", "group:outer#member")
    per_leaf = 100
    for m in range(docs // per_leaf):
        r.write(f"folder:mid{m % 10}", "parent", "folder:root")
        r.write(f"folder:leaf{m}", "parent", f"folder:mid{m % 10}")
        for d in range(per_leaf):
            r.write(f"doc:{m}-{d}", "parent", f"folder:leaf{m}")
            r.write(f"doc:{m}-{d}", "viewer", f"user:u{d}")  # noise on every document
    r.write("doc:direct", "viewer", "user:anne")
    return r


class ScanReads(MemoryReads):
    """The point and userset reads answered by reading every subject of the relation."""

    def find(self, object: str, relation: str, subject: str) -> Fact | None:
        return next(((s, m) for s, m in self.subjects(object, relation) if s == subject), None)

    def usersets(self, object: str, relation: str) -> Iterator[Fact]:
        return ((s, m) for s, m in self.subjects(object, relation) if "#" in s)


def big_group(reads: MemoryReads, members: int) -> MemoryReads:
    for i in range(members):
        reads.write("group:all", "member", f"user:m{i}")
    reads.write("folder:open", "viewer", "group:all#member")
    reads.write("doc:open", "parent", "folder:open")
    return reads


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=2000)
    n = ap.parse_args().iterations
    schema = load(MODEL, "bench.fga")
    engine = SchemaEngine(schema)
    fresh = SchemaEngine(schema, memo=False)  # a lookup deciding each candidate afresh: what the memo saves
    reads = build(10_000)
    print(f"python {platform.python_version()}, {len(reads)} tuples, {n} iterations; microseconds (median / p99)")
    assert engine.check(reads, "doc:0-0", "viewer", "user:anne").allowed
    assert engine.check(reads, "doc:direct", "viewer", "user:anne").allowed
    rows = [
        ("check, direct tuple", lambda: engine.check(reads, "doc:direct", "viewer", "user:anne")),
        ("check, 3 folders + 2 nested groups", lambda: engine.check(reads, "doc:57-3", "viewer", "user:anne")),
        ("check, denied (same walk)", lambda: engine.check(reads, "doc:57-3", "viewer", "user:zed")),
    ]
    for name, fn in rows:
        med, p99 = measure(fn, n)
        print(f"{name:60s} {med:9.1f} / {p99:9.1f}")
    page = engine.lookup_resources(reads, "doc", "viewer", "user:anne", page_size=100)
    assert len(page.items) == 100 and page.cursor is not None
    med, p99 = measure(lambda: engine.lookup_resources(reads, "doc", "viewer", "user:anne", page_size=100),
                       max(20, n // 20), warmup=5)
    print(f"{'lookup_resources, first 100 of 10,001':60s} {med:9.1f} / {p99:9.1f}")
    med, p99 = measure(lambda: fresh.lookup_resources(reads, "doc", "viewer", "user:anne", page_size=100),
                       max(20, n // 20), warmup=5)
    print(f"{'lookup_resources, first 100, memo off':60s} {med:9.1f} / {p99:9.1f}")
    members = 50_000
    point, scan = big_group(MemoryReads(), members), big_group(ScanReads(), members)
    for name, r in (("point reads", point), ("reading every member", scan)):
        for who, subject in (("member", f"user:m{members - 1}"), ("non-member", "user:zed")):
            assert engine.check(r, "doc:open", "viewer", subject).allowed == (who == "member")
            med, p99 = measure(lambda r=r, s=subject: engine.check(r, "doc:open", "viewer", s),
                               n if r is point else max(5, n // 200))
            print(f"{f'check via group of {members:,}, {who}, {name}':60s} {med:9.1f} / {p99:9.1f}")


if __name__ == "__main__":
    main()
