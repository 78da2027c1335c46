"""Tuples as the two tools write them: OpenFGA's ``{user, relation, object, condition}``
objects and CSV rows, and SpiceDB's ``doc:1#viewer@user:anne[caveat:{...}][expiration:...]``.

Both become ``TupleSpec``. A SpiceDB subject relation ``...`` (the subject itself) is
dropped, as SpiceDB does; OpenFGA's ``user:*`` and SpiceDB's ``user:*`` are the same wildcard.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tenantguard.relations.reads import TupleMeta
from tenantguard.schema.modeltest.cases import TupleSpec
from tenantguard.schema.modeltest.errors import TestFileError

_NAME = r"[a-z][a-z0-9_]*(?:/[a-z][a-z0-9_]*)*"
_ID = r"[^\s#@:\[\]]+"
ZED_RELATIONSHIP = re.compile(
    rf"(?P<object>{_NAME}:{_ID})#(?P<relation>[a-z][a-z0-9_]*)"
    rf"@(?P<subject>{_NAME}:(?:{_ID}|\*))(?:#(?P<subject_relation>[a-z][a-z0-9_]*|\.\.\.))?"
)
_OBJECT = re.compile(rf"{_NAME}:{_ID}")
_SUBJECT = re.compile(rf"{_NAME}:(?:{_ID}|\*)(?:#[a-z][a-z0-9_]*)?")
CSV_COLUMNS = ("user_type", "user_id", "user_relation", "relation", "object_type", "object_id",
               "condition_name", "condition_context")


def parse_time(where: str, value: object) -> float:
    """An RFC 3339 timestamp (``Z`` or an offset) as POSIX seconds."""
    if isinstance(value, datetime):  # YAML reads unquoted timestamps as datetimes
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise TestFileError(where, f"{value!r} is not an RFC 3339 time", rule="bad_tuple") from None
    else:
        raise TestFileError(where, f"{value!r} is not an RFC 3339 time", rule="bad_tuple")
    if moment.tzinfo is None:
        raise TestFileError(where, f"{value!r} has no time zone (add Z)", rule="bad_tuple")
    return moment.timestamp()


def _context(where: str, value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise TestFileError(where, "a context must be a mapping of parameter names to values", rule="bad_tuple")
    return dict(value)


def fga_tuple(where: str, item: object) -> TupleSpec:
    """One OpenFGA tuple object: ``{user, relation, object[, condition: {name, context}]}``."""
    if not isinstance(item, Mapping):
        raise TestFileError(where, "a tuple must be a mapping with user, relation and object", rule="bad_tuple")
    user, relation, obj = item.get("user"), item.get("relation"), item.get("object")
    if not (isinstance(user, str) and _SUBJECT.fullmatch(user)):
        raise TestFileError(where, f"tuple user {user!r} must be type:id, type:* or type:id#relation",
                            rule="bad_tuple")
    if not (isinstance(obj, str) and _OBJECT.fullmatch(obj)):
        raise TestFileError(where, f"tuple object {obj!r} must be type:id", rule="bad_tuple")
    if not (isinstance(relation, str) and re.fullmatch(r"[a-z][a-z0-9_]*", relation)):
        raise TestFileError(where, f"tuple relation {relation!r} must be a name", rule="bad_tuple")
    meta = None
    condition = item.get("condition")
    if condition is not None:
        if not isinstance(condition, Mapping) or not isinstance(condition.get("name"), str):
            raise TestFileError(where, "a tuple's condition must be {name, context}", rule="bad_tuple")
        meta = TupleMeta(condition=condition["name"], context=_context(where, condition.get("context")))
    return TupleSpec(obj, relation, user, meta)


def fga_csv(where: str, text: str) -> list[TupleSpec]:
    """OpenFGA's CSV tuple file (``fga tuple write --file x.csv``): a header naming the columns."""
    rows = csv.DictReader(io.StringIO(text))
    missing = {"user_type", "user_id", "relation", "object_type", "object_id"} - set(rows.fieldnames or ())
    if missing:
        raise TestFileError(where, f"CSV header lacks {', '.join(sorted(missing))}", rule="bad_tuple")
    out = []
    for n, row in enumerate(rows, start=2):
        user = f"{row['user_type']}:{row['user_id']}"
        if row.get("user_relation"):
            user += f"#{row['user_relation']}"
        item: dict[str, Any] = {"user": user, "relation": row["relation"],
                                "object": f"{row['object_type']}:{row['object_id']}"}
        if row.get("condition_name"):
            try:
                context = json.loads(row.get("condition_context") or "{}")
            except json.JSONDecodeError as exc:
                raise TestFileError(f"{where}:{n}", f"condition_context is not JSON: {exc.msg}",
                                    rule="bad_tuple") from None
            item["condition"] = {"name": row["condition_name"], "context": context}
        out.append(fga_tuple(f"{where}:{n}", item))
    return out


def _brackets(where: str, rest: str) -> tuple[str | None, dict[str, Any], float | None]:
    """``[caveat]``, ``[caveat:{json}]`` and ``[expiration:TIME]`` after a SpiceDB relationship."""
    caveat: str | None = None
    context: dict[str, Any] = {}
    expires: float | None = None
    decoder = json.JSONDecoder()
    i = 0
    while i < len(rest):
        m = re.compile(r"\[([a-z][a-z0-9_/]*)(:?)").match(rest, i)
        if m is None:
            raise TestFileError(where, f"unexpected {rest[i:i + 20]!r} after the relationship", rule="bad_tuple")
        name, i = m.group(1), m.end()
        if name == "expiration":
            end = rest.find("]", i)
            if not m.group(2) or end < 0:
                raise TestFileError(where, "expiration needs a time: [expiration:2030-01-01T00:00:00Z]",
                                    rule="bad_tuple")
            expires, i = parse_time(where, rest[i:end]), end + 1
            continue
        if caveat is not None:
            raise TestFileError(where, "a relationship has at most one caveat", rule="bad_tuple")
        caveat = name
        if m.group(2):
            try:
                value, i = decoder.raw_decode(rest, i)
            except json.JSONDecodeError as exc:
                raise TestFileError(where, f"caveat context is not JSON: {exc.msg}", rule="bad_tuple") from None
            context = _context(where, value)
        if not rest.startswith("]", i):
            raise TestFileError(where, "a caveat's brackets are not closed", rule="bad_tuple")
        i += 1
    return caveat, context, expires


def zed_relationship(where: str, text: str) -> TupleSpec:
    """``doc:1#viewer@user:anne``, optionally ``[caveat:{...}]`` and ``[expiration:...]``."""
    text = text.strip()
    m = ZED_RELATIONSHIP.match(text)
    if m is None:
        raise TestFileError(where, f"{text[:80]!r} is not resource:id#relation@subject:id[#relation]",
                            rule="bad_tuple")
    caveat, context, expires = _brackets(where, text[m.end():])
    subject = m["subject"]
    if m["subject_relation"] and m["subject_relation"] != "...":
        subject += f"#{m['subject_relation']}"
    meta = TupleMeta(condition=caveat, context=context, expires_at=expires) if caveat or expires else None
    return TupleSpec(m["object"], m["relation"], subject, meta)
