"""Subjects and KV keys: injective, reversible, and only ever safe characters."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tenantguard.relations import (
    Relationship,
    RelationshipInvalid,
    decode_id,
    encode_id,
    object_subject,
    relationship_from_key,
    relationship_from_subject,
    relationship_key,
    relationship_subject,
    tenant_key_filter,
    tenant_subject,
)

from .strategies import ids, relationships

# JetStream KV key alphabet, no empty token, no leading/trailing dot.
KV_KEY = re.compile(r"[-/_=a-zA-Z0-9]+(?:\.[-/_=a-zA-Z0-9]+)*")


def assert_safe(text: str) -> None:
    assert KV_KEY.fullmatch(text), text
    assert not set(text) & set("*> \t\r\n")


@given(relationships())
def test_key_and_subject_round_trip(rel: Relationship) -> None:
    key = relationship_key(rel)
    assert_safe(key)
    assert len(key.split(".")) == 7
    assert relationship_from_key(key) == rel
    subject = relationship_subject(rel)
    assert_safe(subject)
    assert subject == f"tg.rel.{key}"
    assert relationship_from_subject(subject) == rel


@given(relationships(), relationships())
def test_keys_are_injective(a: Relationship, b: Relationship) -> None:
    assert (relationship_key(a) == relationship_key(b)) == (a == b)
    assert (relationship_subject(a) == relationship_subject(b)) == (a == b)


@given(ids, ids)
def test_id_encoding_is_injective_and_reversible(a: str, b: str) -> None:
    assert (encode_id(a) == encode_id(b)) == (a == b)
    assert decode_id(encode_id(a)) == a
    assert "." not in encode_id(a)
    assert re.fullmatch(r"[A-Za-z0-9_=-]+", encode_id(a))


def test_readable_ids_stay_verbatim() -> None:
    assert encode_id("550e8400-e29b-41d4-a716-446655440000") == (
        "550e8400-e29b-41d4-a716-446655440000"
    )
    assert encode_id("user_1") == "user_1"
    assert encode_id("alice@example.com") == "alice=40example=2Ecom"
    assert encode_id("a=b") == "a=3Db"
    assert encode_id("=2E") == "=3D2E"
    assert decode_id("=3D2E") == "=2E"


def test_examples() -> None:
    rel = Relationship.parse("acme / project:p1#member @ group:eng#member")
    assert relationship_key(rel) == "acme.project.p1.member.group.eng.member"
    direct = Relationship.parse("acme / project:a.b#member @ user:alice@x.io")
    assert relationship_subject(direct) == "tg.rel.acme.project.a=2Eb.member.user.alice=40x=2Eio._"
    assert tenant_subject("acme") == "tg.rel.acme.>"
    assert tenant_key_filter("acme") == "acme.>"
    assert object_subject("acme", "project:a.b") == "tg.rel.acme.project.a=2Eb"
    assert relationship_subject(direct).startswith(object_subject("acme", "project:a.b") + ".")


def test_dotted_ids_cannot_shift_tokens() -> None:
    """``project:a.b`` must not look like object ``a`` with an extra token ``b``."""
    a = Relationship("acme", "project:a.b", "member", "user:c")
    b = Relationship("acme", "project:a", "member", "user:b.c")
    assert relationship_key(a) != relationship_key(b)
    assert all(len(relationship_key(r).split(".")) == 7 for r in (a, b))


@pytest.mark.parametrize("tenant", ["acme.*", "a>b", "a.b", "*", ">", "acme.>", "ac me", ""])
def test_wildcard_tenants_are_rejected(tenant: str) -> None:
    with pytest.raises(RelationshipInvalid):
        tenant_subject(tenant)
    with pytest.raises(RelationshipInvalid):
        tenant_key_filter(tenant)
    with pytest.raises(RelationshipInvalid):
        object_subject(tenant, "project:p1")
    with pytest.raises(RelationshipInvalid):
        Relationship(tenant, "project:p1", "member", "user:a")


@pytest.mark.parametrize("raw", ["a*b", "a>b", "a b", "", "a\x00", "é", "a/b", "a:b", "a#b"])
def test_unencodable_ids_are_rejected(raw: str) -> None:
    with pytest.raises(RelationshipInvalid):
        encode_id(raw)
    with pytest.raises(RelationshipInvalid):
        object_subject("acme", f"project:{raw}")


@pytest.mark.parametrize(
    "token",
    [
        "a.b",  # an unescaped dot
        "a=2e",  # lowercase hex: not canonical
        "=41",  # escapes a character that is never escaped
        "a=2",  # truncated escape
        "a=",
        "a*",
        "",
        "=" + "2E" * 200,  # 399 decoded characters: over the limit
    ],
)
def test_decode_accepts_only_canonical_tokens(token: str) -> None:
    with pytest.raises(RelationshipInvalid):
        decode_id(token)


def test_decode_rejects_ids_over_the_length_limit() -> None:
    with pytest.raises(RelationshipInvalid):
        decode_id("a" * 257)
    assert decode_id("=2E" * 256) == "." * 256


@pytest.mark.parametrize(
    "key",
    [
        "acme.project.p1.member.user.alice",  # six tokens
        "acme.project.p1.member.user.alice._.x",  # eight
        "acme.project.p1.member.user.alice.Member",
        "acme.project.p1.member.user.alice@x._",
        "acme.project..member.user.alice._",
        "ac*e.project.p1.member.user.alice._",
    ],
)
def test_bad_keys_are_rejected(key: str) -> None:
    with pytest.raises(RelationshipInvalid):
        relationship_from_key(key)


def test_subject_prefix_is_required() -> None:
    with pytest.raises(RelationshipInvalid):
        relationship_from_subject("tg.other.acme.project.p1.member.user.alice._")


@given(st.sampled_from(["acme", "globex"]), relationships())
def test_tenant_filter_matches_only_its_tenant(tenant: str, rel: Relationship) -> None:
    prefix = tenant_subject(tenant)[:-1]  # "tg.rel.acme."
    assert relationship_subject(rel).startswith(prefix) == (rel.tenant == tenant)
