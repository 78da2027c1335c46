"""The OpenFGA DSL front end: verdicts on the case corpus, the trees it builds, error positions."""

from __future__ import annotations

import pytest
from tenantguard.schema import load
from tenantguard.schema.errors import SchemaError
from tenantguard.schema.model import (
    Arrow,
    Computed,
    Direct,
    Exclusion,
    Intersection,
    Param,
    SubjectRef,
    Union,
)
from tenantguard.schema.openfga import parse_openfga

from .cases_openfga import CASES, Case, H


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_verdict(case: Case) -> None:
    if case.rule is None:
        assert load(case.text, "model.fga").dialect == "openfga"
        return
    with pytest.raises(SchemaError) as info:
        load(case.text, "model.fga")
    assert info.value.rule == case.rule, str(info.value)


def _rel(text: str, type_name: str, relation: str):  # type: ignore[no-untyped-def]
    rel = parse_openfga(H + text).relation(type_name, relation)
    assert rel is not None
    return rel


def test_direct_types_with_wildcards_usersets_and_conditions() -> None:
    rel = _rel("type doc\n  relations\n    define v: [user, user:*, doc#v with c, user with c]\n", "doc", "v")
    assert rel.rewrite == Direct()
    assert rel.allowed == (SubjectRef("user"), SubjectRef("user", wildcard=True),
                           SubjectRef("doc", "v", condition="c"), SubjectRef("user", condition="c"))


def test_operators_build_one_node_per_level_and_keep_groups() -> None:
    text = "type doc\n  relations\n    define x: [user] or a or b from p\n    define y: (a or b) or c\n" \
           "    define z: (a and b) but not (c or d)\n"
    schema = parse_openfga(H + text)
    assert schema.relation("doc", "x").rewrite == Union((Direct(), Computed("a"), Arrow("p", "b")))  # type: ignore[union-attr]
    assert schema.relation("doc", "y").rewrite == Union((Union((Computed("a"), Computed("b"))), Computed("c")))  # type: ignore[union-attr]
    assert schema.relation("doc", "z").rewrite == Exclusion(  # type: ignore[union-attr]
        Intersection((Computed("a"), Computed("b"))), Union((Computed("c"), Computed("d"))))


def test_positions_are_recorded() -> None:
    rel = _rel("type doc\n  relations\n    define viewer: [user] or owner\n", "doc", "viewer")
    assert (rel.pos.line, rel.pos.column) == (6, 12)
    assert isinstance(rel.rewrite, Union)
    owner = rel.rewrite.children[1]
    assert isinstance(owner, Computed) and (owner.pos.line, owner.pos.column) == (6, 30)


def test_condition_parameters_and_expression_as_openfga_stores_it() -> None:
    schema = parse_openfga(H + "condition c(x: int, l: list<string>) {\n  x < 10 &&\n    l.size() > 0\n}\n"
                           "condition d(x: int) { x > 1 }\n")
    c = schema.conditions["c"]
    assert c.params == (Param("x", "int"), Param("l", "list<string>"))
    assert c.expression == "x < 10 &&\n    l.size() > 0"
    assert schema.conditions["d"].expression == "x > 1 "  # as `fga model transform` keeps it


@pytest.mark.parametrize(("text", "line", "column"), [
    (H + "type doc\n  relations\n    define v: [person]\n", 6, 16),  # the restriction, as OpenFGA points
    (H + "type doc\n  relations\n    define v: [user]\n    define w: v or nope\n", 7, 20),
    (H + "type doc\n  relations\n    define v: [user] or\n", 6, 24),
])
def test_errors_point_at_the_line_and_column(text: str, line: int, column: int) -> None:
    with pytest.raises(SchemaError) as info:
        load(text, "m.fga")
    assert (info.value.line, info.value.column) == (line, column), str(info.value)


def test_error_is_the_project_error_type_with_a_stable_code() -> None:
    with pytest.raises(SchemaError) as info:
        load(H + "type doc\n  relations\n    define v: [person]\n", "m.fga")
    body = info.value.to_dict()
    assert body["error"] == "schema_invalid" and body["detail"]["rule"] == "undefined_type"
    assert info.value.http_status == 422
