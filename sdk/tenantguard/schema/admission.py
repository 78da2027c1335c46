"""Which tuples a schema admits: the check OpenFGA's Write and SpiceDB's WriteRelationships
make before storing a relationship, so a tuple the schema forbids is refused with the rule
it breaks (the plane answers 422 naming it; ``model test`` reports it) instead of lying
unused in the index.

A relation admits a tuple when one of its allowed subject types matches exactly: the
subject's type, its relation (``group#member``) or wildcard (``user:*``), and its traits: a
tuple with condition ``c`` needs an allowed ``user with c``; one without a condition needs a
plain ``user`` (OpenFGA ``[user, user with c]`` admits both, ``[user with c]`` only the
former). Expiry: SpiceDB admits an expiring tuple only where ``with expiration`` is allowed
(and a non-expiring one only where a form without it is). OpenFGA has no expiry; an
OpenFGA-dialect schema admits expiry on any tuple, a tenantguard extension that can only
take access away, never grant it.
"""

from __future__ import annotations

from typing import Any

from tenantguard.errors import InvalidInput
from tenantguard.relations.model import Relationship
from tenantguard.schema.model import Schema, SubjectRef


class TupleNotAllowed(InvalidInput):
    """A tuple the active schema does not admit; ``rule`` says which check failed."""

    code = "tuple_not_allowed"
    http_status = 422

    def __init__(self, message: str, *, rule: str, **detail: Any) -> None:
        super().__init__(message, rule=rule, **detail)
        self.rule = rule


def describe(ref: SubjectRef) -> str:
    """A restriction as the OpenFGA DSL writes it: ``user``, ``user:*``, ``group#member``,
    ``user with c``, ``user with expiration``."""
    text = f"{ref.type}:*" if ref.wildcard else ref.type + (f"#{ref.relation}" if ref.relation else "")
    traits = [t for t in (ref.condition, "expiration" if ref.expiration else None) if t]
    return text + (" with " + " and ".join(traits) if traits else "")


def check_tuple(schema: Schema, object: str, relation: str, subject: str, *,
                condition: str | None = None, expires: bool = False) -> None:
    """Raise TupleNotAllowed unless ``object#relation@subject`` (with ``condition``/expiry) may be written."""
    object_type = object.partition(":")[0]
    typedef = schema.types.get(object_type)
    if typedef is None:
        raise TupleNotAllowed(f"type '{object_type}' is not in the schema", rule="unknown_type", object=object)
    rel = typedef.relations.get(relation)
    if rel is None:
        raise TupleNotAllowed(f"type '{object_type}' has no relation '{relation}'", rule="unknown_relation",
                              object=object, relation=relation)
    if not rel.allowed:
        what = "a permission" if rel.is_permission else "computed"
        raise TupleNotAllowed(f"{object_type}#{relation} is {what}: tuples cannot be written to it",
                              rule="not_assignable", object=object, relation=relation)
    if condition is not None and condition not in schema.conditions:
        raise TupleNotAllowed(f"condition '{condition}' is not in the schema", rule="unknown_condition",
                              condition=condition)
    subject_ref, _, subject_relation = subject.partition("#")
    subject_type, _, subject_id = subject_ref.partition(":")
    wildcard = subject_id == "*"
    spicedb = schema.dialect == "spicedb"
    for ref in rel.allowed:
        if (ref.type, ref.relation or "", ref.wildcard) != (subject_type, subject_relation, wildcard):
            continue
        if ref.condition != condition:
            continue
        if spicedb and ref.expiration != expires:
            continue
        return
    allowed = ", ".join(describe(ref) for ref in rel.allowed)
    traits = [t for t in (condition, "expiration" if expires and spicedb else None) if t]
    shown = subject_type + (":*" if wildcard else "") + (f"#{subject_relation}" if subject_relation else "")
    shown += " with " + " and ".join(traits) if traits else ""
    raise TupleNotAllowed(f"{object_type}#{relation} allows {allowed}; not {shown}", rule="subject_not_allowed",
                          object=object, relation=relation, subject=subject)


def check_relationship(schema: Schema, rel: Relationship) -> None:
    """:func:`check_tuple` for a stored tuple: its condition's name and whether it expires."""
    meta = rel.meta
    check_tuple(schema, rel.object, rel.relation, rel.subject, condition=meta.condition if meta else None,
                expires=meta is not None and meta.expires_at is not None)


def refused_at(exc: TupleNotAllowed, index: int, rel: Relationship, **detail: Any) -> TupleNotAllowed:
    """``exc`` for the change at ``index`` of a batch: the message led by ``changes[i]`` (as a
    batch's other refusals are) and the tuple, ending with the rule; the detail names the
    position and the whole tuple."""
    named = {k: v for k, v in exc.detail.items() if k not in ("rule", "object", "relation", "subject")}
    shown = f"{rel.tenant} / {rel.object}#{rel.relation} @ {rel.subject}"  # the condition's context left out
    return TupleNotAllowed(f"changes[{index}] ({shown}): {exc.message} (rule {exc.rule})", rule=exc.rule,
                           index=index, tuple=rel.to_wire(), **named, **detail)
