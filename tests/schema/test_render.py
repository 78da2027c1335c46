"""Transforms: OpenFGA -> SpiceDB (names split as documented), SpiceDB -> OpenFGA (refusals), DSL specifics."""

from __future__ import annotations

import pytest
from tenantguard.schema import (
    load,
    parse_openfga,
    parse_openfga_json,
    parse_spicedb,
    to_openfga_dsl,
    to_openfga_json,
    to_spicedb,
    validate_spicedb,
)
from tenantguard.schema.errors import SchemaError
from tenantguard.schema.model import (
    Computed,
    Direct,
    Exclusion,
    Intersection,
    Relation,
    Schema,
    SubjectRef,
    TypeDef,
    Union,
)

FGA = """model
  schema 1.1

type user

type group
  relations
    define member: [user, group#member]

type folder
  relations
    define owner: [user with inside]
    define viewer: [user, group#member] or owner

type document
  relations
    define parent: [folder]
    define blocked: [user]
    define writer: [user]
    define editor: [user] and writer
    define viewer: (editor or viewer from parent) but not blocked

condition inside(ip: ipaddress, cidr: string) {
  ip.in_cidr(cidr)
}
"""

ZED = """definition user {}

definition group {
    relation member: user | group#member
}

definition folder {
    relation owner: user with inside
    relation viewer_direct: user | group#member
    permission viewer = viewer_direct + owner
}

definition document {
    relation parent: folder
    relation blocked: user
    relation writer: user
    relation editor_direct: user
    permission editor = editor_direct & writer
    permission viewer = (editor + parent->viewer) - blocked
}

caveat inside(ip ipaddress, cidr string) {
    ip.in_cidr(cidr)
}
"""


def test_openfga_to_spicedb_splits_direct_relations_as_documented() -> None:
    out = to_spicedb(load(FGA, "m.fga"))
    assert out == ZED
    validate_spicedb(parse_spicedb(out))


def test_spicedb_back_to_openfga_is_accepted_and_renders() -> None:
    schema = load(ZED, "s.zed")
    dsl = to_openfga_dsl(schema)
    again = load(dsl, "m.fga")
    assert again.relation("document", "viewer") is not None
    assert "define viewer: (editor or viewer from parent) but not blocked" in dsl
    assert "define viewer_direct: [user, group#member]" in dsl


@pytest.mark.parametrize(("zed", "needle"), [
    ("definition user {}\ndefinition doc {\n    relation viewer: user\n    permission view = viewer + nil\n}", "nil"),
    ("definition user {}\ndefinition doc {\n    relation parent: doc\n    relation viewer: user\n"
     "    permission view = viewer + parent.all(view)\n}", "parent.all(view)"),
    ("use expiration\ndefinition user {}\ndefinition doc {\n    relation viewer: user with expiration\n}",
     "expiration"),
    ("caveat cav(data bytes) { data == b'' }", "bytes"),
])
def test_spicedb_only_constructs_are_refused_by_name(zed: str, needle: str) -> None:
    schema = load(zed, "s.zed")
    for render in (to_openfga_dsl, to_openfga_json):
        with pytest.raises(SchemaError) as info:
            render(schema)
        assert info.value.rule == "not_expressible" and needle in str(info.value)


def test_spicedb_schema_openfga_cannot_validate_is_refused_with_the_reason() -> None:
    # SpiceDB allows an arrow over a relation that admits a subject set; OpenFGA does not.
    zed = ("definition user {}\ndefinition group {\n    relation member: user\n}\n"
           "definition doc {\n    relation owners: group#member | group\n    permission view = owners->member\n}")
    with pytest.raises(SchemaError) as info:
        to_openfga_dsl(load(zed, "s.zed"))
    assert info.value.rule == "not_expressible" and info.value.detail["cause"] == "invalid_tupleset_type"


@pytest.mark.parametrize(("fga", "needle"), [
    ("type user\ntype doc\n  relations\n    define v: [user]\n", "'v'"),  # under SpiceDB's 3 characters
    ("type user\ntype doc\n  relations\n    define can-view: [user]\n", "can-view"),
    ("type user\ntype doc\n  relations\n    define viewer_direct: [user]\n    define viewer: [user] or "
     "viewer_direct\n", "viewer_direct"),
])
def test_openfga_names_spicedb_cannot_take_are_refused(fga: str, needle: str) -> None:
    with pytest.raises(SchemaError) as info:
        to_spicedb(load("model\n  schema 1.1\n" + fga, "m.fga"))
    assert info.value.rule == "not_expressible" and needle in str(info.value)


def test_openfga_transitive_wildcard_is_refused_for_spicedb() -> None:
    fga = ("model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user, user:*]\n"
           "type doc\n  relations\n    define viewer: [group#member]\n")
    with pytest.raises(SchemaError) as info:
        to_spicedb(load(fga, "m.fga"))
    assert info.value.detail["cause"] == "transitive_wildcard"


def test_openfga_duplicate_subjects_are_merged_for_spicedb() -> None:
    # OpenFGA's validator refuses the duplicate (load does too), but its server stores such models
    out = to_spicedb(parse_openfga("model\n  schema 1.1\ntype user\ntype doc\n  relations\n"
                                   "    define viewer: [user, user]\n"))
    assert "relation viewer: user\n" in out


def test_openfga_condition_with_unused_parameter_cannot_be_a_caveat() -> None:
    fga = ("model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user with cond]\n"
           "condition cond(x: int, unused: int) {\n  x > 1\n}\n")
    with pytest.raises(SchemaError) as info:
        to_spicedb(load(fga, "m.fga"))
    assert info.value.detail["cause"] == "unused_param"


@pytest.mark.parametrize(("body", "needle"), [
    ('x == "a\\"b"', "Unterminated string"),  # SpiceDB's lexer has no escapes
    ("x == 'a' && n > 0u", "invalid expression"),  # SpiceDB's uint is CEL int
])
def test_openfga_condition_spicedb_cannot_read_is_refused(body: str, needle: str) -> None:
    fga = ("model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user with cond]\n"
           f"condition cond(x: string, n: uint) {{\n  {body}\n}}\n")
    if "n >" not in body:
        fga = fga.replace(", n: uint", "")
    with pytest.raises(SchemaError) as info:
        to_spicedb(load(fga, "m.fga"))
    assert info.value.rule == "not_expressible" and needle in str(info.value)


def _schema(rewrite: object, allowed: tuple[SubjectRef, ...] = (SubjectRef("user"),)) -> Schema:
    rel = Relation("viewer", rewrite, allowed)  # type: ignore[arg-type]
    other = Relation("owner", Direct(), (SubjectRef("user"),))
    return Schema(types={"user": TypeDef("user", {}), "doc": TypeDef("doc", {"owner": other, "viewer": rel})},
                  conditions={}, dialect="openfga")


def test_dsl_moves_the_direct_assignment_of_a_union_first_as_openfga_does() -> None:
    # openfga/language's JSON-to-DSL transformer writes `rel1 or this` as `[user] or rel1`
    assert "define viewer: [user] or owner\n" in to_openfga_dsl(_schema(Union((Computed("owner"), Direct()))))
    nested = _schema(Intersection((Union((Computed("owner"), Direct())), Computed("owner"))))
    assert "define viewer: ([user] or owner) and owner\n" in to_openfga_dsl(nested)


def test_dsl_refuses_a_direct_assignment_the_grammar_cannot_place() -> None:
    with pytest.raises(SchemaError) as info:
        to_openfga_dsl(_schema(Exclusion(Computed("owner"), Direct())))
    assert info.value.rule == "not_expressible"
    # ... while JSON states it fine, and reads back the same
    schema = _schema(Exclusion(Computed("owner"), Direct()))
    assert parse_openfga_json(to_openfga_json(schema)) == schema


def test_dsl_refuses_a_condition_body_with_a_bare_closing_brace() -> None:
    schema = parse_openfga_json({"schema_version": "1.1", "type_definitions": [], "conditions": {
        "cond": {"name": "cond", "expression": '{"a": x}.size() > 0',
                 "parameters": {"x": {"type_name": "TYPE_NAME_INT"}}}}})
    with pytest.raises(SchemaError) as info:
        to_openfga_dsl(schema)
    assert info.value.rule == "not_expressible"


def test_json_reader_accepts_camel_case_and_ignores_unknown_fields() -> None:
    doc = {"id": "01H", "schemaVersion": "1.1", "typeDefinitions": [
        {"type": "user"},
        {"type": "doc", "relations": {"viewer": {"this": {}}},
         "metadata": {"module": "", "relations": {"viewer": {"directlyRelatedUserTypes": [{"type": "user"}]}}}}]}
    schema = parse_openfga_json(doc)
    assert schema.relation("doc", "viewer") == Relation("viewer", Direct(), (SubjectRef("user"),))


@pytest.mark.parametrize(("doc", "rule"), [
    ("[]", "invalid_json"),
    ("{not json", "invalid_json"),
    ('{"schema_version": "1.0"}', "schema_version"),
    ('{"schema_version": "1.1", "type_definitions": [{"type": "doc", "relations": {"v": {}}}]}', "invalid_rewrite"),
    ('{"schema_version": "1.1", "type_definitions": [{"type": "doc", "relations": {"v": {"this": {}, '
     '"computedUserset": {"relation": "x"}}}}]}', "invalid_rewrite"),
    ('{"schema_version": "1.1", "type_definitions": [], "conditions": {"c": {"expression": "x", '
     '"parameters": {"x": {"type_name": "TYPE_NAME_FLOAT"}}}}}', "invalid_param_type"),
    ('{"schema_version": "1.1", "type_definitions": [{"type": "u"}, {"type": "u"}]}', "duplicate_type"),
])
def test_json_reader_refuses_malformed_models(doc: str, rule: str) -> None:
    with pytest.raises(SchemaError) as info:
        load(doc, "model.json")
    assert info.value.rule == rule


def test_json_union_of_one_child_is_refused_like_openfga() -> None:
    doc = ('{"schema_version": "1.1", "type_definitions": [{"type": "user"}, {"type": "doc", "relations": '
           '{"v": {"union": {"child": [{"this": {}}]}}}, "metadata": {"relations": {"v": '
           '{"directly_related_user_types": [{"type": "user"}]}}}}]}')
    with pytest.raises(SchemaError) as info:
        load(doc, "model.json")
    assert info.value.rule == "invalid_rewrite"


def test_openfga_round_trip_through_all_three_forms() -> None:
    schema = parse_openfga(FGA)
    assert parse_openfga(to_openfga_dsl(schema)) == schema
    assert parse_openfga_json(to_openfga_json(schema)) == schema
