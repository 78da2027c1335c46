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
    page = e.lookup_resources(_reads("either"), "doc", "viewer", "user:jon", context=context)
    assert [(i.id, i.decision) for i in page.items] == [("doc:1", Decision.CONDITIONAL)]


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
