"""The compiled check never changes an answer: compiled equals the interpreter, for every question.

``SchemaEngine.check`` runs the compiled walk (``schema/engine/compiled.py``); the interpreter
(``compiled=False``) is its reference. Compared over random models of both dialects: OpenFGA's
grammar (usersets, wildcards, ``X from parent``, ``or``/``and``/``but not``) evaluated under
each dialect's cycle rule, small depth limits, every depth at which a SpiceDB walk starts
tracking its path and the uncut walk; SpiceDB's grammar (caveats with partial evaluation,
expiry, wildcards, userset parents under arrows, ``.all`` arrows, ``+ & -``); and an OpenFGA
model with conditions (a declared parameter missing answers conditional). Every object,
relation and subject (plain users, the wildcard, usersets) is asked, and the answers must be
equal exactly, errors included: both walks spend the same steps, so even running out of the
step budget must happen on the same questions. Each object's relations are also asked together
of the interpreter with its memo (``check_relations``), which must agree too (there the memo
may save the steps a budget error needs).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenantguard.relations.reads import MemoryReads, TupleMeta
from tenantguard.schema import Schema, SchemaError, load
from tenantguard.schema.engine import Limits, SchemaEngine

from tests.schema.engine import spicedb_differential
from tests.schema.engine.agreement import agree, answer, loadable_model
from tests.schema.engine.differential import IDS, USERS, random_tuples

SUBJECTS = (*USERS, "user:*", "user:nobody", "group:a#r1", "group:b#member", "folder:a#r2", "group:c#member")
NOW = 1_000.0


def same_checks(schema: Schema, limits: Limits, reads: MemoryReads, *, contexts: tuple[Any, ...] = (None,),
                **options: Any) -> int:
    """Asserts the compiled check answers as the interpreter every question over ``schema``;
    returns how many were answered (not errors)."""
    compiled = SchemaEngine(schema, limits, **options)
    interpreted = SchemaEngine(schema, limits, compiled=False, **options)
    answered = 0
    subjects = [s for s in SUBJECTS if "#" not in s or schema.relation(s.partition(":")[0], s.partition("#")[2])]
    for tname, t in schema.types.items():
        for rname in t.relations:
            for oid in IDS:
                obj = f"{tname}:{oid}"
                for subject in subjects:
                    for context in contexts:
                        a = answer(lambda e=compiled, o=obj, r=rname, s=subject, c=context: e.check(
                            reads, o, r, s, context=c, now=NOW))
                        b = answer(lambda e=interpreted, o=obj, r=rname, s=subject, c=context: e.check(
                            reads, o, r, s, context=c, now=NOW))
                        assert a == b, (obj, rname, subject, context, a, b)
                        answered += not isinstance(a, tuple)
            # the interpreter with its memo (check_relations: every relation in one evaluation)
            for subject in subjects:
                for context in contexts:
                    together = answer(lambda o=obj, s=subject, c=context, rs=list(t.relations):
                                      interpreted.check_relations(reads, o, rs, s, context=c, now=NOW))
                    if isinstance(together, tuple):
                        continue
                    for rname, got in together.items():
                        alone = answer(lambda o=obj, r=rname, s=subject, c=context: compiled.check(
                            reads, o, r, s, context=c, now=NOW))
                        assert agree(got, alone), (obj, rname, subject, context, got, alone)
    return answered


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), dialect=st.sampled_from(["openfga", "spicedb"]),
       depth=st.sampled_from([None, 2, 3, 5, 8]), size=st.integers(10, 40),
       track_from=st.sampled_from([0, 1, 3, 12]), cut=st.booleans(), steps=st.sampled_from([3_000, 25, 8]))
def test_compiled_equals_the_interpreter_on_random_models(seed: int, dialect: str, depth: int | None, size: int,
                                                          track_from: int, cut: bool, steps: int) -> None:
    """OpenFGA's grammar under both cycle rules; SpiceDB's walk tracked from several depths (the
    hand-over to the interpreter) and uncut (walked to the depth limit); a step budget small
    enough to run out mid-walk, at the same step."""
    rng = random.Random(seed)
    schema = dataclasses.replace(loadable_model(rng), dialect=dialect)
    limits = Limits(max_depth=depth, max_steps=steps)
    engine = SchemaEngine(schema, limits)
    reads = MemoryReads((o, r, s, None) for o, r, s in random_tuples(rng, engine, size))
    assert same_checks(schema, limits, reads, track_from=track_from, cut_cycles=cut) > 0


def _spicedb_schema(rng: random.Random) -> Schema:
    while True:
        try:
            return load(spicedb_differential.random_schema(rng), "random.zed")
        except SchemaError:
            continue


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.sampled_from([None, 3, 6]), size=st.integers(5, 40),
       steps=st.sampled_from([5_000, 25, 8]))
def test_compiled_equals_the_interpreter_on_random_spicedb_schemas(seed: int, depth: int | None, size: int,
                                                                   steps: int) -> None:
    """Caveats (partial evaluation: no context, ``amount`` below and above the limit), expiry
    (some tuples expired at the question's time), wildcards, userset parents under arrows and
    ``.all`` arrows."""
    rng = random.Random(seed)
    schema = _spicedb_schema(rng)
    limits = Limits(max_depth=depth, max_steps=steps)
    reads = MemoryReads()
    for obj, relation, subject, meta in spicedb_differential.random_tuples(rng, SchemaEngine(schema, limits), size):
        if rng.random() < 0.25:  # expiring: half already gone at NOW
            meta = TupleMeta(meta.condition if meta else None, meta.context if meta else {},
                             expires_at=rng.choice([NOW - 1, NOW, NOW + 1]))
        reads.write(obj, relation, subject, meta)
    contexts = tuple(spicedb_differential.CONTEXTS)
    assert same_checks(schema, limits, reads, contexts=contexts) >= 0


OPENFGA_CONDITIONS = """model
  schema 1.1
type user
type group
  relations
    define member: [user, user with either, group#member]
    define blocked: [user, user with either]
type folder
  relations
    define parent: [folder, folder with either]
    define viewer: [user, user:*, user with either, group#member, group#member with either] or viewer from parent
    define blocked: [user with either]
    define editor: [user, group#member] and viewer
    define can_view: viewer but not blocked
type doc
  relations
    define parent: [folder, folder with either]
    define viewer: [user, user with either, group#member with either] or viewer from parent
    define can_view: viewer but not blocked from parent
    define can_edit: editor from parent and can_view
condition either(x: int, y: int) {
  x < 100 || y < 50
}
"""


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), size=st.integers(5, 40))
def test_compiled_equals_the_interpreter_with_openfga_conditions(seed: int, size: int) -> None:
    """OpenFGA's rule: any declared parameter missing from both contexts answers conditional,
    even where the expression could decide; tuple contexts fill some parameters."""
    rng = random.Random(seed)
    schema = load(OPENFGA_CONDITIONS, "conditions.fga")
    reads = MemoryReads()
    shapes = [(t, r, ref) for t, td in schema.types.items() for r, rel in td.relations.items() for ref in rel.allowed]
    for _ in range(size):
        t, r, ref = rng.choice(shapes)
        subject = f"{ref.type}:*" if ref.wildcard else f"{ref.type}:{rng.choice(IDS)}" + (
            f"#{ref.relation}" if ref.relation else "")
        obj = f"{t}:{rng.choice(IDS)}"
        if subject == f"{obj}#{r}":
            continue
        meta = None
        if ref.condition:
            meta = TupleMeta("either", rng.choice([{}, {"x": 10}, {"y": 99}, {"x": 500}]))
        elif rng.random() < 0.15:
            meta = TupleMeta(expires_at=rng.choice([NOW - 1, NOW + 1]))
        reads.write(obj, r, subject, meta)
    contexts = (None, {}, {"x": 10}, {"y": 10}, {"x": 101, "y": 99}, {"x": 101, "y": 10})
    assert same_checks(schema, Limits(max_steps=5_000), reads, contexts=contexts) > 0


HIERARCHY = """definition user {}
definition group {
    relation member: user | group#member
}
definition folder {
    relation parent: folder
    relation viewer: user | group#member
    permission view = viewer + parent->view
}
definition doc {
    relation parent: folder
    relation viewer: user | group#member
    permission view = viewer + parent->view
}
"""


def test_the_benchmarked_hierarchy_and_its_cycle() -> None:
    """bench_schema_split.py's question (3 folders, 2 nested groups), then the same folders made a
    cycle: SpiceDB's rule ends it in the depth error, with the walk tracked after TRACK_FROM."""
    schema = load(HIERARCHY, "h.zed")
    reads = MemoryReads([("group:inner", "member", "user:anne", None),
                         ("group:outer", "member", "group:inner#member", None),
                         ("folder:root", "viewer", "group:outer#member", None),
                         ("folder:mid", "parent", "folder:root", None),
                         ("folder:leaf", "parent", "folder:mid", None),
                         ("doc:d", "parent", "folder:leaf", None)])
    compiled, interpreted = SchemaEngine(schema), SchemaEngine(schema, compiled=False)
    for subject in ("user:anne", "user:zed", "group:inner#member"):
        assert compiled.check(reads, "doc:d", "view", subject) == interpreted.check(reads, "doc:d", "view", subject)
    assert compiled.check(reads, "doc:d", "view", "user:anne").allowed
    reads.write("folder:root", "parent", "folder:leaf")
    for subject in ("user:anne", "user:zed"):
        assert answer(lambda s=subject: compiled.check(reads, "doc:d", "view", s)) == \
            answer(lambda s=subject: interpreted.check(reads, "doc:d", "view", s))
    assert answer(lambda: compiled.check(reads, "doc:d", "view", "user:zed")) == ("error", "ResolutionTooComplex")
