"""Conditions under OpenFGA's rules, as its conformance suite (``abac_tests.yaml``) holds them."""

from __future__ import annotations

import pytest
from tenantguard.relations.reads import MemoryReads, TupleMeta
from tenantguard.schema import load
from tenantguard.schema.engine import ConditionError, Decision, SchemaEngine

FGA = """model
  schema 1.1
type user
type doc
  relations
    define viewer: [user with either, user with floaty]
condition either(x: int, y: int) {
  x < 100 || y < 50
}
condition floaty(f: double) {
  f > 0.0
}
"""

ZED = """definition user {}
caveat either(x int, y int) {
  x < 100 || y < 50
}
definition doc {
    relation viewer: user with either
    permission view = viewer
}
"""


def _reads(condition: str) -> MemoryReads:
    return MemoryReads([("doc:1", "viewer", "user:jon", TupleMeta(condition=condition))])


@pytest.mark.parametrize("context", [{"x": 10}, {"y": 10}, {"x": 101}, {}])
def test_openfga_a_missing_parameter_is_never_an_answer(context: dict[str, int]) -> None:
    """OpenFGA fails the check for any declared parameter missing, even where the expression
    would decide without it (``x < 100 || y < 50`` given ``x: 10``): never allowed, never denied."""
    e = SchemaEngine(load(FGA, "m.fga"))
    answer = e.check(_reads("either"), "doc:1", "viewer", "user:jon", context=context)
    assert answer.decision is Decision.CONDITIONAL
    assert set(answer.missing) == {"x", "y"} - set(context)
    with pytest.raises(ConditionError) as err:  # ListObjects and ListUsers fail, as OpenFGA's do
        e.lookup_resources(_reads("either"), "doc", "viewer", "user:jon", context=context)
    assert err.value.detail["missing"] == sorted({"x", "y"} - set(context))
    with pytest.raises(ConditionError):
        e.lookup_subjects(_reads("either"), "doc:1", "viewer", "user", context=context)


def test_openfga_every_parameter_given_decides() -> None:
    e = SchemaEngine(load(FGA, "m.fga"))
    assert e.check(_reads("either"), "doc:1", "viewer", "user:jon", context={"x": 10, "y": 99}).allowed
    assert e.check(_reads("either"), "doc:1", "viewer", "user:jon",
                   context={"x": 101, "y": 51}).decision is Decision.DENIED


def test_spicedb_keeps_partial_evaluation() -> None:
    """SpiceDB evaluates what it can: ``x < 100 || y < 50`` with ``x: 10`` is true."""
    e = SchemaEngine(load(ZED, "m.zed"))
    assert e.check(_reads("either"), "doc:1", "view", "user:jon", context={"x": 10}).allowed
    assert e.check(_reads("either"), "doc:1", "view", "user:jon", context={"x": 101}).decision \
        is Decision.CONDITIONAL


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_a_non_finite_double_is_refused(value: float) -> None:
    """JSON cannot carry it, and OpenFGA refuses 1.8e309 (``handles_floats``); +inf used to allow."""
    e = SchemaEngine(load(FGA, "m.fga"))
    with pytest.raises(ConditionError):
        e.check(_reads("floaty"), "doc:1", "viewer", "user:jon", context={"f": value})


TTU = """model
  schema 1.1
type user
type folder
  relations
    define viewer: [user]
type document
  relations
    define parent: [folder with s_cond, folder with x_cond]
    define viewer: [user] or viewer from parent
condition s_cond(s: string) {
  s == "hello"
}
condition x_cond(x: int) {
  x == 10
}
"""


def _ttu_reads() -> MemoryReads:
    return MemoryReads([("document:1", "parent", "folder:a", TupleMeta(condition="s_cond")),
                        ("document:1", "parent", "folder:b", TupleMeta(condition="x_cond")),
                        ("folder:a", "viewer", "user:jon", None), ("folder:b", "viewer", "user:jon", None)])


def test_openfga_lookups_fail_when_a_condition_on_their_walk_lacks_context() -> None:
    """OpenFGA's ListUsers and ListObjects read every tuple on their walk and fail on one they
    cannot evaluate, although Check allows through the other parent
    (``relation_through_ttu_with_condition``; ``fga model test`` answers the same errors)."""
    e, r = SchemaEngine(load(TTU, "m.fga")), _ttu_reads()
    assert e.check(r, "document:1", "viewer", "user:jon", context={"s": "hello"}).allowed
    with pytest.raises(ConditionError):
        e.lookup_resources(r, "document", "viewer", "user:jon", context={"s": "hello"})
    page = e.lookup_resources(r, "document", "viewer", "user:jon", context={"s": "nope", "x": 10})
    assert [(i.id, i.decision) for i in page.items] == [("document:1", Decision.ALLOWED)]
    with pytest.raises(ConditionError) as err:
        e.lookup_subjects(r, "document:1", "viewer", "user", context={"s": "hello"})
    assert err.value.rule == "missing_parameters"
    with pytest.raises(ConditionError):
        e.lookup_subjects(r, "document:1", "viewer", "folder", "viewer", context={"x": 10})
    page = e.lookup_subjects(r, "document:1", "viewer", "folder", "viewer", context={"s": "hello", "x": 10})
    assert {i.id for i in page.items} == {"folder:a#viewer", "folder:b#viewer"}
    page = e.lookup_subjects(r, "document:1", "viewer", "user", context={"s": "nope", "x": 10})
    assert [(i.id, i.decision) for i in page.items] == [("user:jon", Decision.ALLOWED)]


def test_openfga_lookups_only_evaluate_conditions_the_asked_relation_reads() -> None:
    """ListObjects follows only edges toward the asked relation: a conditional tuple elsewhere
    (``folder#viewer`` for ``document#owner``) lacks context without failing the query."""
    model = TTU.replace("define viewer: [user] or viewer from parent",
                        "define viewer: [user] or viewer from parent\n    define owner: [user]")
    e, r = SchemaEngine(load(model, "m.fga")), _ttu_reads()
    r.write("document:2", "owner", "user:jon")
    page = e.lookup_resources(r, "document", "owner", "user:jon")
    assert [(i.id, i.decision) for i in page.items] == [("document:2", Decision.ALLOWED)]


def test_openfga_needs_a_declared_parameter_the_expression_does_not_use() -> None:
    """OpenFGA counts every declared parameter (``fga model test``: "missing context parameters '[y]'")."""
    model = FGA.replace("condition floaty(f: double)", "condition floaty(f: double, unused: int)")
    e = SchemaEngine(load(model, "m.fga"))
    answer = e.check(_reads("floaty"), "doc:1", "viewer", "user:jon", context={"f": 1.0})
    assert (answer.decision, answer.missing) == (Decision.CONDITIONAL, ("unused",))
    assert e.check(_reads("floaty"), "doc:1", "viewer", "user:jon", context={"f": 1.0, "unused": 0}).allowed
