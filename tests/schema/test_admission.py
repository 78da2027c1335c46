"""Tuples the schema admits, as OpenFGA's Write and SpiceDB's WriteRelationships decide."""

from __future__ import annotations

import pytest
from tenantguard.schema import load
from tenantguard.schema.admission import TupleNotAllowed, check_tuple

FGA = load("""\
model
  schema 1.1
type user
type group
  relations
    define member: [user]
type doc
  relations
    define owner: [user]
    define viewer: [user, user:*, group#member, user with ip_ok] or owner
    define guest: [user with ip_ok]
    define can_view: viewer
condition ip_ok(ip: ipaddress) {
  ip.in_cidr("10.0.0.0/8")
}
""", "m.fga")

ZED = load("""\
use expiration
definition user {}
caveat ip_ok(ip ipaddress) { ip.in_cidr("10.0.0.0/8") }
definition doc {
  relation viewer: user | user with expiration | user with ip_ok
  relation temp: user with expiration
  permission view = viewer + temp
}
""", "s.zed")


@pytest.mark.parametrize(("obj", "rel", "subject", "condition", "expires"), [
    ("doc:1", "viewer", "user:anne", None, False),
    ("doc:1", "viewer", "user:*", None, False),
    ("doc:1", "viewer", "group:eng#member", None, False),
    ("doc:1", "viewer", "user:anne", "ip_ok", False),
    ("doc:1", "guest", "user:anne", "ip_ok", False),
    ("doc:1", "viewer", "user:anne", None, True),  # OpenFGA has no expiry: an extension that only narrows
])
def test_openfga_admits_what_its_restrictions_name(obj: str, rel: str, subject: str, condition: str | None,
                                                   expires: bool) -> None:
    check_tuple(FGA, obj, rel, subject, condition=condition, expires=expires)


@pytest.mark.parametrize(("obj", "rel", "subject", "condition", "rule", "words"), [
    ("folder:1", "viewer", "user:anne", None, "unknown_type", "'folder'"),
    ("doc:1", "editor", "user:anne", None, "unknown_relation", "'editor'"),
    ("doc:1", "can_view", "user:anne", None, "not_assignable", "doc#can_view"),
    ("doc:1", "owner", "user:*", None, "subject_not_allowed", "allows user; not user:*"),
    ("doc:1", "viewer", "group:eng", None, "subject_not_allowed", "not group"),
    ("doc:1", "viewer", "group:eng#owner", None, "subject_not_allowed", "group#member"),
    ("doc:1", "guest", "user:anne", None, "subject_not_allowed", "allows user with ip_ok; not user"),
    ("doc:1", "owner", "user:anne", "ip_ok", "subject_not_allowed", "not user with ip_ok"),
    ("doc:1", "viewer", "user:anne", "nope", "unknown_condition", "'nope'"),
])
def test_openfga_refuses_naming_the_rule(obj: str, rel: str, subject: str, condition: str | None,
                                         rule: str, words: str) -> None:
    with pytest.raises(TupleNotAllowed) as caught:
        check_tuple(FGA, obj, rel, subject, condition=condition)
    assert caught.value.rule == rule and words in str(caught.value), caught.value
    assert caught.value.http_status == 422


def test_spicedb_expiration_is_a_trait_of_the_allowed_type() -> None:
    check_tuple(ZED, "doc:1", "viewer", "user:a")
    check_tuple(ZED, "doc:1", "viewer", "user:a", expires=True)
    check_tuple(ZED, "doc:1", "temp", "user:a", expires=True)
    check_tuple(ZED, "doc:1", "viewer", "user:a", condition="ip_ok")
    with pytest.raises(TupleNotAllowed, match=r"allows user with expiration; not user$"):
        check_tuple(ZED, "doc:1", "temp", "user:a")
    with pytest.raises(TupleNotAllowed, match="not user with ip_ok and expiration"):
        check_tuple(ZED, "doc:1", "viewer", "user:a", condition="ip_ok", expires=True)
    with pytest.raises(TupleNotAllowed, match="permission"):
        check_tuple(ZED, "doc:1", "view", "user:a")
