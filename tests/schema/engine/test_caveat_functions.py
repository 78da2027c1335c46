"""SpiceDB's caveat environment beyond CEL's own: ``isSubtreeOf``, optional types, ``uint`` as CEL ``int``."""

from __future__ import annotations

from typing import Any

import pytest
from tenantguard.schema import load
from tenantguard.schema.engine.conditions import CompiledCondition
from tenantguard.schema.engine.errors import ConditionError
from tenantguard.schema.engine.outcome import ALLOW, DENY
from tenantguard.schema.errors import SchemaError

# caveatwithkeywordparam.zed from SpiceDB's parser tests
SUBTREE = "caveat something(someMap map<any>, anotherMap map<any>) {\n    someMap.isSubtreeOf(anotherMap)\n}"


def _subtree(inner: dict[str, Any], outer: dict[str, Any]) -> Any:
    cond = load(SUBTREE, "c.zed").conditions["something"]
    return CompiledCondition(cond, max_chars=10_000).evaluate({"someMap": inner, "anotherMap": outer}, None, 1000)


@pytest.mark.parametrize(("inner", "outer", "outcome"), [
    ({}, {"a": 1}, ALLOW),
    ({"a": 1}, {"a": 1.0, "b": "x"}, ALLOW),  # JSON numbers are one type, as in Go
    ({"a": {"b": "x"}}, {"a": {"b": "x", "c": True}}, ALLOW),
    ({"a": 1}, {"b": 1}, DENY),
    ({"a": "1"}, {"a": 1}, DENY),
    ({"a": True}, {"a": 1}, DENY),  # a bool never equals a number
    ({"a": {"b": "x"}}, {"a": "x"}, DENY),
    ({"a": {"b": "x"}}, {"a": {"b": "y"}}, DENY),
])
def test_is_subtree_of_follows_spicedb(inner: dict[str, Any], outer: dict[str, Any], outcome: Any) -> None:
    assert _subtree(inner, outer) == outcome


def test_is_subtree_of_refuses_to_compare_lists() -> None:
    with pytest.raises(ConditionError):
        _subtree({"a": [1]}, {"a": [1]})


def test_openfga_conditions_have_no_is_subtree_of() -> None:
    cond = load(SUBTREE, "c.zed").conditions["something"]
    with pytest.raises(SchemaError) as info:
        CompiledCondition(cond, max_chars=10_000, dialect="openfga")
    assert info.value.rule == "condition_invalid"


def _evaluate(text: str, context: dict[str, Any], dialect: str = "spicedb") -> Any:
    schema = load(text, "c.zed")
    (cond,) = schema.conditions.values()
    return CompiledCondition(cond, max_chars=10_000, dialect=dialect).evaluate(context, None, 1000)  # type: ignore[arg-type]


def test_optional_types_as_in_spicedb() -> None:
    text = "caveat cav(m map<string>) {\n    m.?foo.orValue('') == 'x'\n}"
    assert _evaluate(text, {"m": {"foo": "x"}}) == ALLOW
    assert _evaluate(text, {"m": {}}) == DENY


def test_spicedb_uint_is_a_cel_int() -> None:
    text = "caveat cav(u uint) {\n    u == 42 && u < 43\n}"  # SpiceDB's basiccaveat.zed compares a uint to 42
    assert _evaluate(text, {"u": 42}) == ALLOW
    assert _evaluate(text, {"u": 41}) == DENY
    with pytest.raises(ConditionError):
        _evaluate(text, {"u": -1})
    with pytest.raises(SchemaError):  # OpenFGA's uint is CEL's: no uint == int
        _evaluate(text, {"u": 42}, dialect="openfga")
