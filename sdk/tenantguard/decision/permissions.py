"""The subject's schema permissions on the requested resource, for the policy's input.

A bundle with a relationship schema (``schema.fga`` / ``schema.json`` / ``schema.zed``) lets
Rego combine RBAC/ABAC rules with the schema: the core asks the schema engine, for every
relation and permission of the resource's type, whether the subject has it, and hands the
policy ``input.permissions`` (the names granted, sorted) and ``input.conditional_permissions``
(name -> the context parameters a condition lacks: SpiceDB's caveated answer; never a grant).
A policy that needs a permission on another object than the resource (the resource's
project, its folder) asks ``tg.related(object, permission, subject)``: with a schema, that
builtin answers through the same engine (:func:`related_answer`).

It is computed only for policies that can read it (``input_paths``), over the same published
relations state as the rest of the decision, with the request's ``context`` as condition
parameters. An engine error (too deep, too broad, a condition that fails) is raised, so the
decision fails closed with its code: a permission left out could hide a deny rule's reason.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from tenantguard.errors import TenantGuardError
from tenantguard.relations.reads import RelationReads
from tenantguard.schema.engine import Decision, SchemaEngine
from tenantguard.schema.model import Schema

PERMISSION_MEMBERS = ("permissions", "conditional_permissions")
MAX_NAMES = 256  # relations and permissions asked about per decision (the schema's own cap is higher)


def reads_permissions(input_paths: Iterable[tuple[str, ...]]) -> bool:
    """Whether a policy reading ``input_paths`` can see the permissions members."""
    return any(not path or path[0] in PERMISSION_MEMBERS for path in input_paths)


def permissions_of(engine: SchemaEngine, reads: RelationReads, resource: Mapping[str, Any], subject: str,
                   context: Mapping[str, Any] | None, now: float | None = None) -> dict[str, Any]:
    """``{"permissions": [...], "conditional_permissions": {...}}`` of ``subject`` on ``resource``.

    A resource type the schema does not define, or a resource without an id, has no
    permissions (empty members): the policy decides what that means. A subject type the
    schema does not define has none either."""
    empty: dict[str, Any] = {"permissions": [], "conditional_permissions": {}}
    resource_type, resource_id = resource.get("type"), resource.get("id")
    if not isinstance(resource_type, str) or not isinstance(resource_id, str) or not resource_id:
        return empty
    typedef = engine.schema.types.get(resource_type)
    if typedef is None or subject.partition(":")[0] not in engine.schema.types:
        return empty
    moment = time.time() if now is None else now
    granted: list[str] = []
    conditional: dict[str, list[str]] = {}
    answers = engine.check_relations(reads, f"{resource_type}:{resource_id}", sorted(typedef.relations)[:MAX_NAMES],
                                     subject, context=context, now=moment)
    for name, answer in answers.items():
        if answer.decision is Decision.ALLOWED:
            granted.append(name)
        elif answer.decision is Decision.CONDITIONAL:
            conditional[name] = list(answer.missing)
    return {"permissions": granted, "conditional_permissions": conditional}


class ConditionUnresolved(TenantGuardError):
    """``tg.related`` met a conditional answer: a condition needs parameters the request did
    not give. A boolean cannot carry the third state, and either truth value could open a
    door (``allow if tg.related(...)`` or ``deny if tg.related(... "blocked" ...)``), so the
    decision denies with this code and the missing names instead."""

    code = "condition_unresolved"
    http_status = 403


def condition_context(input_doc: Mapping[str, Any]) -> dict[str, Any]:
    """The condition parameters a policy input carries: its ``context`` without ``service``
    (the core adds the caller's service name there; it is not the request's)."""
    context = input_doc.get("context")
    return {k: v for k, v in context.items() if k != "service"} if isinstance(context, Mapping) else {}


def related_answer(engine: SchemaEngine, reads: RelationReads, object: str, relation: str, subject: str,
                   context: Mapping[str, Any] | None, now: float | None = None) -> bool | None:
    """``tg.related(object, relation, subject)`` through the schema: True or False, or None when
    ``object``'s type is not the schema's (the caller answers from the tuples as without one).

    A subject type the schema does not define holds nothing (as in :func:`permissions_of`). An
    unknown relation, a malformed object, a query past the engine's limits or a failing
    condition raises its engine error, and a conditional answer raises
    :class:`ConditionUnresolved`: the decision denies with that code, whatever the policy
    would have made of a boolean."""
    if object.partition(":")[0] not in engine.schema.types:
        return None
    if subject.partition(":")[0] not in engine.schema.types:
        return False
    result = engine.check(reads, object, relation, subject, context=context,
                          now=time.time() if now is None else now)
    if result.decision is Decision.CONDITIONAL:
        raise ConditionUnresolved(f"{object}#{relation}@{subject} holds only under a condition whose "
                                  f"parameters the request does not give: {', '.join(result.missing)}",
                                  object=object, relation=relation, missing=list(result.missing))
    return result.decision is Decision.ALLOWED


def schema_engine(schema: Schema | None) -> SchemaEngine | None:
    """A bundle's schema prepared for decisions (None without one): once per revision."""
    return None if schema is None else SchemaEngine(schema)


def with_permissions_of(engine: SchemaEngine | None, reads: RelationReads | None,
                        input_doc: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a recorded or rebuilt input with the permissions ``engine`` gives over
    ``reads`` (replays: ``bundle impact`` and explain judge a schema change by its own answers).
    Without an engine or reads, the input's own members are kept."""
    doc = dict(input_doc)
    if engine is None or reads is None:
        return doc
    subject_doc = doc.get("subject") or {}
    subject = f"{subject_doc.get('type')}:{subject_doc.get('id')}"
    doc.update(permissions_of(engine, reads, doc.get("resource") or {}, subject, condition_context(doc)))
    return doc
