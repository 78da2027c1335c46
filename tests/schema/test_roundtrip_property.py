"""Round trips over random schemas: parse(render(s)) == s for OpenFGA DSL, OpenFGA JSON and SpiceDB,
and translation between the dialects either succeeds into something the target accepts or is
refused as not expressible (never another error)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenantguard.schema import (
    parse_openfga,
    parse_openfga_json,
    parse_spicedb,
    to_openfga_dsl,
    to_openfga_json,
    to_spicedb,
    validate_openfga,
    validate_spicedb,
)
from tenantguard.schema.errors import SchemaError
from tenantguard.schema.model import (
    Arrow,
    Computed,
    Condition,
    Direct,
    Exclusion,
    Expr,
    Intersection,
    Nil,
    Param,
    Relation,
    Schema,
    SubjectRef,
    TypeDef,
    Union,
)

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FGA_TYPES = ["user", "doc", "folder", "org/team", "a-b.c"]
FGA_RELATIONS = ["viewer", "owner", "parent", "can_view", "x", "member-of"]
ZED_TYPES = ["user", "doc", "folder", "acme/team"]
ZED_RELATIONS = ["viewer", "owner", "parent", "can_view", "member"]
CONDITIONS = ["cond", "in_range"]
PARAM_TYPES = ["int", "uint", "bool", "string", "double", "duration", "timestamp", "ipaddress", "list<string>",
               "map<int>"]
CEL = ["x < 10", "a && b", 's == "}"', "l.size() > 0\n    && true", "x > 1 "]


def _exprs(relations: list[str], *, nil: bool) -> st.SearchStrategy[Expr]:
    names = st.sampled_from(relations)
    leaves: st.SearchStrategy[Expr] = st.builds(Computed, names) | st.builds(Arrow, names, names)
    if nil:
        leaves = leaves | st.just(Nil()) | st.builds(Arrow, names, names, st.just(True))

    def grow(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        many = st.lists(children, min_size=2, max_size=3).map(tuple)
        return (st.builds(Union, many) | st.builds(Intersection, many)
                | st.builds(Exclusion, children, children))

    return st.recursive(leaves, grow, max_leaves=6)


def _leftmost_to_direct(expr: Expr) -> Expr:
    """Put the direct assignment where OpenFGA's grammar allows it: the first operand, once."""
    if isinstance(expr, Union):
        return Union((_leftmost_to_direct(expr.children[0]), *expr.children[1:]))
    if isinstance(expr, Intersection):
        return Intersection((_leftmost_to_direct(expr.children[0]), *expr.children[1:]))
    if isinstance(expr, Exclusion):
        return Exclusion(_leftmost_to_direct(expr.base), expr.subtract)
    return Direct()


@st.composite
def _subject(draw: st.DrawFn, types: list[str], relations: list[str], conditions: list[str],
             expiration: bool) -> SubjectRef:
    kind = draw(st.sampled_from(["plain", "wildcard", "userset"]))
    return SubjectRef(draw(st.sampled_from(types)),
                      draw(st.sampled_from(relations)) if kind == "userset" else None,
                      kind == "wildcard",
                      draw(st.none() | st.sampled_from(conditions)) if conditions else None,
                      draw(st.booleans()) if expiration else False)


@st.composite
def _conditions(draw: st.DrawFn, names: list[str]) -> dict[str, Condition]:
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=2))
    out = {}
    for name in chosen:
        params = draw(st.lists(st.sampled_from(["x", "a", "b", "s", "l"]), min_size=1, max_size=3, unique=True))
        types = [draw(st.sampled_from(PARAM_TYPES)) for _ in params]
        out[name] = Condition(name, tuple(Param(p, t) for p, t in zip(params, types, strict=True)),
                              draw(st.sampled_from(CEL)))
    return out


@st.composite
def openfga_schemas(draw: st.DrawFn) -> Schema:
    conditions = draw(_conditions(CONDITIONS))
    type_names = draw(st.lists(st.sampled_from(FGA_TYPES), min_size=1, max_size=4, unique=True))
    types = {}
    for tname in type_names:
        rel_names = draw(st.lists(st.sampled_from(FGA_RELATIONS), max_size=4, unique=True))
        relations = {}
        for rname in rel_names:
            direct = draw(st.booleans())
            expr = draw(st.just(Direct()) if direct and draw(st.booleans()) else _exprs(FGA_RELATIONS, nil=False))
            if direct:
                expr = _leftmost_to_direct(expr)
            allowed = tuple(draw(st.lists(_subject(type_names, FGA_RELATIONS, list(conditions), False), min_size=1,
                                          max_size=3))) if direct else ()
            relations[rname] = Relation(rname, expr, allowed)
        types[tname] = TypeDef(tname, relations)
    return Schema(types=types, conditions=conditions, dialect="openfga")


def _flatten(expr: Expr) -> Expr:
    """SpiceDB's compiler merges nested unions (and intersections) into one."""
    if isinstance(expr, (Union, Intersection)):
        kind = type(expr)
        children: list[Expr] = []
        for child in map(_flatten, expr.children):
            children.extend(child.children if isinstance(child, kind) else (child,))  # type: ignore[attr-defined]
        return kind(tuple(children))
    if isinstance(expr, Exclusion):
        return Exclusion(_flatten(expr.base), _flatten(expr.subtract))
    return expr


@st.composite
def spicedb_schemas(draw: st.DrawFn) -> Schema:
    # SpiceDB keeps a caveat's text from its first token to its last: no edge whitespace.
    conditions = {n: Condition(c.name, c.params, c.expression.strip())
                  for n, c in draw(_conditions(CONDITIONS)).items()}
    type_names = draw(st.lists(st.sampled_from(ZED_TYPES), min_size=1, max_size=4, unique=True))
    types = {}
    for tname in type_names:
        relations = {}
        for rname in draw(st.lists(st.sampled_from(ZED_RELATIONS), max_size=4, unique=True)):
            if draw(st.booleans()):
                allowed = tuple(draw(st.lists(_subject(type_names, ZED_RELATIONS, list(conditions), True), min_size=1,
                                              max_size=3)))
                relations[rname] = Relation(rname, Direct(), allowed)
            else:
                relations[rname] = Relation(rname, _flatten(draw(_exprs(ZED_RELATIONS, nil=True))), (),
                                            is_permission=True)
        types[tname] = TypeDef(tname, relations)
    return Schema(types=types, conditions=conditions, dialect="spicedb")


@SETTINGS
@given(openfga_schemas())
def test_openfga_dsl_round_trip(schema: Schema) -> None:
    assert parse_openfga(to_openfga_dsl(schema)) == schema


@SETTINGS
@given(openfga_schemas())
def test_openfga_json_round_trip(schema: Schema) -> None:
    assert parse_openfga_json(json.loads(json.dumps(to_openfga_json(schema)))) == schema


@SETTINGS
@given(spicedb_schemas())
def test_spicedb_round_trip(schema: Schema) -> None:
    assert parse_spicedb(to_spicedb(schema)) == schema


@SETTINGS
@given(openfga_schemas())
def test_valid_openfga_translates_to_valid_spicedb_or_is_refused_as_not_expressible(schema: Schema) -> None:
    try:
        validate_openfga(schema)
    except SchemaError:
        return
    try:
        zed = to_spicedb(schema)
    except SchemaError as exc:
        assert exc.rule == "not_expressible"
        return
    validate_spicedb(parse_spicedb(zed))


@SETTINGS
@given(spicedb_schemas())
def test_valid_spicedb_translates_to_valid_openfga_or_is_refused_as_not_expressible(schema: Schema) -> None:
    try:
        validate_spicedb(schema)
    except SchemaError:
        return
    try:
        dsl = to_openfga_dsl(schema)
    except SchemaError as exc:
        assert exc.rule == "not_expressible"
        return
    validate_openfga(parse_openfga(dsl))
