"""Wildcards, conditions and expiry on tuples: validation, the index's side table, the
attack on the relation builtins, snapshots and digests."""

from __future__ import annotations

import json

import pytest
from tenantguard.relations import (
    ChangeBatch,
    RelationChange,
    RelationIndex,
    Relationship,
    RelationshipInvalid,
    SnapshotInvalid,
    index_from_snapshot_bytes,
    relationship_from_subject,
    relationship_subject,
    snapshot_bytes,
)
from tenantguard.relations.model import MAX_CONTEXT_BYTES, MAX_CONTEXT_DEPTH
from tenantguard.relations.reads import TupleMeta

R = Relationship.parse


def apply(index: RelationIndex, *changes: tuple[str, str]) -> None:
    index.apply(ChangeBatch(index.applied_seq + 1, [RelationChange(op, R(t)) for op, t in changes]))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- model


def test_text_and_wire_forms_round_trip_with_meta() -> None:
    text = 'acme / doc:1#viewer @ user:anne[ip_ok:{"cidr":"10.0.0.0/8","n":[1,{"x":null}]}]' \
           '[expiration:2026-12-31T00:00:00Z]'
    rel = R(text)
    assert rel.meta == TupleMeta("ip_ok", {"cidr": "10.0.0.0/8", "n": [1, {"x": None}]}, 1798675200.0)
    assert str(rel) == text
    assert rel.to_wire() == {"tenant": "acme", "object": "doc:1", "relation": "viewer", "subject": "user:anne",
                             "condition": {"name": "ip_ok", "context": {"cidr": "10.0.0.0/8", "n": [1, {"x": None}]}},
                             "expires_at": "2026-12-31T00:00:00Z"}
    back = Relationship.from_wire(rel.to_wire())
    assert back.meta == rel.meta and str(back) == text
    assert R("acme/doc:1#viewer@user:anne[ip_ok]").meta == TupleMeta("ip_ok")
    # an offset is accepted and normalised to UTC
    assert R("acme/doc:1#v@user:a[expiration:2026-12-31T01:00:00+01:00]").meta == TupleMeta(expires_at=1798675200.0)
    # meta is not identity: the same tuple with other meta is equal (a write replaces it)
    assert R("acme/doc:1#viewer@user:anne[ip_ok]") == R("acme/doc:1#viewer@user:anne")
    assert R("acme/doc:1#viewer@user:anne").to_wire() == {
        "tenant": "acme", "object": "doc:1", "relation": "viewer", "subject": "user:anne"}


@pytest.mark.parametrize(("text", "needle"), [
    ("acme/doc:1#v@user:a[Ip]", "condition name"),
    ("acme/doc:1#v@user:a[foo/only_on_tuesday]", "condition 'foo'"),  # SpiceDB's prefixed caveat names
    ("acme/doc:1#v@user:a[ip:{nope}]", "not JSON"),
    ("acme/doc:1#v@user:a[ip:[1]]", "JSON object"),
    ("acme/doc:1#v@user:a[ip:{\"r\":0.5}]", "integers"),
    ("acme/doc:1#v@user:a[ip:{\"r\":18446744073709551616}]", "64 bits"),
    ("acme/doc:1#v@user:a[ip][ip2]", "at most one condition"),
    ("acme/doc:1#v@user:a[expiration:2026-12-31]", "RFC 3339"),
    ("acme/doc:1#v@user:a[expiration:2026-12-31T00:00:00]", "offset"),
    ("acme/doc:1#v@user:a[expiration:1960-01-01T00:00:00Z]", "1970"),
    ("acme/doc:1#v@user:a[expiration:2026-12-31T00:00:00Z][expiration:2027-01-01T00:00:00Z]", "one [expiration"),
    ("acme/doc:1#v@user:a[ip] x", "after the subject"),
    ("acme/doc:1#v@user:a[ip", "expected ']'"),
    ("acme/doc:*#v@user:a", "object id"),
    ("acme/doc:1#v@user:*#member", "wildcard"),
])
def test_bad_meta_and_wildcards_are_refused_by_name(text: str, needle: str) -> None:
    with pytest.raises(RelationshipInvalid, match=needle.replace("[", r"\[")):
        R(text)


def test_context_is_bounded_in_size_and_depth_and_needs_a_condition() -> None:
    base = {"tenant": "acme", "object": "doc:1", "relation": "v", "subject": "user:a"}
    big = {"k": "x" * MAX_CONTEXT_BYTES}
    with pytest.raises(RelationshipInvalid, match="bytes") as exc:
        Relationship.from_wire({**base, "condition": {"name": "c", "context": big}})
    assert exc.value.detail["limit"] == MAX_CONTEXT_BYTES
    deep: dict[str, object] = {}
    node = deep
    for _ in range(MAX_CONTEXT_DEPTH):
        node["d"] = node = {}
    with pytest.raises(RelationshipInvalid, match="deeper"):
        Relationship.from_wire({**base, "condition": {"name": "c", "context": deep}})
    shallow = {"d": {"d": {}}}
    assert Relationship.from_wire({**base, "condition": {"name": "c", "context": shallow}}).meta.context == shallow  # type: ignore[union-attr]
    with pytest.raises(RelationshipInvalid, match="needs a condition"):
        Relationship("acme", "doc:1", "v", "user:a", TupleMeta(None, {"a": 1}, 5.0))
    with pytest.raises(RelationshipInvalid, match="condition must be an object"):
        Relationship.from_wire({**base, "condition": "ip_ok"})
    with pytest.raises(RelationshipInvalid, match="expires_at"):
        Relationship("acme", "doc:1", "v", "user:a", TupleMeta(expires_at=float("nan")))
    # a meta with neither condition nor expiry is a plain tuple
    assert Relationship("acme", "doc:1", "v", "user:a", TupleMeta()).meta is None


def test_a_delete_names_the_tuple_not_its_meta() -> None:
    with pytest.raises(RelationshipInvalid, match="a delete removes the tuple"):
        RelationChange("delete", R("acme/doc:1#v@user:a[ip]"))


def test_a_wildcard_is_escaped_in_nats_subjects_and_decodes_back() -> None:
    rel = R("acme/doc:1#viewer@user:*")
    subject = relationship_subject(rel)
    assert "*" not in subject and subject.endswith(".user.=2A._")
    assert relationship_from_subject(subject) == rel
    with pytest.raises(RelationshipInvalid):  # only a whole subject id may be the wildcard
        relationship_from_subject("tg.rel.acme.doc.=2A.viewer.user.a._")


# --------------------------------------------------------------------------- index


def test_conditional_and_expiring_tuples_never_grant_through_check_or_relations_of() -> None:
    """The attack: an admin grants anne viewer "only from the office network" (or until
    yesterday); the policy's relation builtins cannot evaluate either, so they must not see
    the grant at all: not directly, not through a conditional group membership."""
    index = RelationIndex()
    apply(index,
          ("write", 'acme/doc:1#viewer@user:anne[ip_ok:{"cidr":"10.0.0.0/8"}]'),
          ("write", "acme/doc:2#viewer@user:anne[expiration:1970-01-02T00:00:00Z]"),  # long expired
          ("write", "acme/doc:3#viewer@group:eng#member"),
          ("write", "acme/group:eng#member@user:anne[ip_ok]"),  # conditional membership
          ("write", "acme/doc:4#viewer@group:ops#member[expiration:2099-01-01T00:00:00Z]"),  # expiring userset
          ("write", "acme/group:ops#member@user:anne"),
          ("write", "acme/doc:5#viewer@user:*"))
    bound = index.tenant("acme")
    for doc in ("doc:1", "doc:2", "doc:3", "doc:4"):
        assert not index.check("acme", doc, "viewer", "user:anne"), doc
        assert not bound.check(doc, "viewer", "user:anne"), doc
    assert not index.check("acme", "group:eng", "member", "user:anne")
    # a wildcard grants nothing to anne here either: group expansion matches subjects as written
    assert not index.check("acme", "doc:5", "viewer", "user:anne")
    assert index.relations_of("acme", "user:anne") == {"group:ops": ["member"]}
    assert list(bound.objects_of("user:anne", "doc", budget=100)) == []
    assert list(bound.members("group:eng#member", budget=100)) == []
    # ...while the schema engine's reads see every one of them, with its meta
    assert dict(bound.objects("doc", "viewer", "user:anne")) == {
        "doc:1": TupleMeta("ip_ok", {"cidr": "10.0.0.0/8"}), "doc:2": TupleMeta(expires_at=86400.0)}
    # the same tuple rewritten plain grants again; rewritten with meta it stops again
    apply(index, ("write", "acme/doc:1#viewer@user:anne"))
    assert index.check("acme", "doc:1", "viewer", "user:anne")
    apply(index, ("write", "acme/doc:1#viewer@user:anne[ip_ok]"))
    assert not index.check("acme", "doc:1", "viewer", "user:anne")


def test_the_side_table_counts_lists_replaces_and_deletes() -> None:
    index = RelationIndex()
    apply(index, ("write", "acme/doc:1#viewer@user:anne[ip_ok]"), ("write", "acme/doc:1#viewer@user:bob"))
    assert index.count() == 2 and index.count("acme") == 2
    apply(index, ("write", "acme/doc:1#viewer@user:anne[expiration:2030-01-01T00:00:00Z]"))  # replace meta
    listed = index.list("acme")
    assert [(str(r), r.meta) for r in listed] == [
        ("acme / doc:1#viewer @ user:anne[expiration:2030-01-01T00:00:00Z]", TupleMeta(expires_at=1893456000.0)),
        ("acme / doc:1#viewer @ user:bob", None)]
    assert index.count() == 2
    assert [str(r) for r in index.list("acme", subject="user:anne")] == [str(listed[0])]
    assert index.list("acme", relation="editor") == []
    apply(index, ("delete", "acme/doc:1#viewer@user:anne"))
    assert index.count() == 1 and index.view().meta_rows("acme") == []
    apply(index, ("delete", "acme/doc:1#viewer@user:bob"))
    assert index.count() == 0 and index.view().tenants() == []


def test_a_published_state_never_changes_under_a_later_batch() -> None:
    index = RelationIndex()
    apply(index, ("write", "acme/doc:1#viewer@user:anne[ip_ok]"))
    before = index.tenant("acme")
    apply(index, ("write", "acme/doc:1#viewer@user:anne[weekday]"), ("write", "acme/doc:1#viewer@user:bob[ip_ok]"))
    assert dict(before.subjects("doc:1", "viewer")) == {"user:anne": TupleMeta("ip_ok")}
    assert dict(index.tenant("acme").subjects("doc:1", "viewer")) == {
        "user:anne": TupleMeta("weekday"), "user:bob": TupleMeta("ip_ok")}


def test_compaction_keeps_the_side_table() -> None:
    index = RelationIndex()
    apply(index, ("write", "acme/doc:keep#viewer@user:anne[ip_ok]"))
    for round_ in range(6):  # churn plain tuples until the string tables are rebuilt
        apply(index, *(("write", f"acme/doc:r{round_}x{i}#viewer@user:u{round_}x{i}") for i in range(100)))
        apply(index, *(("delete", f"acme/doc:r{round_}x{i}#viewer@user:u{round_}x{i}") for i in range(100)))
    assert index.count() == 1
    assert dict(index.tenant("acme").subjects("doc:keep", "viewer")) == {"user:anne": TupleMeta("ip_ok")}


# --------------------------------------------------------------------------- snapshots and digests


def _header(data: bytes) -> dict[str, object]:
    return json.loads(data[: data.index(b"\n")])  # type: ignore[no-any-return]


def test_plain_tuples_and_wildcards_keep_snapshot_version_1() -> None:
    index = RelationIndex()
    apply(index, ("write", "acme/doc:1#viewer@user:*"), ("write", "acme/doc:1#viewer@group:eng#member"))
    data = snapshot_bytes(index)
    assert _header(data)["version"] == 1
    loaded = index_from_snapshot_bytes(data)
    assert loaded.digest() == index.digest() and loaded.list("acme") == index.list("acme")


def test_meta_makes_a_version_2_snapshot_that_round_trips() -> None:
    index = RelationIndex()
    apply(index, ("write", 'acme/doc:1#viewer@user:anne[ip_ok:{"a":1}][expiration:2030-01-01T00:00:00Z]'),
          ("write", "acme/doc:1#viewer@user:bob"), ("write", "globex/doc:1#viewer@user:*"))
    data = snapshot_bytes(index)
    assert _header(data)["version"] == 2
    loaded = index_from_snapshot_bytes(data)
    assert loaded.digest() == index.digest()
    assert [(str(r), r.meta) for r in loaded.list("acme")] == [(str(r), r.meta) for r in index.list("acme")]
    assert not loaded.check("acme", "doc:1", "viewer", "user:anne")
    scoped = index_from_snapshot_bytes(data, keep_types=frozenset({"folder"}))
    assert scoped.count() == 0  # scoped readers drop tuples with meta by type like any other


def test_a_snapshot_with_bad_meta_is_refused() -> None:
    import gzip
    import hashlib

    body = gzip.compress(b'["acme",[],[["doc:1","viewer","user:a",{"expires_at":"yesterday"}]]]\n', mtime=0)
    header = {"format": "tenantguard.relations.snapshot", "version": 2, "seq": 1, "count": 1, "tenants": 1,
              "body_size": len(body), "body_sha256": hashlib.sha256(body).hexdigest()}
    with pytest.raises(SnapshotInvalid, match="invalid tuple meta"):
        index_from_snapshot_bytes(json.dumps(header).encode() + b"\n" + body)
    header["version"] = 1  # a version 1 snapshot has no meta member at all
    with pytest.raises(SnapshotInvalid, match="unexpected structure"):
        index_from_snapshot_bytes(json.dumps(header).encode() + b"\n" + body)


def test_the_digest_covers_meta() -> None:
    digests = set()
    for suffix in ("", "[ip_ok]", "[weekday]", '[ip_ok:{"a":1}]', "[expiration:2030-01-01T00:00:00Z]"):
        index = RelationIndex()
        apply(index, ("write", f"acme/doc:1#viewer@user:anne{suffix}"))
        digests.add(index.digest())
    assert len(digests) == 5
