"""The per-query memo never changes an answer: memo on equals memo off, for every question.

Random OpenFGA models (the differential run's grammar: usersets, wildcards, ``X from parent``,
``or``/``and``/``but not``) over random tuples, evaluated under both dialects' cycle rules
and under small depth limits (so a memo entry computed near the root is offered deep down,
where reusing it must not hide the depth error a fresh evaluation raises), plus a caveated
SpiceDB schema with tuple contexts and missing request context. Check, both lookups and
their order are compared; an error must be the same error.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenantguard.relations.reads import MemoryReads, TupleMeta
from tenantguard.schema import Schema, SchemaError, load
from tenantguard.schema.engine import EngineError, Limits, SchemaEngine

from tests.schema.engine.differential import IDS, USERS, random_model, random_tuples

CAVEATED = """caveat under_limit(amount int, limit int) { amount < limit }
definition user {}
definition group {
    relation member: user | user with under_limit | group#member
    relation banned: user with under_limit
    permission active = member - banned
}
definition doc {
    relation parent: doc
    relation viewer: user | user with under_limit | group#member | group#active
    permission view = viewer + parent->view
    permission strict = view & parent.all(view)
}
"""


def _answer(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except EngineError as e:
        return ("error", type(e).__name__)


_OVER_BUDGET = ("error", "QueryTooBroad")


def _agree(a: Any, b: Any) -> bool:
    """Equal answers, or one side ran out of steps: the step budget is a resource bound the memo
    is meant to change (it saves steps), so a budget error on either side proves nothing."""
    return a == b or _OVER_BUDGET in (a, b)


def _same_everywhere(on: SchemaEngine, off: SchemaEngine, reads: MemoryReads,
                     context: dict[str, Any] | None = None) -> int:
    """Asserts memo-on == memo-off for every check and lookup over the schema; returns how many
    single questions both sides answered within the step budget."""
    asked = 0
    for tname, t in on.schema.types.items():
        if tname == "user":
            continue
        for rname in t.relations:
            for user in (*USERS, "user:*"):
                if user != "user:*":
                    for oid in IDS:
                        obj = f"{tname}:{oid}"
                        a = _answer(lambda e=on, o=obj, r=rname, u=user: e.check(reads, o, r, u, context=context))
                        b = _answer(lambda e=off, o=obj, r=rname, u=user: e.check(reads, o, r, u, context=context))
                        assert _agree(a, b), (obj, rname, user, a, b)
                        asked += _OVER_BUDGET not in (a, b)
                a = _answer(lambda e=on, r=rname, u=user, tn=tname: e.lookup_resources(
                    reads, tn, r, u, context=context, page_size=1000).items)
                b = _answer(lambda e=off, r=rname, u=user, tn=tname: e.lookup_resources(
                    reads, tn, r, u, context=context, page_size=1000).items)
                assert _agree(a, b), (tname, rname, user, a, b)
                asked += _OVER_BUDGET not in (a, b)
            for oid in IDS:
                a = _answer(lambda e=on, o=f"{tname}:{oid}", r=rname: e.lookup_subjects(
                    reads, o, r, "user", context=context, page_size=1000).items)
                b = _answer(lambda e=off, o=f"{tname}:{oid}", r=rname: e.lookup_subjects(
                    reads, o, r, "user", context=context, page_size=1000).items)
                assert _agree(a, b), (tname, oid, rname, a, b)
                asked += _OVER_BUDGET not in (a, b)
        for oid, user in ((oid, user) for oid in IDS for user in USERS):
            # every relation of the object in one evaluation (input.permissions) == one check each
            together = _answer(lambda e=on, o=f"{tname}:{oid}", u=user, rs=list(t.relations): e.check_relations(
                reads, o, rs, u, context=context))
            if not isinstance(together, tuple):
                for rname, got in together.items():
                    alone = _answer(lambda o=f"{tname}:{oid}", r=rname, u=user: off.check(
                        reads, o, r, u, context=context))
                    assert _agree(got, alone), (oid, rname, got, alone)
                asked += 1
    return asked


RANDOM_MODEL_STEPS = 5_000


def _loadable_model(rng: random.Random) -> Schema:
    """The first model the grammar draws that loads (it draws many that OpenFGA refuses too)."""
    while True:
        try:
            return load(random_model(rng), "random.fga")
        except SchemaError:
            continue


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), dialect=st.sampled_from(["openfga", "spicedb"]),
       depth=st.sampled_from([None, 3, 5, 8]), size=st.integers(10, 40))
def test_memo_never_changes_an_answer_on_random_models(seed: int, dialect: str, depth: int | None,
                                                       size: int) -> None:
    rng = random.Random(seed)
    schema = _loadable_model(rng)
    schema = dataclasses.replace(schema, dialect=dialect)  # the same graph under the other cycle rule
    # A small step budget: a cyclic graph under SpiceDB's rule (no cycle detection) otherwise
    # spends the default million steps (seconds) on every question before its depth error.
    limits = Limits(max_depth=depth, max_steps=RANDOM_MODEL_STEPS)
    on, off = SchemaEngine(schema, limits), SchemaEngine(schema, limits, memo=False)
    reads = MemoryReads((o, r, s, None) for o, r, s in random_tuples(rng, on, size))
    assert _same_everywhere(on, off, reads) > 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), amount=st.sampled_from([None, 1, 50]))
def test_memo_never_changes_an_answer_with_caveats(seed: int, amount: int | None) -> None:
    rng = random.Random(seed)
    schema = load(CAVEATED, "caveated.zed")
    on, off = SchemaEngine(schema), SchemaEngine(schema, memo=False)
    reads = MemoryReads()
    for _ in range(rng.randint(3, 25)):
        obj_type = rng.choice(["group", "doc"])
        obj = f"{obj_type}:{rng.choice(IDS)}"
        if obj_type == "group":
            relation = rng.choice(["member", "banned"])
            subject = rng.choice([*USERS, f"group:{rng.choice(IDS)}#member"]) if relation == "member" \
                else rng.choice(USERS)
        else:
            relation = rng.choice(["parent", "viewer"])
            subject = f"doc:{rng.choice(IDS)}" if relation == "parent" else rng.choice(
                [*USERS, f"group:{rng.choice(IDS)}#member", f"group:{rng.choice(IDS)}#active"])
        caveated = subject.startswith("user:") and (relation == "banned" or rng.random() < 0.5)
        meta = TupleMeta("under_limit", {"limit": rng.choice([10, 100])}) if caveated else None
        if subject != f"{obj}#{relation}":
            reads.write(obj, relation, subject, meta)
    context = None if amount is None else {"amount": amount}
    assert _same_everywhere(on, off, reads, context) > 0


def test_a_memo_entry_is_not_reused_deeper_than_the_limit_allows() -> None:
    """A chain evaluated first from near its end, then asked from its start: the memo holds the
    tail, and reusing it at the deeper position must still raise the depth error."""
    schema = load("model\n  schema 1.1\ntype user\ntype folder\n  relations\n"
                  "    define parent: [folder]\n    define viewer: [user] or viewer from parent\n", "chain.fga")
    reads = MemoryReads()
    for i in range(1, 8):
        reads.write(f"folder:f{i}", "parent", f"folder:f{i - 1}")
    reads.write("folder:f0", "viewer", "user:anne")
    limits = Limits(max_depth=6)
    on, off = SchemaEngine(schema, limits), SchemaEngine(schema, limits, memo=False)
    assert on.check(reads, "folder:f2", "viewer", "user:anne").allowed
    # lookup_resources decides f0..f7 with one memo in walk order (f0 first), so each folder is
    # offered the entry of the one below it; from f6 on, that entry would end past the limit
    a = _answer(lambda: on.lookup_resources(reads, "folder", "viewer", "user:anne").items)
    b = _answer(lambda: off.lookup_resources(reads, "folder", "viewer", "user:anne").items)
    assert a == b
    assert _answer(lambda: off.check(reads, "folder:f7", "viewer", "user:anne")) == ("error", "ResolutionTooComplex")
    assert _answer(lambda: on.check(reads, "folder:f7", "viewer", "user:anne")) == ("error", "ResolutionTooComplex")
