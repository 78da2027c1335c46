"""Tuple grammar, wire forms and change batches."""

from __future__ import annotations

import pytest
from hypothesis import given
from tenantguard.errors import InvalidInput, PayloadTooLarge
from tenantguard.relations import (
    MAX_BATCH_CHANGES,
    ChangeBatch,
    ChangeBatchInvalid,
    ChangeBatchTooLarge,
    RelationChange,
    Relationship,
    RelationshipInvalid,
)

from .strategies import relationships

GOOD = [
    "acme / project:p1#member @ user:alice",
    "acme / project:p1#member @ group:eng#member",
    "acme / doc:550e8400-e29b-41d4-a716-446655440000#viewer @ user:alice@example.com",
    "t_2 / folder:a.b|c+d=e#owner @ service_account:ci-bot",
]


@pytest.mark.parametrize("text", GOOD)
def test_parse_and_format_round_trip(text: str) -> None:
    rel = Relationship.parse(text)
    assert str(rel) == text
    assert Relationship.parse(str(rel)) == rel


def test_parts_are_exposed() -> None:
    rel = Relationship.parse("acme / project:p1#member @ group:eng#member")
    assert (rel.tenant, rel.object, rel.relation, rel.subject) == (
        "acme",
        "project:p1",
        "member",
        "group:eng#member",
    )
    assert (rel.object_type, rel.object_id) == ("project", "p1")
    assert (rel.subject_type, rel.subject_id, rel.subject_relation) == ("group", "eng", "member")
    assert Relationship.parse("a / b:c#d @ e:f").subject_relation is None


def test_parse_accepts_compact_spacing() -> None:
    assert Relationship.parse("acme/project:p1#member@user:a@b.c") == Relationship(
        "acme", "project:p1", "member", "user:a@b.c"
    )


@given(relationships())
def test_text_and_wire_round_trip(rel: Relationship) -> None:
    assert Relationship.parse(str(rel)) == rel
    assert Relationship.from_wire(rel.to_wire()) == rel


def test_wire_shape_and_unknown_fields_ignored() -> None:
    wire = {"tenant": "acme", "object": "project:p1", "relation": "member",
            "subject": "group:eng#member", "extra": 1}
    rel = Relationship.from_wire(wire)
    assert rel.to_wire() == {k: v for k, v in wire.items() if k != "extra"}


BAD_PARTS = [
    # (tenant, object, relation, subject, field named in the error)
    ("Acme", "project:p1", "member", "user:a", "tenant"),
    ("1acme", "project:p1", "member", "user:a", "tenant"),
    ("", "project:p1", "member", "user:a", "tenant"),
    ("a" * 65, "project:p1", "member", "user:a", "tenant"),
    ("acme.*", "project:p1", "member", "user:a", "tenant"),
    ("a>b", "project:p1", "member", "user:a", "tenant"),
    ("a.b", "project:p1", "member", "user:a", "tenant"),
    ("acme", "project", "member", "user:a", "object"),
    ("acme", "Project:p1", "member", "user:a", "object type"),
    ("acme", "project:", "member", "user:a", "object id"),
    ("acme", "project:p 1", "member", "user:a", "object id"),
    ("acme", "project:p*", "member", "user:a", "object id"),
    ("acme", "project:p>", "member", "user:a", "object id"),
    ("acme", "project:p\x00", "member", "user:a", "object id"),
    ("acme", "project:p\n", "member", "user:a", "object id"),
    ("acme", "project:p\u00e9", "member", "user:a", "object id"),
    ("acme", "project:a:b", "member", "user:a", "object id"),
    ("acme", "project:a/b", "member", "user:a", "object id"),
    ("acme", "project:" + "x" * 257, "member", "user:a", "object id"),
    ("acme", "project:p1", "Member", "user:a", "relation"),
    ("acme", "project:p1", "mem ber", "user:a", "relation"),
    ("acme", "project:p1", "member", "user", "subject"),
    ("acme", "project:*", "member", "user:a", "object id"),  # a wildcard is a subject only
    ("acme", "project:p1", "member", "user:a*", "subject id"),
    ("acme", "project:p1", "member", "user:**", "subject id"),
    ("acme", "project:p1", "member", "user:*#member", "subject"),  # a wildcard has no relation
    ("acme", "project:p1", "member", "user:a\tb", "subject id"),
    ("acme", "project:p1", "member", "group:eng#", "subject relation"),
    ("acme", "project:p1", "member", "group:eng#Member", "subject relation"),
    ("acme", "project:p1", "member", "group:eng#a#b", "subject relation"),
    ("acme", "project:p1", "member", "Group:eng", "subject type"),
    # SpiceDB's prefixed names run in schemas and `model test`, not on the wire (docs/relationships.md)
    ("acme", "linux/event:k", "member", "user:a", "object type"),
    ("acme", "project:p1", "member", "linux/user:a", "subject type"),
]


@pytest.mark.parametrize(("tenant", "obj", "rel", "subject", "field"), BAD_PARTS)
def test_every_rule_rejects_bad_input(tenant: str, obj: str, rel: str, subject: str,
                                      field: str) -> None:
    with pytest.raises(RelationshipInvalid) as info:
        Relationship(tenant, obj, rel, subject)
    assert info.value.detail["field"] == field
    assert info.value.code == "relationship_invalid"
    assert isinstance(info.value, InvalidInput)
    assert info.value.http_status == 400


def test_ids_at_the_length_limit_are_accepted() -> None:
    rel = Relationship("a" * 64, "b:" + "x" * 256, "c" * 64, "d:" + "y" * 256 + "#" + "e" * 64)
    assert Relationship.parse(str(rel)) == rel


@pytest.mark.parametrize(
    "text",
    [
        "acme project:p1#member @ user:a",  # no "/"
        "acme / project:p1 member @ user:a",  # no "#"
        "acme / project:p1#member user:a",  # no "@"
        "acme / project:p1#member @ user:a extra",
        "acme\t/ project:p1#member @ user:a",
        "",
    ],
)
def test_parse_rejects_malformed_text(text: str) -> None:
    with pytest.raises(RelationshipInvalid):
        Relationship.parse(text)


def test_parse_bounds_input_before_matching() -> None:
    with pytest.raises(RelationshipInvalid, match="limit 1024"):
        Relationship.parse("acme / project:p1#member @ user:" + "a" * 2000)


@pytest.mark.parametrize("value", [None, 1, ["acme"], b"acme"])
def test_non_strings_are_rejected(value: object) -> None:
    with pytest.raises(RelationshipInvalid, match="must be a string"):
        Relationship(value, "project:p1", "member", "user:a")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "wire",
    [
        {"tenant": "acme", "object": "project:p1", "relation": "member"},
        ["acme", "project:p1", "member", "user:a"],
        {"tenant": "acme", "object": "project:p1", "relation": "member", "subject": 5},
    ],
)
def test_from_wire_rejects_bad_shapes(wire: object) -> None:
    with pytest.raises(RelationshipInvalid):
        Relationship.from_wire(wire)  # type: ignore[arg-type]


def test_relationship_is_frozen_and_ordered() -> None:
    a = Relationship.parse("acme / project:p1#member @ user:a")
    b = Relationship.parse("acme / project:p1#member @ user:b")
    assert sorted([b, a]) == [a, b]
    with pytest.raises(AttributeError):
        a.tenant = "globex"  # type: ignore[misc]


# --------------------------------------------------------------------------- changes


def _wire_change(subject: str = "user:a", op: str = "write") -> dict[str, object]:
    return {"op": op, "rel": {"tenant": "acme", "object": "project:p1", "relation": "member",
                              "subject": subject}}


def test_batch_wire_round_trip() -> None:
    wire = {"seq": 7, "changes": [_wire_change(), _wire_change("group:g#member", "delete")]}
    batch = ChangeBatch.from_wire(wire)
    assert batch.seq == 7
    assert [c.op for c in batch.changes] == ["write", "delete"]
    assert batch.to_wire() == wire
    assert ChangeBatch.from_wire(batch.to_wire()) == batch


def test_batch_names_the_bad_change() -> None:
    wire = {"seq": 1, "changes": [_wire_change(), _wire_change("user:a b")]}
    with pytest.raises(RelationshipInvalid) as info:
        ChangeBatch.from_wire(wire)
    assert info.value.detail["index"] == 1
    assert info.value.message.startswith("changes[1]:")


@pytest.mark.parametrize("op", ["upsert", "", None, "WRITE"])
def test_unknown_op_rejected(op: object) -> None:
    with pytest.raises(ChangeBatchInvalid):
        ChangeBatch.from_wire({"seq": 1, "changes": [_wire_change(op=op)]})  # type: ignore[arg-type]


@pytest.mark.parametrize("seq", [0, -1, True, "1", 1.0, None, 2**63])
def test_bad_seq_rejected(seq: object) -> None:
    with pytest.raises(ChangeBatchInvalid, match="seq"):
        ChangeBatch.from_wire({"seq": seq, "changes": []})


def test_batch_size_is_bounded_before_parsing() -> None:
    # the surplus items are not even valid changes: the bound must trip first
    wire = {"seq": 1, "changes": [None] * (MAX_BATCH_CHANGES + 1)}
    with pytest.raises(ChangeBatchTooLarge) as info:
        ChangeBatch.from_wire(wire)
    assert isinstance(info.value, PayloadTooLarge)
    assert info.value.http_status == 413
    rel = Relationship.parse("acme / project:p1#member @ user:a")
    with pytest.raises(ChangeBatchTooLarge):
        ChangeBatch(1, (RelationChange("write", rel),) * (MAX_BATCH_CHANGES + 1))
    assert len(ChangeBatch(1, [RelationChange("write", rel)] * MAX_BATCH_CHANGES).changes) == 1000


def test_batch_rejects_foreign_items() -> None:
    with pytest.raises(ChangeBatchInvalid, match=r"changes\[0\]"):
        ChangeBatch(1, ("acme / project:p1#member @ user:a",))  # type: ignore[arg-type]
    with pytest.raises(ChangeBatchInvalid):
        RelationChange("write", "acme / project:p1#member @ user:a")  # type: ignore[arg-type]
