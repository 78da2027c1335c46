"""Cutting SpiceDB's cycles never changes an answer, and makes cyclic data cheap.

SpiceDB has no cycle detection: a check over cyclic tuples walks the cycle until the depth
limit (50) and answers with an error, which costs seconds of CPU when each level fans out. The
engine cuts a node met again on its own path with that same error at once. These tests hold
the cut engine equal to the walking one (the reference, ``cut_cycles=False``, memo off) over
random models and tuples, most of them cyclic, under depth limits small enough for the
reference to finish, and show the cost of a fanned-out cycle at the real limit.
"""

from __future__ import annotations

import dataclasses
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenantguard.relations.reads import MemoryReads, TupleMeta
from tenantguard.schema import load
from tenantguard.schema.engine import Limits, SchemaEngine

from tests.schema.engine.agreement import answer, loadable_model, same_everywhere
from tests.schema.engine.differential import random_tuples

REFERENCE_STEPS = 20_000  # the walking reference is exponential in depth on fanned-out cycles


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.sampled_from([2, 3, 4, 6, 9]), size=st.integers(10, 40),
       track_from=st.sampled_from([0, 1, 3]))
def test_the_cut_never_changes_an_answer_on_random_models(seed: int, depth: int, size: int, track_from: int) -> None:
    """``track_from`` 0 tracks every path from the top; 1 and 3 walk untracked first and ask again
    tracked once a walk gets that deep (what TRACK_FROM does at SpiceDB's real depth of 50)."""
    rng = random.Random(seed)
    schema = dataclasses.replace(loadable_model(rng), dialect="spicedb")
    limits = Limits(max_depth=depth, max_steps=REFERENCE_STEPS)
    cut = SchemaEngine(schema, limits, track_from=track_from)
    walk = SchemaEngine(schema, limits, memo=False, cut_cycles=False)
    reads = MemoryReads((o, r, s, None) for o, r, s in random_tuples(rng, cut, size))
    assert same_everywhere(cut, walk, reads) > 0


CYCLIC = """caveat under_limit(amount int, limit int) { amount < limit }
definition user {}
definition group {
    relation member: user | user with under_limit | group#member
    relation banned: user with under_limit
    permission active = member - banned
}
definition doc {
    relation parent: doc
    relation viewer: user | group#member | group#active
    permission view = viewer + parent->view
    permission strict = view & parent.all(view)
    permission open = view - parent->strict
}
"""


def _ring(reads: MemoryReads, n: int, fan: int) -> None:
    """Docs d0..d(n-1), each with ``fan`` parents further round the ring; groups likewise."""
    for i in range(n):
        for step in range(1, fan + 1):
            reads.write(f"doc:d{i}", "parent", f"doc:d{(i + step) % n}")
            reads.write(f"group:g{i}", "member", f"group:g{(i + step) % n}#member")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.sampled_from([3, 5, 7]), amount=st.sampled_from([None, 1, 50]))
def test_the_cut_never_changes_an_answer_with_caveats_and_exclusions(seed: int, depth: int,
                                                                     amount: int | None) -> None:
    """Cycles through arrows, ``.all``, exclusions and caveated grants: a cut branch must not turn
    an exclusion's subtracted side into "denied", nor an intersection's into "allowed"."""
    rng = random.Random(seed)
    schema = load(CYCLIC, "cyclic.zed")
    limits = Limits(max_depth=depth, max_steps=REFERENCE_STEPS)
    cut = SchemaEngine(schema, limits, track_from=rng.choice([0, 2]))
    walk = SchemaEngine(schema, limits, memo=False, cut_cycles=False)
    reads = MemoryReads()
    _ring(reads, 3, rng.randint(1, 2))
    for _ in range(rng.randint(0, 6)):
        user = f"user:{rng.choice('abc')}"
        meta = TupleMeta("under_limit", {"limit": 10}) if rng.random() < 0.5 else None
        reads.write(f"group:g{rng.randrange(3)}", rng.choice(["member", "banned"]),
                    user, meta if meta else TupleMeta("under_limit", {"limit": 10}))
        reads.write(f"doc:d{rng.randrange(3)}", "viewer",
                    rng.choice([user, f"group:g{rng.randrange(3)}#member", f"group:g{rng.randrange(3)}#active"]))
    context = None if amount is None else {"amount": amount}
    assert same_everywhere(cut, walk, reads, context) > 0


# Drawn by the random grammar (seed 34) and the case that pinned a core in CI: cycles through
# folder parents, usersets and an intersection with an arrow, under SpiceDB's rule.
PINNED_MODEL = """model
  schema 1.1
type user
type group
  relations
    define r1: [folder#r2] or r2
    define r2: [user:*, group#r1]
type folder
  relations
    define parent: [folder]
    define r1: [user, user:*]
    define r2: r3 and r3 from parent
    define r3: [folder#r2, group#r1] or r1 from parent
"""
PINNED_TUPLES = """folder:a parent folder:a|folder:a parent folder:b|folder:a r1 user:*|folder:a r3 folder:c#r2
folder:a r3 group:b#r1|folder:a r3 group:c#r1|folder:b parent folder:c|folder:b r1 user:c
folder:b r3 folder:a#r2|folder:b r3 folder:b#r2|folder:b r3 folder:c#r2|folder:b r3 group:a#r1
folder:b r3 group:c#r1|folder:c parent folder:a|folder:c r3 folder:a#r2|folder:c r3 group:c#r1
group:a r1 folder:b#r2|group:a r1 folder:c#r2|group:b r1 folder:a#r2|group:b r2 user:*
group:c r1 folder:b#r2|group:c r2 user:*"""


def test_a_cyclic_model_that_pinned_a_core_answers_within_a_few_thousand_steps() -> None:
    """Walked depth-first to SpiceDB's depth 50, every question here spends more than the step
    budget (the first branch's cycles are explored to the bottom before the granting branch is
    tried); cut, each is answered within 5,000 steps, as the walk answers it at a depth it can
    finish (and as SpiceDB, whose branches run side by side, answers it)."""
    schema = dataclasses.replace(load(PINNED_MODEL, "pinned.fga"), dialect="spicedb")
    reads = MemoryReads()
    for line in PINNED_TUPLES.replace("\n", "|").split("|"):
        obj, relation, subject = line.split(" ")
        reads.write(obj, relation, subject)
    few, shallow = Limits(max_steps=5_000), Limits(max_depth=8)
    for question in (("folder:b", "r2", "user:b"), ("group:a", "r1", "user:a"), ("folder:c", "r3", "user:c")):
        assert answer(lambda q=question: SchemaEngine(schema, Limits(max_steps=200_000), cut_cycles=False).check(
            reads, *q)) == ("error", "QueryTooBroad")
        walked = SchemaEngine(schema, shallow, cut_cycles=False).check(reads, *question)
        assert walked.allowed
        assert SchemaEngine(schema, few).check(reads, *question) == walked


def test_a_cycle_with_no_grant_ends_in_spicedb_s_depth_error_either_way() -> None:
    schema = load(CYCLIC, "cyclic.zed")
    reads = MemoryReads()
    _ring(reads, 6, 2)
    for relation in ("view", "strict", "open"):
        cut = answer(lambda r=relation: SchemaEngine(schema, Limits(max_steps=2_000)).check(
            reads, "doc:d0", r, "user:a"))
        walked = answer(lambda r=relation: SchemaEngine(schema, cut_cycles=False).check(reads, "doc:d0", r, "user:a"))
        assert cut == walked == ("error", "ResolutionTooComplex"), relation
