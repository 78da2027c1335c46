"""Relationship tuples (Zanzibar style) and the change events that carry them.

A tuple reads ``tenant / object_type:object_id#relation @ subject_type:subject_id[#rel]``,
e.g. ``acme / project:p1#member @ group:eng#member``. Objects and subjects are kept as
their canonical strings (``"project:p1"``, ``"group:eng#member"``) because that is the
form the index stores, the wire carries and the policy sees; the parts are properties.

The grammar is deliberately narrow: names are lowercase identifiers, ids are one ASCII
token that covers emails, UUIDs and base64 ids but never whitespace, control characters,
``*``, ``>``, ``/``, ``#`` or ``:``. That keeps every tuple printable, parseable and
encodable into a NATS subject without ambiguity (see :mod:`.encoding`).

Two extensions, as OpenFGA and SpiceDB have them:

* a **wildcard** subject ``user:*`` (every subject of that type: public access). ``*`` is an
  id only there: never an object id, never with a subject relation (``user:*#member``);
* **meta** (:class:`~tenantguard.relations.reads.TupleMeta`): a condition (OpenFGA) / caveat
  (SpiceDB) name with the context written with the tuple, and an expiry. Text form follows
  SpiceDB's relationship strings (``zed``): ``acme / doc:1#viewer @ user:anne[ip_ok:{"cidr":
  "10.0.0.0/8"}][expiration:2026-12-31T00:00:00Z]``; on the wire ``"condition": {"name",
  "context"}`` (OpenFGA's field) and ``"expires_at"`` (RFC 3339). Meta is not part of a
  tuple's identity: equality and order ignore it, so a write with other meta replaces the
  tuple and a delete names the tuple whatever its meta. The relation builtins and group
  expansion (``RelationIndex.check``/``relations_of``) never see a tuple with meta: they
  cannot evaluate a condition, so such a tuple grants only through a schema (fail closed).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from tenantguard.relations.errors import ChangeBatchInvalid, ChangeBatchTooLarge, RelationshipInvalid
from tenantguard.relations.reads import EMPTY_CONTEXT, TupleMeta

NAME_PATTERN = r"[a-z][a-z0-9_]{0,63}"
ID_PATTERN = r"[A-Za-z0-9_\-.@+=|]{1,256}"
MAX_RELATIONSHIP_CHARS = 1024
MAX_BATCH_CHANGES = 1000
MAX_SEQ = 2**63 - 1
WILDCARD = "*"
MAX_CONTEXT_BYTES = 4096  # a condition's context, as canonical JSON
MAX_CONTEXT_DEPTH = 8  # nesting of objects and arrays inside a context (the context itself is 1)
MAX_EXPIRES_AT = 253402300799.0  # 9999-12-31T23:59:59Z
MAX_TEXT_CHARS = MAX_RELATIONSHIP_CHARS + MAX_CONTEXT_BYTES + 128  # a tuple's text form with its meta
EXPIRATION = "expiration"  # the text form's expiry bracket, as zed writes it

NAME_RE = re.compile(NAME_PATTERN)
ID_RE = re.compile(ID_PATTERN)
OBJECT_RE = re.compile(f"{NAME_PATTERN}:{ID_PATTERN}")
SUBJECT_RE = re.compile(f"{NAME_PATTERN}:(?:{ID_PATTERN}(?:#{NAME_PATTERN})?|\\*)")
# Spaces around "/" and "@" are optional; anything else (tabs, newlines) lands in a part
# and is rejected there with a message naming that part. Meta brackets follow the subject.
_TEXT_RE = re.compile(r" *([^ /]*) */ *([^ #]*)#([^ @]*) *@ *([^ \[]*) *(\[.*)?", re.DOTALL)

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
    """Validate ``type:id[#relation]`` or the wildcard ``type:*``; return ``(type, id, relation or None)``."""
    if not isinstance(value, str):
        raise RelationshipInvalid("subject must be a string", field="subject")
    obj, sep, rel = value.partition("#")
    if obj[-2:] == ":*":  # the wildcard (no id may hold "*", so nothing else ends so)
        kind = obj[:-2]
        if sep:
            raise RelationshipInvalid(
                f"subject {_shown(value)}: a wildcard names every {kind!r}, it has no relation", field="subject"
            )
        return check_name("subject type", kind), WILDCARD, None
    kind, ident = split_object("subject", obj)
    if not sep:
        return kind, ident, None
    return kind, ident, check_name("subject relation", rel)


def _check_context_value(value: Any, depth: int) -> None:
    """Depth, and numbers the signed change events carry exactly: integers within 64 bits (events
    refuse floats, whose text form is not canonical; write a decimal as a string)."""
    if depth > MAX_CONTEXT_DEPTH:
        raise RelationshipInvalid(f"condition context nests deeper than {MAX_CONTEXT_DEPTH}", field="condition.context")
    if isinstance(value, float):
        raise RelationshipInvalid(f"condition context holds the number {value!r:.40}: numbers must be integers "
                                  "(write a decimal as a string)", field="condition.context")
    if isinstance(value, int) and not isinstance(value, bool) and not -MAX_SEQ <= value <= MAX_SEQ:
        raise RelationshipInvalid("condition context holds an integer beyond 64 bits", field="condition.context")
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        _check_context_value(item, depth + 1)


def check_context(value: object) -> Mapping[str, Any]:
    """A condition's context: a JSON object (finite numbers, string keys), bounded in size and
    depth; returned as a read-only canonical copy."""
    if not isinstance(value, Mapping):
        raise RelationshipInvalid("condition context must be a JSON object", field="condition.context")
    try:
        text = json.dumps(dict(value), sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise RelationshipInvalid(f"condition context is not plain JSON: {str(exc)[:80]}",
                                  field="condition.context") from None
    if len(text.encode()) > MAX_CONTEXT_BYTES:
        raise RelationshipInvalid(f"condition context is {len(text.encode())} bytes as JSON, limit {MAX_CONTEXT_BYTES}",
                                  field="condition.context", limit=MAX_CONTEXT_BYTES)
    copy = json.loads(text)
    _check_context_value(copy, 1)
    try:
        json.dumps(copy, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise RelationshipInvalid("condition context holds a lone surrogate", field="condition.context") from None
    return MappingProxyType(copy)


def check_expires_at(value: object) -> float:
    """POSIX seconds, finite, after 1970 and before 10000."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) \
            or not 0 < value <= MAX_EXPIRES_AT:
        raise RelationshipInvalid(f"expires_at {_shown(value)} must be POSIX seconds from 1970 to 9999",
                                  field="expires_at")
    return float(value)


def parse_time(value: object, field: str = "expires_at") -> float:
    """RFC 3339 (``2026-12-31T00:00:00Z``, an offset required) to POSIX seconds."""
    if not isinstance(value, str) or len(value) > 40 or "T" not in value.upper():
        raise RelationshipInvalid(f"{field} {_shown(value)} must be an RFC 3339 time, e.g. 2026-12-31T00:00:00Z",
                                  field=field)
    try:
        when = datetime.fromisoformat(value.upper().replace("Z", "+00:00") if value[-1:] in "zZ" else value)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise RelationshipInvalid(f"{field} {_shown(value)} must be an RFC 3339 time with Z or an offset",
                                  field=field)
    return check_expires_at(when.timestamp())


def format_time(seconds: float) -> str:
    """POSIX seconds as RFC 3339 UTC (``Z``), microseconds only when there are some."""
    when = datetime.fromtimestamp(seconds, UTC)
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if when.microsecond:
        text += f".{when.microsecond:06d}"
    return text + "Z"


def check_meta(meta: object) -> TupleMeta | None:
    """Validate a tuple's meta; a meta with neither a condition nor an expiry is None (a plain tuple)."""
    if meta is None:
        return None
    if not isinstance(meta, TupleMeta):
        raise RelationshipInvalid("meta must be a TupleMeta", field="meta")
    condition = meta.condition
    if condition is not None:
        check_name("condition name", condition)
    context = check_context(meta.context)
    if context and condition is None:
        raise RelationshipInvalid("a condition context needs a condition name", field="condition.context")
    expires_at = None if meta.expires_at is None else check_expires_at(meta.expires_at)
    if condition is None and expires_at is None:
        return None
    return TupleMeta(condition, context, expires_at)


def meta_to_wire(meta: TupleMeta | None) -> dict[str, Any]:
    """The wire fields of ``meta`` (none for a plain tuple)."""
    out: dict[str, Any] = {}
    if meta is None:
        return out
    if meta.condition is not None:
        out["condition"] = {"name": meta.condition, "context": dict(meta.context)}
    if meta.expires_at is not None:
        out["expires_at"] = format_time(meta.expires_at)
    return out


def meta_from_wire(data: Mapping[str, Any]) -> TupleMeta | None:
    """``condition`` (``{"name", "context"?}``) and ``expires_at`` (RFC 3339) of a wire tuple; null
    or absent fields mean none."""
    condition, context, expires_at = None, EMPTY_CONTEXT, None
    raw = data.get("condition")
    if raw is not None:
        if not isinstance(raw, Mapping):
            raise RelationshipInvalid("condition must be an object {name, context}", field="condition")
        condition = check_name("condition name", raw.get("name"))
        context = raw.get("context") if raw.get("context") is not None else EMPTY_CONTEXT
        context = check_context(context)
    if data.get("expires_at") is not None:
        expires_at = parse_time(data["expires_at"])
    if condition is None and expires_at is None:
        return None
    return TupleMeta(condition, context, expires_at)


def meta_text(meta: TupleMeta | None) -> str:
    """The text form's brackets: ``[name]`` or ``[name:{context}]``, then ``[expiration:TIME]``."""
    if meta is None:
        return ""
    out = ""
    if meta.condition is not None:
        out += f"[{meta.condition}"
        if meta.context:
            out += ":" + json.dumps(dict(meta.context), sort_keys=True, separators=(",", ":"))
        out += "]"
    if meta.expires_at is not None:
        out += f"[{EXPIRATION}:{format_time(meta.expires_at)}]"
    return out


_BRACKET_NAME_RE = re.compile(NAME_PATTERN)


def parse_meta_text(text: str) -> TupleMeta | None:
    """Invert :func:`meta_text`: at most one condition bracket and one expiration bracket."""
    decoder = json.JSONDecoder()
    condition: str | None = None
    context: Mapping[str, Any] = EMPTY_CONTEXT
    expires_at: float | None = None
    pos = 0
    while pos < len(text):
        if text[pos] != "[":
            raise RelationshipInvalid(f"unexpected {_shown(text[pos:])} after the subject; meta is "
                                      "[condition:{context}] and [expiration:RFC3339]", field="meta")
        name = _BRACKET_NAME_RE.match(text, pos + 1)
        if name is None:
            raise RelationshipInvalid(f"{_shown(text[pos:])}: a bracket starts with a condition name or "
                                      "'expiration'", field="meta")
        pos = name.end()
        if name.group() == EXPIRATION and text[pos : pos + 1] == ":" and text[pos + 1 : pos + 2] != "{":
            end = text.find("]", pos)
            if end < 0 or expires_at is not None:
                raise RelationshipInvalid("expiration must be one [expiration:RFC3339] bracket", field="expires_at")
            expires_at = parse_time(text[pos + 1 : end])
            pos = end + 1
            continue
        if condition is not None:
            raise RelationshipInvalid("a tuple has at most one condition", field="condition")
        condition = name.group()
        if text[pos : pos + 1] == ":":
            try:
                raw, pos = decoder.raw_decode(text, pos + 1)
            except (ValueError, RecursionError):
                raise RelationshipInvalid(f"condition {condition!r}: context is not JSON", field="condition.context"
                                          ) from None
            context = check_context(raw)
        if text[pos : pos + 1] != "]":
            raise RelationshipInvalid(f"condition {condition!r}: expected ']'", field="condition")
        pos += 1
    return check_meta(TupleMeta(condition, context, expires_at))


@dataclass(frozen=True, slots=True, order=True)
class Relationship:
    """One tuple; immutable, validated on construction, ordered canonically.

    ``meta`` (condition, expiry) is carried but is not part of the tuple's identity: it is left
    out of equality, hashing and order (see the module docstring)."""

    tenant: str
    object: str
    relation: str
    subject: str
    meta: TupleMeta | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        check_name("tenant", self.tenant)
        split_object("object", self.object)
        check_name("relation", self.relation)
        split_subject(self.subject)
        if self.meta is not None:
            object.__setattr__(self, "meta", check_meta(self.meta))

    def with_meta(self, meta: TupleMeta | None) -> Relationship:
        """The same tuple with ``meta`` (validated)."""
        return Relationship(self.tenant, self.object, self.relation, self.subject, meta)

    @classmethod
    def parse(cls, text: str) -> Relationship:
        """Parse ``tenant / type:id#relation @ type:id[#relation]`` (spaces optional), optionally
        followed by ``[condition:{context}]`` and ``[expiration:RFC3339]`` as zed writes them."""
        if not isinstance(text, str):
            raise RelationshipInvalid("relationship must be a string")
        limit = MAX_TEXT_CHARS if "[" in text else MAX_RELATIONSHIP_CHARS
        if len(text) > limit:
            raise RelationshipInvalid(f"relationship is {len(text)} characters, limit {limit}")
        match = _TEXT_RE.fullmatch(text)
        if match is None:
            raise RelationshipInvalid(
                f"relationship {_shown(text)} must look like "
                "'tenant / type:id#relation @ type:id[#relation]', e.g. 'acme/project:p1#member@user:alice'"
            )
        tenant, obj, relation, subject, brackets = match.groups()
        return cls(tenant, obj, relation, subject, parse_meta_text(brackets.rstrip(" ")) if brackets else None)

    def __str__(self) -> str:
        return f"{self.tenant} / {self.object}#{self.relation} @ {self.subject}{meta_text(self.meta)}"

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Relationship:
        """Build from ``{"tenant", "object", "relation", "subject"}`` and optional ``condition``
        (``{"name", "context"}``) and ``expires_at`` (RFC 3339); unknown keys ignored."""
        if not isinstance(data, Mapping):
            raise RelationshipInvalid("relationship must be an object")
        missing = [k for k in ("tenant", "object", "relation", "subject") if k not in data]
        if missing:
            raise RelationshipInvalid(f"relationship lacks {', '.join(missing)}", missing=missing)
        meta = meta_from_wire(data) if "condition" in data or "expires_at" in data else None
        return cls(data["tenant"], data["object"], data["relation"], data["subject"], meta)

    def to_wire(self) -> dict[str, Any]:
        """The four parts, plus ``condition`` and ``expires_at`` only when the tuple has them."""
        out: dict[str, Any] = {
            "tenant": self.tenant,
            "object": self.object,
            "relation": self.relation,
            "subject": self.subject,
        }
        if self.meta is not None:
            out.update(meta_to_wire(self.meta))
        return out

    def key_wire(self) -> dict[str, str]:
        """The four parts only: the tuple's identity (a check's or a cursor's question)."""
        return {"tenant": self.tenant, "object": self.object, "relation": self.relation, "subject": self.subject}

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
        if self.op == "delete" and self.rel.meta is not None:
            raise RelationshipInvalid("a delete removes the tuple whatever its condition and expiry: "
                                      "give neither condition nor expires_at", field="meta")

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
