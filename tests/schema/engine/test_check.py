"""Unit tests per construct, both dialects, over MemoryReads."""

from __future__ import annotations

import pytest
from tenantguard.relations.reads import MemoryReads, TupleMeta
from tenantguard.schema import load
from tenantguard.schema.engine import (
    ConditionError,
    Decision,
    InvalidQuery,
    Limits,
    QueryTooBroad,
    ResolutionTooComplex,
    SchemaEngine,
    UnknownRelation,
)

FGA = """model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define parent: [folder]
    define owner: [user]
    define viewer: [user, group#member] or owner or viewer from parent
type doc
  relations
    define parent: [folder]
    define blocked: [user]
    define editor: [user]
    define viewer: [user, user:*, user with ip_ok] or viewer from parent
    define can_view: viewer but not blocked
    define can_edit: editor and viewer
condition ip_ok(ip: ipaddress, cidr: string) {
  ip.in_cidr(cidr)
}
"""

ZED = """use expiration

definition user {}

definition group {
    relation member: user | group#member
}

definition folder {
    relation parent: folder
    relation viewer: user | group#member
    permission view = viewer + parent->view
}

definition doc {
    relation parent: folder
    relation blocked: user
    relation editor: user
    relation viewer: user | user:* | user with ip_ok | user with expiration
    permission view = viewer + parent->view
    permission can_view = view - blocked
    permission can_edit = editor & view
    permission all_view = parent.all(view)
    permission nobody = nil
}

caveat ip_ok(ip ipaddress, cidr string) {
    ip.in_cidr(cidr)
}
"""

TUPLES = [
    ("group:a", "member", "user:anne"),
    ("group:b", "member", "group:a#member"),
    ("folder:f1", "viewer", "group:b#member"),
    ("folder:f2", "parent", "folder:f1"),
    ("doc:d", "parent", "folder:f2"),
    ("doc:d", "blocked", "user:bob"),
    ("doc:d", "viewer", "user:bob"),
    ("doc:d", "editor", "user:anne"),
    ("doc:d", "editor", "user:carl"),
    ("doc:p", "viewer", "user:*"),
]


def engine(dialect: str) -> SchemaEngine:
    return SchemaEngine(load(FGA, "m.fga") if dialect == "openfga" else load(ZED, "m.zed"))


def reads() -> MemoryReads:
    return MemoryReads((o, r, s, None) for o, r, s in TUPLES)


VIEW = {"openfga": "viewer", "spicedb": "view"}


@pytest.mark.parametrize("dialect", ["openfga", "spicedb"])
def test_hierarchy_nested_groups_exclusion_intersection_wildcard(dialect: str) -> None:
    e, r = engine(dialect), reads()
    view = VIEW[dialect]
    assert e.check(r, "doc:d", view, "user:anne").allowed  # 2 folders, 2 nested groups
    assert e.check(r, "doc:d", "can_view", "user:anne").allowed
    assert not e.check(r, "doc:d", "can_view", "user:bob").allowed  # excluded
    assert e.check(r, "doc:d", view, "user:bob").allowed
    assert e.check(r, "doc:d", "can_edit", "user:anne").allowed
    assert not e.check(r, "doc:d", "can_edit", "user:carl").allowed  # editor but not viewer
    assert e.check(r, "doc:p", view, "user:zed").allowed  # wildcard
    assert not e.check(r, "doc:d", view, "user:zed").allowed


def test_openfga_userset_subject_and_self() -> None:
    e, r = engine("openfga"), reads()
    assert e.check(r, "doc:d", "viewer", "group:a#member").allowed
    assert e.check(r, "group:a", "member", "group:a#member").allowed
    assert not e.check(r, "doc:x", "viewer", "group:a#member").allowed


def test_wildcard_does_not_satisfy_a_userset_subject() -> None:
    e, r = engine("openfga"), reads()
    assert not e.check(r, "doc:p", "viewer", "group:a#member").allowed


def test_asking_about_a_wildcard_subject_follows_each_original() -> None:
    """OpenFGA answers a check for ``user:*`` (is the object public to users? checked against its
    CLI: true where a ``user:*`` tuple grants, directly or through a group); SpiceDB refuses a
    wildcard subject in CheckPermission and LookupResources (wildcard not allowed)."""
    fga, r = engine("openfga"), reads()
    assert fga.check(r, "doc:p", "viewer", "user:*").allowed  # doc:p viewer user:*
    assert not fga.check(r, "folder:f1", "viewer", "user:*").allowed
    assert [i.id for i in fga.lookup_resources(r, "doc", "viewer", "user:*").items] == ["doc:p"]
    zed = engine("spicedb")
    for ask in (lambda: zed.check(r, "doc:p", "view", "user:*"),
                lambda: zed.check_relations(r, "doc:p", ["view"], "user:*"),
                lambda: zed.lookup_resources(r, "doc", "view", "user:*")):
        with pytest.raises(InvalidQuery) as caught:
            ask()
        assert caught.value.rule == "wildcard_subject"
    assert zed.check(r, "doc:p", "view", "user:zed").allowed  # the grant itself still works


def test_spicedb_all_arrow_and_nil() -> None:
    e, r = engine("spicedb"), reads()
    assert e.check(r, "doc:d", "all_view", "user:anne").allowed
    r.write("doc:d", "parent", "folder:other")
    assert not e.check(r, "doc:d", "all_view", "user:anne").allowed  # one parent lacks it
    assert not e.check(r, "doc:none", "all_view", "user:anne").allowed  # no parent: nobody
    assert not e.check(r, "doc:d", "nobody", "user:anne").allowed


def test_tuples_the_schema_no_longer_allows_are_ignored() -> None:
    e, r = engine("openfga"), reads()
    r.write("doc:q", "viewer", "folder:f1")  # folder is not an allowed subject of doc#viewer
    r.write("doc:q", "blocked", "user:*")  # wildcard not allowed on blocked
    r.write("doc:q", "viewer", "user:dan")
    assert e.check(r, "doc:q", "can_view", "user:dan").allowed
    r.write("doc:q", "viewer", "user:eve", TupleMeta(condition="nope"))
    assert not e.check(r, "doc:q", "viewer", "user:eve").allowed


@pytest.mark.parametrize("dialect", ["openfga", "spicedb"])
def test_conditions_three_valued(dialect: str) -> None:
    e, r = engine(dialect), reads()
    view = VIEW[dialect]
    r.write("doc:c", "viewer", "user:ivy", TupleMeta(condition="ip_ok", context={"cidr": "10.0.0.0/8"}))
    missing = e.check(r, "doc:c", view, "user:ivy")
    assert missing.decision is Decision.CONDITIONAL and missing.missing == ("ip",)
    assert e.check(r, "doc:c", view, "user:ivy", context={"ip": "10.1.2.3"}).allowed
    assert e.check(r, "doc:c", view, "user:ivy", context={"ip": "11.1.2.3"}).decision is Decision.DENIED
    # the tuple's context wins over the request's
    assert e.check(r, "doc:c", view, "user:ivy", context={"ip": "10.1.2.3", "cidr": "11.0.0.0/8"}).allowed
    with pytest.raises(ConditionError) as err:
        e.check(r, "doc:c", view, "user:ivy", context={"ip": "not-an-ip"})
    assert err.value.rule == "condition_eval"
    if dialect == "openfga":  # OpenFGA's ListObjects fails on a tuple whose condition lacks context
        with pytest.raises(ConditionError) as err:
            e.lookup_resources(r, "doc", view, "user:ivy")
        assert err.value.rule == "missing_parameters"
        return
    page = e.lookup_resources(r, "doc", view, "user:ivy")
    assert {(i.id, i.decision, i.missing) for i in page.items} == {
        ("doc:c", Decision.CONDITIONAL, ("ip",)), ("doc:p", Decision.ALLOWED, ())}


def test_conditional_under_exclusion_never_allows() -> None:
    e, r = engine("openfga"), reads()
    r.write("doc:c", "viewer", "user:ivy")
    r.write("doc:c", "blocked", "user:ivy")
    assert not e.check(r, "doc:c", "can_view", "user:ivy").allowed


def test_expiry() -> None:
    e, r = engine("spicedb"), reads()
    r.write("doc:t", "viewer", "user:tom", TupleMeta(expires_at=1000.0))
    assert e.check(r, "doc:t", "view", "user:tom", now=999.0).allowed
    assert not e.check(r, "doc:t", "view", "user:tom", now=1000.0).allowed
    assert [i.id for i in e.lookup_resources(r, "doc", "view", "user:tom", now=1000.0).items] == ["doc:p"]
    assert "doc:t" in {i.id for i in e.lookup_resources(r, "doc", "view", "user:tom", now=999.0).items}


def test_openfga_cycle_is_denied_spicedb_cycle_is_an_error() -> None:
    r = MemoryReads([("group:x", "member", "group:y#member", None), ("group:y", "member", "group:x#member", None)])
    assert not engine("openfga").check(r, "group:x", "member", "user:anne").allowed
    with pytest.raises(ResolutionTooComplex) as err:
        engine("spicedb").check(r, "group:x", "member", "user:anne")
    assert err.value.rule == "max_depth"


def test_depth_limit_is_an_error_never_a_wrong_answer() -> None:
    chain = [(f"group:g{i}", "member", f"group:g{i + 1}#member", None) for i in range(30)]
    r = MemoryReads([*chain, ("group:g30", "member", "user:anne", None)])
    e = engine("openfga")
    with pytest.raises(ResolutionTooComplex):
        e.check(r, "group:g0", "member", "user:anne")
    assert e.check(r, "group:g10", "member", "user:anne").allowed
    assert engine("spicedb").check(r, "group:g0", "member", "user:anne").allowed  # 50 in SpiceDB


def test_step_budget() -> None:
    r = MemoryReads((f"doc:d{i}", "viewer", "user:anne", None) for i in range(100))
    e = SchemaEngine(load(FGA, "m.fga"), Limits(max_steps=50))
    with pytest.raises(QueryTooBroad) as err:
        e.lookup_resources(r, "doc", "viewer", "user:anne", page_size=1000)
    assert err.value.rule == "step_budget"


def test_bad_queries_are_typed() -> None:
    e, r = engine("openfga"), reads()
    with pytest.raises(UnknownRelation):
        e.check(r, "doc:d", "nope", "user:anne")
    with pytest.raises(UnknownRelation):
        e.check(r, "nope:d", "viewer", "user:anne")
    with pytest.raises(InvalidQuery):
        e.check(r, "doc", "viewer", "user:anne")
    with pytest.raises(InvalidQuery):
        e.lookup_resources(r, "doc", "viewer", "user:anne", cursor="garbage")
    other = e.lookup_resources(r, "doc", "viewer", "user:anne", page_size=1).cursor
    assert other is not None
    with pytest.raises(InvalidQuery):
        e.lookup_resources(r, "doc", "viewer", "user:bob", cursor=other)


@pytest.mark.parametrize("dialect", ["openfga", "spicedb"])
def test_lookups(dialect: str) -> None:
    e, r = engine(dialect), reads()
    view = VIEW[dialect]
    assert {i.id for i in e.lookup_resources(r, "doc", view, "user:anne").items} == {"doc:d", "doc:p"}
    assert {i.id for i in e.lookup_resources(r, "doc", "can_view", "user:bob").items} == {"doc:p"}
    assert {i.id for i in e.lookup_subjects(r, "doc:d", view, "user").items} == {"user:anne", "user:bob"}
    assert {i.id for i in e.lookup_subjects(r, "doc:p", view, "user").items} == {"user:*"}
    assert {i.id for i in e.lookup_subjects(r, "doc:d", view, "group", "member").items} == {
        "group:a#member", "group:b#member"}


def test_expand_says_why() -> None:
    e, r = engine("openfga"), reads()
    tree = e.expand(r, "doc:d", "can_view")
    text = repr(tree)
    blocked = tree["tree"]["exclusion"]["subtract"]["computed"]
    assert blocked["relation"] == "blocked" and blocked["tree"] == {"tuples": [{"subject": "user:bob"}]}
    assert "group:a#member" in text and "user:anne" in text
