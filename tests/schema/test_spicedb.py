"""The SpiceDB front end: verdicts on the case corpus, precedence, flattening, arrows, caveats."""

from __future__ import annotations

import pytest
from tenantguard.schema import load, parse_spicedb
from tenantguard.schema.errors import SchemaError
from tenantguard.schema.model import (
    Arrow,
    Computed,
    Direct,
    Exclusion,
    Expr,
    Intersection,
    Nil,
    Param,
    SubjectRef,
    Union,
)

from .cases_spicedb import CASES, Case


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_verdict(case: Case) -> None:
    if case.rule is None:
        assert load(case.text, "schema.zed").dialect == "spicedb"
        return
    with pytest.raises(SchemaError) as info:
        load(case.text, "schema.zed")
    assert info.value.rule == case.rule, str(info.value)


def _perm(expression: str) -> Expr:
    text = f"definition doc {{\n    permission perm = {expression}\n}}"
    rel = parse_spicedb(text).relation("doc", "perm")
    assert rel is not None and rel.is_permission and rel.allowed == ()
    return rel.rewrite


A, B, C, D = (Computed(n) for n in ("aaa", "bbb", "ccc", "ddd"))


@pytest.mark.parametrize(("expression", "tree"), [
    ("aaa + bbb + ccc", Union((A, B, C))),
    ("aaa + (bbb + ccc)", Union((A, B, C))),  # SpiceDB's compiler collapses nested unions
    ("aaa & bbb & ccc", Intersection((A, B, C))),
    ("aaa - bbb - ccc", Exclusion(Exclusion(A, B), C)),
    ("aaa + bbb - ccc", Exclusion(Union((A, B)), C)),  # '-' binds loosest
    ("aaa - bbb + ccc", Exclusion(A, Union((B, C)))),
    ("aaa + bbb & ccc", Intersection((Union((A, B)), C))),  # '+' binds tighter than '&'
    ("aaa & bbb - ccc + ddd", Exclusion(Intersection((A, B)), Union((C, D)))),
    ("(aaa - bbb) & ccc", Intersection((Exclusion(A, B), C))),
    ("aaa + nil", Union((A, Nil()))),
])
def test_precedence_and_flattening_follow_spicedb(expression: str, tree: Expr) -> None:
    assert _perm(expression) == tree


def test_arrows() -> None:
    assert _perm("parent->view") == Arrow("parent", "view")
    assert _perm("parent.any(view)") == Arrow("parent", "view")
    assert _perm("parent.all(view)") == Arrow("parent", "view", all=True)
    assert _perm("aaa + parent->view") == Union((A, Arrow("parent", "view")))


def test_relations_subjects_and_traits() -> None:
    schema = parse_spicedb("use expiration\ndefinition doc {\n    relation viewer: org/user | org/user:* | "
                           "group#member | group#... | user with cav | user with expiration | user with cav and "
                           "expiration\n}")
    rel = schema.relation("doc", "viewer")
    assert rel is not None and rel.rewrite == Direct() and not rel.is_permission
    assert rel.allowed == (SubjectRef("org/user"), SubjectRef("org/user", wildcard=True), SubjectRef("group", "member"),
                           SubjectRef("group"), SubjectRef("user", condition="cav"),
                           SubjectRef("user", expiration=True), SubjectRef("user", condition="cav", expiration=True))


def test_caveat_keeps_cel_verbatim_with_nested_braces() -> None:
    schema = parse_spicedb('caveat cav(m map<int>, ip ipaddress) {\n    {"a": 1}.size() > 0 &&\n'
                           '      m["}"] > 0 && ip.in_cidr("10.0.0.0/8")\n}')
    cav = schema.conditions["cav"]
    assert cav.params == (Param("m", "map<int>"), Param("ip", "ipaddress"))
    assert cav.expression == '{"a": 1}.size() > 0 &&\n      m["}"] > 0 && ip.in_cidr("10.0.0.0/8")'


def test_positions_point_into_the_source() -> None:
    with pytest.raises(SchemaError) as info:
        load("definition user {}\ndefinition doc {\n    relation viewer: user\n    permission view = viewer + edit\n}",
             "s.zed")
    assert (info.value.line, info.value.column) == (4, 32)
