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

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenantguard.relations.reads import MemoryReads, TupleMeta
from tenantguard.schema import load
from tenantguard.schema.engine import Limits, SchemaEngine

from tests.schema.engine.agreement import answer, loadable_model, same_everywhere
from tests.schema.engine.differential import IDS, USERS, random_tuples

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


RANDOM_MODEL_STEPS = 5_000


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), dialect=st.sampled_from(["openfga", "spicedb"]),
       depth=st.sampled_from([None, 3, 5, 8]), size=st.integers(10, 40))
def test_memo_never_changes_an_answer_on_random_models(seed: int, dialect: str, depth: int | None,
                                                       size: int) -> None:
    rng = random.Random(seed)
    schema = loadable_model(rng)
    schema = dataclasses.replace(schema, dialect=dialect)  # the same graph under the other cycle rule
    # A small step budget: a cyclic graph under SpiceDB's rule (no cycle detection) otherwise
    # spends the default million steps (seconds) on every question before its depth error.
    limits = Limits(max_depth=depth, max_steps=RANDOM_MODEL_STEPS)
    on, off = SchemaEngine(schema, limits), SchemaEngine(schema, limits, memo=False)
    reads = MemoryReads((o, r, s, None) for o, r, s in random_tuples(rng, on, size))
    assert same_everywhere(on, off, reads) > 0


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
    assert same_everywhere(on, off, reads, context) > 0


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
    a = answer(lambda: on.lookup_resources(reads, "folder", "viewer", "user:anne").items)
    b = answer(lambda: off.lookup_resources(reads, "folder", "viewer", "user:anne").items)
    assert a == b
    assert answer(lambda: off.check(reads, "folder:f7", "viewer", "user:anne")) == ("error", "ResolutionTooComplex")
    assert answer(lambda: on.check(reads, "folder:f7", "viewer", "user:anne")) == ("error", "ResolutionTooComplex")
