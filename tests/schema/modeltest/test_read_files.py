"""Reading fga store files and zed validation files into one Suite, and refusing bad ones."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from tenantguard.relations.reads import TupleMeta
from tenantguard.schema.modeltest import TestFileError, read_suite
from tenantguard.schema.modeltest.cases import (
    CheckAssertion,
    ExpectedRelations,
    ExpectedSubject,
    ListObjectsAssertion,
    ListUsersAssertion,
    TupleSpec,
)

MODEL = """\
model
  schema 1.1
type user
type group
  relations
    define member: [user]
type doc
  relations
    define viewer: [user, user:*, group#member, user with ip_ok]
    define editor: [user]
condition ip_ok(ip: ipaddress, cidr: string) {
  ip.in_cidr(cidr)
}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_store_file_with_every_way_of_giving_tuples_and_tests(tmp_path: Path) -> None:
    (tmp_path / "model.fga").write_text(MODEL)
    write(tmp_path, "base.yaml", """\
        - user: user:anne
          relation: viewer
          object: doc:1
        """)
    write(tmp_path, "more.csv", """\
        user_type,user_id,user_relation,relation,object_type,object_id,condition_name,condition_context
        group,eng,member,viewer,doc,2,,
        user,bob,,viewer,doc,3,ip_ok,"{""cidr"": ""10.0.0.0/8""}"
        """)
    path = write(tmp_path, "store.fga.yaml", """\
        name: Docs
        model_file: ./model.fga
        tuple_file: base.yaml
        tuples:
          - user: user:*
            relation: viewer
            object: doc:pub
        tests:
          - name: reading
            tuple_files: [more.csv]
            check:
              - users: [user:anne, user:bob]
                objects: [doc:1, doc:2]
                context: {ip: 10.1.1.1}
                assertions: {viewer: true, editor: false}
            list_objects:
              - user: user:anne
                type: doc
                assertions:
                  viewer: [doc:1, doc:pub]
            list_users:
              - object: doc:2
                user_filter: [{type: user}, {type: group, relation: member}]
                assertions:
                  viewer: {users: ["group:eng#member"]}
        """)
    suite = read_suite(path)
    assert suite.kind == "fga" and suite.name == "Docs" and suite.schema.dialect == "openfga"
    assert suite.tuples == (TupleSpec("doc:pub", "viewer", "user:*"), TupleSpec("doc:1", "viewer", "user:anne"))
    (test,) = suite.tests
    assert test.name == "reading"
    assert test.tuples == (TupleSpec("doc:2", "viewer", "group:eng#member"),
                           TupleSpec("doc:3", "viewer", "user:bob",
                                     TupleMeta(condition="ip_ok", context={"cidr": "10.0.0.0/8"})))
    checks = [a for a in test.assertions if isinstance(a, CheckAssertion)]
    assert len(checks) == 8  # 2 users x 2 objects x 2 relations
    assert {(c.subject, c.object, c.relation, c.expected) for c in checks} >= {
        ("user:bob", "doc:2", "viewer", "allowed"), ("user:anne", "doc:1", "editor", "denied")}
    assert all(c.context == {"ip": "10.1.1.1"} for c in checks)
    (lo,) = [a for a in test.assertions if isinstance(a, ListObjectsAssertion)]
    assert lo.expected == {"doc:1", "doc:pub"} and lo.object_type == "doc"
    (lu,) = [a for a in test.assertions if isinstance(a, ListUsersAssertion)]
    assert lu.user_filter == ("user", "group#member") and lu.expected == {"group:eng#member"}


@pytest.mark.parametrize(("body", "rule", "words"), [
    ("tests: [{name: t, check: []}]\n", "missing_model", "no model"),
    ("model: x\nmodel_file: y\ntests: []\n", "syntax", "not both"),
    ("model_file: fga.mod\ntests: [{name: t}]\n", "unsupported", "modular"),
    ("model: |\n  model\n    schema 1.1\n  type user\ntests: [{name: t, check: [{user: user:a, users: [user:b],"
     " object: doc:1, assertions: {viewer: true}}]}]\n", "syntax", "exactly one"),
    ("model: |\n  model\n    schema 1.1\n  type user\ntuples: [{user: 'user a', relation: viewer, object: doc:1}]\n"
     "tests: [{name: t}]\n", "bad_tuple", "tuple user"),
    ("model: |\n  model\n    schema 1.1\n  type user\n    relations\n      define viewer: [nobody]\n"
     "tests: [{name: t}]\n", "undefined_type", ""),
    ("model: |\n  model\n    schema 1.1\n  type user\ntests: [{name: t, check: [{user: user:a, object: doc:1,"
     " assertions: {viewer: maybe}}]}]\n", "syntax", "true or false"),
    ("model: |\n  model\n    schema 1.1\n  type user\ntests: []\n", "no_tests", "no tests"),
    ("model: [unclosed\n", "syntax", "YAML"),
])
def test_a_store_file_the_fga_cli_would_refuse_is_refused_with_the_rule(
        tmp_path: Path, body: str, rule: str, words: str) -> None:
    path = write(tmp_path, "bad.fga.yaml", body)
    with pytest.raises(TestFileError) as caught:
        read_suite(path)
    assert caught.value.rule == rule, caught.value
    assert words in str(caught.value)
    assert str(path) in str(caught.value)


def test_a_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.fga.yaml", "name: x\ntests:\n  - name: [a\n")
    with pytest.raises(TestFileError, match=r"bad\.fga\.yaml:\d+:\d+"):
        read_suite(path)


ZED = """\
schema: |-
  use expiration
  definition user {}
  caveat ip_ok(ip ipaddress, cidr string) { ip.in_cidr(cidr) }
  definition doc {
    relation viewer: user | user:* | user with ip_ok | user with expiration
    permission view = viewer
  }
relationships: |-
  doc:1#viewer@user:anne
  // a comment
  doc:2#viewer@user:bob[ip_ok:{"cidr": "10.0.0.0/8"}]
  doc:3#viewer@user:carl[expiration:2030-01-01T00:00:00Z]
  doc:pub#viewer@user:*
assertions:
  assertTrue:
    - doc:1#view@user:anne
    - 'doc:2#view@user:bob with {"ip": "10.1.1.1"}'
  assertCaveated:
    - doc:2#view@user:bob
  assertFalse:
    - doc:1#view@user:bob
validation:
  doc:1#view:
    - "[user:anne] is <doc:1#viewer>"
  doc:pub#view:
    - "[user:* - {user:bob, user:eve[...]}] is <doc:pub#viewer>"
  doc:2#view:
    - "[user:bob[...]] is <doc:2#viewer>/<doc:9#viewer>"
"""


def test_a_zed_validation_file_with_caveats_expiry_assertions_and_expected_relations(tmp_path: Path) -> None:
    suite = read_suite(write(tmp_path, "docs.yaml", ZED))
    assert suite.kind == "zed" and suite.schema.dialect == "spicedb"
    assert suite.tuples == (
        TupleSpec("doc:1", "viewer", "user:anne"),
        TupleSpec("doc:2", "viewer", "user:bob", TupleMeta(condition="ip_ok", context={"cidr": "10.0.0.0/8"})),
        TupleSpec("doc:3", "viewer", "user:carl", TupleMeta(expires_at=1893456000.0)),
        TupleSpec("doc:pub", "viewer", "user:*"),
    )
    (test,) = suite.tests
    checks = [a for a in test.assertions if isinstance(a, CheckAssertion)]
    assert [(c.subject, c.object, c.expected, dict(c.context)) for c in checks] == [
        ("user:anne", "doc:1", "allowed", {}), ("user:bob", "doc:2", "allowed", {"ip": "10.1.1.1"}),
        ("user:bob", "doc:2", "conditional", {}), ("user:bob", "doc:1", "denied", {})]
    expected = {(e.object, e.relation): e.subjects for e in test.assertions if isinstance(e, ExpectedRelations)}
    assert expected[("doc:pub", "view")][0] == ExpectedSubject(
        "user:*", False, frozenset({"user:bob", "user:eve[...]"}), frozenset({"doc:pub#viewer"}),
        expected[("doc:pub", "view")][0].where)
    bob = expected[("doc:2", "view")][0]
    assert bob.subject == "user:bob" and bob.caveated and bob.via == {"doc:2#viewer", "doc:9#viewer"}


def test_zed_blocks_written_as_text_read_like_mappings(tmp_path: Path) -> None:
    text = ZED.replace("assertions:\n  assertTrue:", "assertions: |-\n  assertTrue:")
    suite = read_suite(write(tmp_path, "docs.yaml", text))
    assert sum(isinstance(a, CheckAssertion) for a in suite.tests[0].assertions) == 4


@pytest.mark.parametrize(("change", "rule", "words"), [
    (("- doc:1#view@user:anne\n", "- 'doc:1#view@user:anne[ip_ok:{\"a\": 1}]'\n"), "syntax", "caveat on an assertion"),
    (("doc:1#viewer@user:anne", "doc:1#viewer user:anne"), "bad_tuple", "is not resource"),
    (("[expiration:2030-01-01T00:00:00Z]", "[expiration:tomorrow]"), "bad_tuple", "RFC 3339"),
    (('{"cidr": "10.0.0.0/8"}]', '{"cidr": 10.0.0.0/8}]'), "bad_tuple", "not JSON"),
    (("assertFalse:", "assertMaybe:"), "syntax", "assertMaybe"),
    (('"[user:anne] is <doc:1#viewer>"', '"user:anne is <doc:1#viewer>"'), "syntax", "[subject]"),
    (("permission view = viewer", "permission view = viewr"), "undefined_relation", ""),
])
def test_a_validation_file_zed_would_refuse_is_refused(
        tmp_path: Path, change: tuple[str, str], rule: str, words: str) -> None:
    assert change[0] in ZED
    path = write(tmp_path, "docs.yaml", ZED.replace(change[0], change[1], 1))
    with pytest.raises(TestFileError) as caught:
        read_suite(path)
    assert caught.value.rule == rule, caught.value
    assert words in str(caught.value)


def test_a_file_of_neither_kind_says_what_each_kind_holds(tmp_path: Path) -> None:
    with pytest.raises(TestFileError, match="neither an fga store file"):
        read_suite(write(tmp_path, "x.yaml", "hello: world\n"))
