"""Hostile or runaway input fails with a SchemaError naming the bound, never a crash."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tenantguard.schema import load
from tenantguard.schema.errors import SchemaError
from tenantguard.schema.limits import MAX_BYTES, MAX_NESTING, MAX_TYPES

FGA = "model\n  schema 1.1\ntype user\n"


@pytest.mark.parametrize("filename", ["m.fga", "m.json", "s.zed"])
def test_text_over_one_mebibyte_is_refused(filename: str) -> None:
    with pytest.raises(SchemaError) as info:
        load(" " * (MAX_BYTES + 1), filename)
    assert info.value.rule == "too_large"


def test_deep_parentheses_in_openfga() -> None:
    depth = MAX_NESTING + 5
    text = FGA + "type doc\n  relations\n    define a: [user]\n    define b: " + "(" * depth + "a" + ")" * depth + "\n"
    with pytest.raises(SchemaError) as info:
        load(text, "m.fga")
    assert info.value.rule == "too_deep"


def test_deep_parentheses_in_spicedb() -> None:
    depth = MAX_NESTING + 5
    text = "definition user {}\ndefinition doc {\n    relation aaa: user\n    permission bbb = " + "(" * depth \
        + "aaa" + ")" * depth + "\n}"
    with pytest.raises(SchemaError) as info:
        load(text, "s.zed")
    assert info.value.rule == "too_deep"


def test_deep_json_rewrite() -> None:
    rewrite: dict[str, object] = {"this": {}}
    for _ in range(MAX_NESTING + 5):
        rewrite = {"union": {"child": [rewrite, {"this": {}}]}}
    doc = {"schema_version": "1.1", "type_definitions": [{"type": "doc", "relations": {"v": rewrite}}]}
    with pytest.raises(SchemaError) as info:
        load(json.dumps(doc), "m.json")
    assert info.value.rule == "too_deep"


def test_json_nested_past_the_decoder_stack() -> None:
    with pytest.raises(SchemaError) as info:
        load("[" * 200_000 + "]" * 200_000, "m.json")
    assert info.value.rule in ("invalid_json", "too_large")


def test_too_many_types() -> None:
    text = FGA + "".join(f"type t{i}\n" for i in range(MAX_TYPES + 1))
    with pytest.raises(SchemaError) as info:
        load(text, "m.fga")
    assert info.value.rule == "too_large"


@pytest.mark.parametrize("length", [50, 3000])
def test_long_chain_of_computed_relations_is_validated_or_refused_cleanly(length: int) -> None:
    lines = ["type doc", "  relations", "    define r0: [user]"]
    lines += [f"    define r{i}: r{i - 1}" for i in range(1, length)]
    text = FGA + "\n".join(lines) + "\n"
    try:
        schema = load(text, "m.fga")
    except SchemaError as exc:
        assert exc.rule == "too_deep" and length > 50
    else:
        assert len(schema.types["doc"].relations) == length


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("model schema 1.1\ntype user define relations:[]()#*,<>{}orand"
                                             "but not from with condition x int \"'"))))
def test_any_openfga_text_is_accepted_or_refused_with_a_schema_error(text: str) -> None:
    with contextlib.suppress(SchemaError):
        load(text, "m.fga")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("definition caveat relation permission user doc {}()|+&-=:;#*./<>"
                                             "->nil with expiration use any all \n\"'"))))
def test_any_spicedb_text_is_accepted_or_refused_with_a_schema_error(text: str) -> None:
    with contextlib.suppress(SchemaError):
        load(text, "s.zed")


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
                        st.sampled_from(["schema_version", "type_definitions", "type", "relations", "this", "union",
                                         "child", "metadata", "conditions", "parameters", "type_name", "difference",
                                         "base", "subtract", "tupleToUserset", "tupleset", "relation"]), kids,
                        max_size=4), max_leaves=20))
def test_any_json_value_is_accepted_or_refused_with_a_schema_error(value: object) -> None:
    with contextlib.suppress(SchemaError):
        load(json.dumps(value), "m.json")
