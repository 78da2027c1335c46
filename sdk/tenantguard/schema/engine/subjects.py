"""Parsing the canonical strings queries and tuples use: ``type:id``, ``type:id#rel``, ``type:*``."""

from __future__ import annotations

from dataclasses import dataclass

from tenantguard.schema.engine.errors import InvalidQuery

MAX_ID_LEN = 1024  # SpiceDB's object id limit (its extendedids suite asks with 1,024-character ids)
MAX_LEN = 2048  # a whole ``type:id#relation``: the id plus room for prefixed type names


@dataclass(frozen=True, slots=True)
class Subject:
    text: str  # as written: user:anne, group:eng#member, user:*
    object: str  # user:anne, group:eng, user:*
    type: str
    relation: str | None
    wildcard: bool
    kind: tuple[str, str | None]  # (type, relation): what Prepared.reach is keyed by
    # the subjects a tuple may name to grant it directly, with their kinds: itself, and type:* for a plain one
    grantees: tuple[tuple[str, tuple[str, str | None]], ...]


def _shown(text: str) -> str:
    """A bounded repr for messages: a 2,000-character id is not echoed back whole."""
    return repr(text) if len(text) <= 80 else repr(text[:77] + "...")


def split(text: str) -> tuple[str, str, str | None]:
    """(object, type, relation) of a subject string, without checks (tuples from the index)."""
    obj, _, rel = text.partition("#")
    return obj, obj.partition(":")[0], rel or None


def parse_object(text: str, what: str = "object") -> tuple[str, str]:
    """Validates ``type:id`` and returns (type, id)."""
    if not isinstance(text, str) or len(text) > MAX_LEN:
        raise InvalidQuery(f"{what} must be a string of at most {MAX_LEN} characters")
    t, sep, oid = text.partition(":")
    if not sep or not t or not oid or "#" in text:
        raise InvalidQuery(f"{what} {_shown(text)} is not type:id")
    if len(oid) > MAX_ID_LEN:
        raise InvalidQuery(f"{what} id must be at most {MAX_ID_LEN} characters")
    return t, oid


def parse_subject(text: str) -> Subject:
    if not isinstance(text, str) or len(text) > MAX_LEN:
        raise InvalidQuery(f"subject must be a string of at most {MAX_LEN} characters")
    obj, _, rel = text.partition("#")
    t, oid = parse_object(obj, "subject")
    if "#" in text and not rel:
        raise InvalidQuery(f"subject {_shown(text)} has an empty relation")
    own = (text, (t, "*" if oid == "*" else rel or None))
    grantees = (own,) if rel or oid == "*" else (own, (f"{t}:*", (t, "*")))
    return Subject(text, obj, t, rel or None, oid == "*", (t, rel or None), grantees)
