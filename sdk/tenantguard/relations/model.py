"""Relationship tuples (Zanzibar style) and the change events that carry them.

A tuple reads ``tenant / object_type:object_id#relation @ subject_type:subject_id[#rel]``,
e.g. ``acme / project:p1#member @ group:eng#member``. Objects and subjects are kept as
their canonical strings (``"project:p1"``, ``"group:eng#member"``) because that is the
form the index stores, the wire carries and the policy sees; the parts are properties.

The grammar is deliberately narrow: names are lowercase identifiers, ids are one ASCII
token that covers emails, UUIDs and base64 ids but never whitespace, control characters,
``*``, ``>``, ``/``, ``#`` or ``:``. That keeps every tuple printable, parseable and
encodable into a NATS subject without ambiguity (see :mod:`.encoding`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from tenantguard.relations.errors import ChangeBatchInvalid, ChangeBatchTooLarge, RelationshipInvalid

NAME_PATTERN = r"[a-z][a-z0-9_]{0,63}"
ID_PATTERN = r"[A-Za-z0-9_\-.@+=|]{1,256}"
MAX_RELATIONSHIP_CHARS = 1024
MAX_BATCH_CHANGES = 1000
MAX_SEQ = 2**63 - 1

NAME_RE = re.compile(NAME_PATTERN)
ID_RE = re.compile(ID_PATTERN)
OBJECT_RE = re.compile(f"{NAME_PATTERN}:{ID_PATTERN}")
SUBJECT_RE = re.compile(f"{NAME_PATTERN}:{ID_PATTERN}(?:#{NAME_PATTERN})?")
# Spaces around "/" and "@" are optional; anything else (tabs, newlines) lands in a part
# and is rejected there with a message naming that part.
_TEXT_RE = re.compile(r" *([^ /]*) */ *([^ #]*)#([^ @]*) *@ *([^ ]*) *")

Op: TypeAlias = Literal["write", "delete"]
OPS: tuple[Op, ...] = ("write", "delete")


def _shown(value: object) -> str:
    """A bounded repr for error messages, so a huge input is not echoed back whole."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_name(field: str, value: object) -> str:
    """Validate a tenant, type or relation name; return it."""
    if not isinstance(value, str):
        raise RelationshipInvalid(f"{field} must be a string", field=field)
    if NAME_RE.fullmatch(value) is None:
        raise RelationshipInvalid(
            f"{field} {_shown(value)} must be a lowercase name matching {NAME_PATTERN}",
            field=field,
        )
    return value


def check_id(field: str, value: object) -> str:
    """Validate an object or subject id; return it."""
    if not isinstance(value, str):
        raise RelationshipInvalid(f"{field} must be a string", field=field)
    if ID_RE.fullmatch(value) is None:
        raise RelationshipInvalid(
            f"{field} {_shown(value)} must be 1-256 characters of A-Z a-z 0-9 _ - . @ + = |",
            field=field,
        )
    return value


def split_object(field: str, value: object) -> tuple[str, str]:
    """Validate ``type:id`` and return ``(type, id)``."""
    if not isinstance(value, str):
        raise RelationshipInvalid(f"{field} must be a string", field=field)
    kind, sep, ident = value.partition(":")
    if not sep:
        raise RelationshipInvalid(f"{field} {_shown(value)} must be type:id", field=field)
    return check_name(f"{field} type", kind), check_id(f"{field} id", ident)


def split_subject(value: object) -> tuple[str, str, str | None]:
    """Validate ``type:id[#relation]`` and return ``(type, id, relation or None)``."""
    if not isinstance(value, str):
        raise RelationshipInvalid("subject must be a string", field="subject")
    obj, sep, rel = value.partition("#")
    kind, ident = split_object("subject", obj)
    if not sep:
        return kind, ident, None
    return kind, ident, check_name("subject relation", rel)


@dataclass(frozen=True, slots=True, order=True)
class Relationship:
    """One tuple; immutable, validated on construction, ordered canonically."""

    tenant: str
    object: str
    relation: str
    subject: str

    def __post_init__(self) -> None:
        check_name("tenant", self.tenant)
        split_object("object", self.object)
        check_name("relation", self.relation)
        split_subject(self.subject)

    @classmethod
    def parse(cls, text: str) -> Relationship:
        """Parse ``tenant / type:id#relation @ type:id[#relation]`` (spaces optional)."""
        if not isinstance(text, str):
            raise RelationshipInvalid("relationship must be a string")
        if len(text) > MAX_RELATIONSHIP_CHARS:
            raise RelationshipInvalid(
                f"relationship is {len(text)} characters, limit {MAX_RELATIONSHIP_CHARS}"
            )
        match = _TEXT_RE.fullmatch(text)
        if match is None:
            raise RelationshipInvalid(
                f"relationship {_shown(text)} must look like "
                "'tenant / type:id#relation @ type:id[#relation]', e.g. 'acme/project:p1#member@user:alice'"
            )
        return cls(*match.groups())

    def __str__(self) -> str:
        return f"{self.tenant} / {self.object}#{self.relation} @ {self.subject}"

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Relationship:
        """Build from ``{"tenant", "object", "relation", "subject"}``; unknown keys ignored."""
        if not isinstance(data, Mapping):
            raise RelationshipInvalid("relationship must be an object")
        missing = [k for k in ("tenant", "object", "relation", "subject") if k not in data]
        if missing:
            raise RelationshipInvalid(f"relationship lacks {', '.join(missing)}", missing=missing)
        return cls(data["tenant"], data["object"], data["relation"], data["subject"])

    def to_wire(self) -> dict[str, str]:
        return {
            "tenant": self.tenant,
            "object": self.object,
            "relation": self.relation,
            "subject": self.subject,
        }

    @property
    def object_type(self) -> str:
        return self.object.partition(":")[0]

    @property
    def object_id(self) -> str:
        return self.object.partition(":")[2]

    @property
    def subject_type(self) -> str:
        return self.subject.partition(":")[0]

    @property
    def subject_id(self) -> str:
        return self.subject.partition(":")[2].partition("#")[0]

    @property
    def subject_relation(self) -> str | None:
        """The userset relation (``member`` in ``group:eng#member``), None for a direct subject."""
        return self.subject.partition("#")[2] or None


@dataclass(frozen=True, slots=True)
class RelationChange:
    """Write or delete one tuple; both are idempotent when applied."""

    op: Op
    rel: Relationship

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ChangeBatchInvalid(f"op {_shown(self.op)} must be 'write' or 'delete'")
        if not isinstance(self.rel, Relationship):
            raise ChangeBatchInvalid("rel must be a Relationship")

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> RelationChange:
        """Build from ``{"op", "rel": {...}}``; unknown keys ignored."""
        if not isinstance(data, Mapping):
            raise ChangeBatchInvalid("change must be an object")
        if "op" not in data or "rel" not in data:
            raise ChangeBatchInvalid("change needs 'op' and 'rel'")
        return cls(data["op"], Relationship.from_wire(data["rel"]))

    def to_wire(self) -> dict[str, Any]:
        return {"op": self.op, "rel": self.rel.to_wire()}


def _check_seq(seq: object) -> int:
    if not isinstance(seq, int) or isinstance(seq, bool) or not 1 <= seq <= MAX_SEQ:
        raise ChangeBatchInvalid(f"seq {_shown(seq)} must be an integer from 1 to 2**63-1")
    return seq


@dataclass(frozen=True, slots=True)
class ChangeBatch:
    """The unit applied atomically: changes in order under one monotonic sequence number."""

    seq: int
    changes: tuple[RelationChange, ...]

    def __post_init__(self) -> None:
        _check_seq(self.seq)
        if not isinstance(self.changes, tuple):
            if not isinstance(self.changes, list):
                raise ChangeBatchInvalid("changes must be a tuple or list")
            object.__setattr__(self, "changes", tuple(self.changes))
        _check_batch_size(len(self.changes))
        for i, change in enumerate(self.changes):
            if not isinstance(change, RelationChange):
                raise ChangeBatchInvalid(f"changes[{i}] must be a RelationChange", index=i)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ChangeBatch:
        """Build from ``{"seq", "changes": [...]}``; the size bound is checked before parsing."""
        if not isinstance(data, Mapping):
            raise ChangeBatchInvalid("batch must be an object")
        seq = _check_seq(data.get("seq"))
        raw = data.get("changes")
        if not isinstance(raw, list):
            raise ChangeBatchInvalid("changes must be a list")
        _check_batch_size(len(raw))
        return cls(seq, tuple(_change_at(i, item) for i, item in enumerate(raw)))

    def to_wire(self) -> dict[str, Any]:
        return {"seq": self.seq, "changes": [c.to_wire() for c in self.changes]}


def _check_batch_size(n: int) -> None:
    if n > MAX_BATCH_CHANGES:
        raise ChangeBatchTooLarge(
            f"batch has {n} changes, limit {MAX_BATCH_CHANGES}", limit=MAX_BATCH_CHANGES
        )


def _change_at(index: int, item: Any) -> RelationChange:
    """Parse one change, naming its position in the batch when it is bad."""
    try:
        return RelationChange.from_wire(item)
    except (RelationshipInvalid, ChangeBatchInvalid) as exc:
        raise type(exc)(f"changes[{index}]: {exc.message}", index=index, **exc.detail) from exc
