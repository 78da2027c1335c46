"""The subject's schema permissions on the requested resource, for the policy's input.

A bundle with a relationship schema (``schema.fga`` / ``schema.json`` / ``schema.zed``) lets
Rego combine RBAC/ABAC rules with the schema: the core asks the schema engine, for every
relation and permission of the resource's type, whether the subject has it, and hands the
policy ``input.permissions`` (the names granted, sorted) and ``input.conditional_permissions``
(name -> the context parameters a condition lacks: SpiceDB's caveated answer; never a grant).
The example bundle's rule is ``input.action.name in input.permissions``.

It is computed only for policies that can read it (``input_paths``), over the same published
relations state as the rest of the decision, with the request's ``context`` as condition
parameters. An engine error (too deep, too broad, a condition that fails) is raised, so the
decision fails closed with its code: a permission left out could hide a deny rule's reason.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

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
    context = {k: v for k, v in (doc.get("context") or {}).items() if k != "service"}
    doc.update(permissions_of(engine, reads, doc.get("resource") or {}, subject, context))
    return doc
