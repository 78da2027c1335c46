"""A branch that runs into the depth limit does not decide alone (OpenFGA and SpiceDB evaluate
branches side by side: another branch's allow or deny still answers), and a cycle that fails
is not walked again and again (SpiceDB's dialect has no cycle cut)."""

from __future__ import annotations

import pytest
from tenantguard.relations.reads import MemoryReads
from tenantguard.schema import load
from tenantguard.schema.engine import Decision, Limits, ResolutionTooComplex, SchemaEngine

FGA = """model
  schema 1.1
type user
type folder
  relations
    define parent: [folder]
    define owner: [user]
    define blocked: [user]
    define view: view from parent or owner
    define strict: view from parent and blocked
"""

ZED = """definition user {}
definition folder {
    relation parent: folder
    relation viewer: user
    relation blocked: user
    permission view = parent->view + viewer
    permission strict = parent->view & blocked
}
"""


def _chain(length: int) -> MemoryReads:
    reads = MemoryReads()
    for i in range(1, length):
        reads.write(f"folder:f{i}", "parent", f"folder:f{i - 1}")
    return reads


def test_openfga_an_allowing_branch_wins_over_one_too_deep() -> None:
    engine = SchemaEngine(load(FGA, "m.fga"), Limits(max_depth=3))
    reads = _chain(8)
    reads.write("folder:f7", "owner", "user:anne")
    # `view from parent` is tried first and runs 7 levels deep; `owner` allows
    assert engine.check(reads, "folder:f7", "view", "user:anne").allowed
    with pytest.raises(ResolutionTooComplex):  # nothing else decides: the error stands
        engine.check(reads, "folder:f7", "view", "user:bob")


def test_openfga_a_denying_branch_of_an_intersection_wins_over_one_too_deep() -> None:
    engine = SchemaEngine(load(FGA, "m.fga"), Limits(max_depth=3))
    reads = _chain(8)
    assert engine.check(reads, "folder:f7", "strict", "user:anne").decision is Decision.DENIED
    reads.write("folder:f7", "blocked", "user:anne")
    with pytest.raises(ResolutionTooComplex):  # blocked holds, so only the deep branch could deny
        engine.check(reads, "folder:f7", "strict", "user:anne")


def test_spicedb_a_cycle_does_not_hide_a_grant_on_another_branch() -> None:
    engine = SchemaEngine(load(ZED, "m.zed"))
    reads = MemoryReads()
    reads.write("folder:a", "parent", "folder:a")  # a cycle: parent->view recurses to the depth limit
    reads.write("folder:a", "viewer", "user:anne")
    assert engine.check(reads, "folder:a", "view", "user:anne").allowed
    with pytest.raises(ResolutionTooComplex):
        engine.check(reads, "folder:a", "view", "user:bob")
    assert [i.id for i in engine.lookup_resources(reads, "folder", "view", "user:anne").items] == ["folder:a"]


def test_spicedb_a_failed_cycle_is_not_walked_again() -> None:
    """Two parents per folder, both in the cycle: without remembering where a node failed, the
    walk doubles at every level (2^50 nodes) and the step budget runs out (QueryTooBroad); with
    it, each (folder, depth) fails once and the answer is the depth error."""
    engine = SchemaEngine(load(ZED, "m.zed"), Limits(max_steps=20_000))
    reads = MemoryReads()
    for f in ("a", "b"):
        for parent in ("a", "b"):
            reads.write(f"folder:{f}", "parent", f"folder:{parent}")
    with pytest.raises(ResolutionTooComplex):
        engine.check(reads, "folder:a", "view", "user:anne")
