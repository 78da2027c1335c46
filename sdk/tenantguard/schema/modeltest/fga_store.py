"""OpenFGA CLI store files (``.fga.yaml``), read as ``fga model test --tests`` reads them.

Top level: ``name``, ``model`` (inline) or ``model_file``, ``tuples`` / ``tuple_file`` /
``tuple_files`` seen by every test, and ``tests``: each with its own tuples (added to the
global ones) and ``check`` (``user``/``users`` x ``object``/``objects``, ``context``,
``assertions: {relation: bool}``), ``list_objects`` (``user``, ``type``, ``assertions:
{relation: [objects]}``) and ``list_users`` (``object``, ``user_filter: [{type, relation}]``,
``assertions: {relation: {users: [...]}}``). Paths are relative to the store file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tenantguard.schema import SchemaError, load
from tenantguard.schema.model import Schema
from tenantguard.schema.modeltest.cases import (
    Assertion,
    CheckAssertion,
    ListObjectsAssertion,
    ListUsersAssertion,
    Suite,
    TestCase,
    TupleSpec,
)
from tenantguard.schema.modeltest.errors import TestFileError
from tenantguard.schema.modeltest.files import (
    MAX_ASSERTIONS,
    MAX_TUPLES,
    expect_list,
    expect_mapping,
    known_fields,
    read_text,
    read_yaml,
    relative,
)
from tenantguard.schema.modeltest.tuples import fga_csv, fga_tuple

# The fields each level of a store file may have (``fga model test`` refuses any other).
STORE_FIELDS = frozenset({"name", "model", "model_file", "tuples", "tuple_file", "tuple_files", "tests"})
TEST_FIELDS = frozenset({"name", "description", "tuples", "tuple_file", "tuple_files", "check", "list_objects",
                         "list_users"})
CHECK_FIELDS = frozenset({"user", "users", "object", "objects", "context", "assertions"})
LIST_OBJECTS_FIELDS = frozenset({"user", "type", "context", "assertions"})
LIST_USERS_FIELDS = frozenset({"object", "user_filter", "context", "assertions"})
USER_FILTER_FIELDS = frozenset({"type", "relation"})
LIST_USERS_EXPECTED_FIELDS = frozenset({"users"})


def read_store_file(path: Path) -> Suite:
    """Parse ``path`` (a ``.fga.yaml`` store file) into a Suite; raises TestFileError."""
    doc = expect_mapping(read_yaml(path), str(path), "a store file")
    known_fields(doc, STORE_FIELDS, str(path), "a store file")
    schema = _model(path, doc)
    tuples = _tuples(path, doc, str(path))
    tests = []
    budget = [MAX_ASSERTIONS]
    for n, raw in enumerate(expect_list(doc.get("tests"), str(path), "tests")):
        test = expect_mapping(raw, f"{path}: tests[{n}]", "a test")
        known_fields(test, TEST_FIELDS, f"{path}: tests[{n}]", "a test")
        name = str(test.get("name") or f"test {n + 1}")
        where = f"{path}: {name}"
        tests.append(TestCase(name, tuple(_tuples(path, test, where)), tuple(_assertions(test, where, budget))))
    if not tests:
        raise TestFileError(str(path), "the store file has no tests", rule="no_tests")
    return Suite(str(path), "fga", schema, tuple(tuples), tuple(tests), name=str(doc.get("name") or ""))


def _model(path: Path, doc: dict[str, Any]) -> Schema:
    inline, ref = doc.get("model"), doc.get("model_file")
    if inline is not None and ref is not None:
        raise TestFileError(str(path), "give model or model_file, not both", rule="syntax")
    if inline is None and ref is None:
        raise TestFileError(str(path), "the store file has no model (model: or model_file:)", rule="missing_model")
    if inline is not None:
        if not isinstance(inline, str):
            raise TestFileError(str(path), "model must be the model's text", rule="syntax")
        text, name, label = inline, "model.fga", f"{path}: model"
    else:
        file = relative(path, ref, str(path))
        if file.name == "fga.mod" or file.suffix == ".mod":
            raise TestFileError(str(path), "modular models (fga.mod) are not supported; give a .fga or .json model",
                                rule="unsupported")
        text, name, label = read_text(file, str(path)), file.name, str(file)
    try:
        schema = load(text, name)
    except SchemaError as exc:
        raise TestFileError(label, exc.message, rule=exc.rule) from None
    if schema.dialect != "openfga":
        raise TestFileError(label, "a store file's model is an OpenFGA model", rule="syntax")
    return schema


def _tuples(path: Path, block: dict[str, Any], where: str) -> list[TupleSpec]:
    out = [fga_tuple(f"{where}: tuples[{i}]", t) for i, t in enumerate(expect_list(block.get("tuples"), where,
                                                                                      "tuples"))]
    files = expect_list(block.get("tuple_files"), where, "tuple_files")
    if block.get("tuple_file") is not None:
        files = [block["tuple_file"], *files]
    for ref in files:
        out.extend(_tuple_file(relative(path, ref, where), where))
    if len(out) > MAX_TUPLES:
        raise TestFileError(where, f"{len(out)} tuples, over the limit of {MAX_TUPLES}", rule="too_large")
    return out


def _tuple_file(file: Path, where: str) -> list[TupleSpec]:
    text = read_text(file, where)
    if file.suffix.lower() == ".csv":
        return fga_csv(str(file), text)
    if file.suffix.lower() == ".json":
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TestFileError(f"{file}:{exc.lineno}:{exc.colno}", f"JSON: {exc.msg}", rule="syntax") from None
    elif file.suffix.lower() in (".yaml", ".yml"):
        items = read_yaml(file, text)
    else:
        raise TestFileError(where, f"tuple file {file.name}: use .yaml, .yml, .json or .csv", rule="unsupported")
    # fga decodes a YAML tuple file knowing its fields, a JSON one without
    strict = file.suffix.lower() != ".json"
    return [fga_tuple(f"{file}: [{i}]", t, strict=strict)
            for i, t in enumerate(expect_list(items, str(file), "a tuple file"))]


def _one_or_many(item: dict[str, Any], one: str, many: str, where: str) -> list[str]:
    if (item.get(one) is None) == (item.get(many) is None):
        raise TestFileError(where, f"give {one} or {many} (exactly one)", rule="syntax")
    values = [item[one]] if item.get(one) is not None else expect_list(item[many], where, many)
    if not values or not all(isinstance(v, str) for v in values):
        raise TestFileError(where, f"{one}/{many} must be strings", rule="syntax")
    return values


def _spend(budget: list[int], n: int, where: str) -> None:
    budget[0] -= n
    if budget[0] < 0:
        raise TestFileError(where, f"more than {MAX_ASSERTIONS} assertions", rule="too_large")


def _assertions(test: dict[str, Any], where: str, budget: list[int]) -> list[Assertion]:
    out: list[Assertion] = []
    for i, raw in enumerate(expect_list(test.get("check"), where, "check")):
        at = f"{where}: check[{i}]"
        item = expect_mapping(raw, at, "a check")
        known_fields(item, CHECK_FIELDS, at, "a check")
        context = expect_mapping(item.get("context"), at, "context")
        expected = expect_mapping(item.get("assertions"), at, "assertions")
        users, objects = _one_or_many(item, "user", "users", at), _one_or_many(item, "object", "objects", at)
        _spend(budget, len(users) * len(objects) * len(expected), at)
        for relation, value in expected.items():
            if not isinstance(value, bool):
                raise TestFileError(at, f"assertion {relation}: must be true or false", rule="syntax")
            out.extend(CheckAssertion(obj, relation, user, "allowed" if value else "denied", context,
                                      f"{at}: {user} {relation} {obj}")
                       for user in users for obj in objects)
    for i, raw in enumerate(expect_list(test.get("list_objects"), where, "list_objects")):
        at = f"{where}: list_objects[{i}]"
        item = expect_mapping(raw, at, "a list_objects test")
        known_fields(item, LIST_OBJECTS_FIELDS, at, "a list_objects test")
        user, object_type = item.get("user"), item.get("type")
        if not isinstance(user, str) or not isinstance(object_type, str):
            raise TestFileError(at, "list_objects needs user and type", rule="syntax")
        context = expect_mapping(item.get("context"), at, "context")
        for relation, objects in expect_mapping(item.get("assertions"), at, "assertions").items():
            _spend(budget, 1, at)
            listed = expect_list(objects, at, f"assertion {relation}")
            out.append(ListObjectsAssertion(object_type, relation, user, frozenset(map(str, listed)), context,
                                            f"{at}: {user} {relation} {object_type}"))
    for i, raw in enumerate(expect_list(test.get("list_users"), where, "list_users")):
        at = f"{where}: list_users[{i}]"
        item = expect_mapping(raw, at, "a list_users test")
        known_fields(item, LIST_USERS_FIELDS, at, "a list_users test")
        obj = item.get("object")
        if not isinstance(obj, str):
            raise TestFileError(at, "list_users needs object", rule="syntax")
        filters = []
        for f in expect_list(item.get("user_filter"), at, "user_filter"):
            f = expect_mapping(f, at, "a user_filter entry")
            known_fields(f, USER_FILTER_FIELDS, at, "a user_filter entry")
            if not isinstance(f.get("type"), str):
                raise TestFileError(at, "a user_filter entry needs type", rule="syntax")
            filters.append(f["type"] + (f"#{f['relation']}" if f.get("relation") else ""))
        if not filters:
            raise TestFileError(at, "list_users needs a user_filter", rule="syntax")
        context = expect_mapping(item.get("context"), at, "context")
        for relation, value in expect_mapping(item.get("assertions"), at, "assertions").items():
            _spend(budget, 1, at)
            expected_users = expect_mapping(value, at, f"assertion {relation}")
            known_fields(expected_users, LIST_USERS_EXPECTED_FIELDS, at, f"assertion {relation}")
            users = expect_list(expected_users.get("users"), at, "users")
            out.append(ListUsersAssertion(obj, relation, tuple(filters), frozenset(map(str, users)), context,
                                          f"{at}: {relation} of {obj}"))
    return out
