"""What a bundle's relationship schema proposes to search, beside the relations index.

Why: the index walk follows direct tuples and usersets only, so a document a user reaches
through a folder hierarchy (``viewer from parent``), which every check allows through
``input.permissions``, was never proposed, and search answered less than check allows.
When the pinned revision's policy consults the schema (``input.permissions`` or
``tg.related``) and the question's types are types of the schema, the schema engine's walks
(every relation of the type) propose too. They only propose: every candidate is still decided by the decision core.

Order: the index walk's candidates first, as without a schema, then the schema's that are
new, each once. Both walks are functions of the pinned state (the schema's ignores expiry
and conditions, which the decision applies), so an offset page token re-walks to the same
place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tenantguard.decision.core import PolicyRevision
from tenantguard.relations.reads import RelationReads
from tenantguard.schema.engine import InvalidQuery, SchemaEngine


def _engine(revision: PolicyRevision | None, *types: str) -> SchemaEngine | None:
    """The revision's schema when it can grant anything here: its policy consults the schema
    (reads the permissions or calls ``tg.related``) and the schema types every one of ``types``."""
    if revision is None or revision.schema is None or not revision.asks_schema:
        return None
    engine = revision.schema
    return engine if all(t in engine.schema.types for t in types) else None


def with_schema_resources(revision: PolicyRevision | None, reads: RelationReads, object_type: str, subject: str,
                          walk: Iterator[str], max_steps: int) -> Iterator[str]:
    """``walk`` (the index's candidates), then the objects of ``object_type`` the schema says
    ``subject`` may hold a relation on; ``walk`` alone without a schema that types both.
    ``QueryTooBroad`` past ``max_steps``, while iterating."""
    engine = _engine(revision, object_type, subject.partition(":")[0])
    if engine is None:
        return walk
    try:
        proposed = engine.resource_candidates(reads, object_type, subject, max_steps=max_steps)
    except InvalidQuery:  # a subject the engine cannot name holds no schema permission: a check denies it too
        return walk
    return union(walk, proposed)


def with_schema_subjects(revision: PolicyRevision | None, reads: RelationReads, object: str, subject_type: str,
                         walk: Iterator[str], max_steps: int) -> Iterator[str]:
    """``walk``, then the subjects of ``subject_type`` the schema says may hold a relation on
    ``object``; never ``subject_type:*``, which the schema reads as every subject, not one
    (a grant to every subject is found by the probe, as without a schema)."""
    engine = _engine(revision, object.partition(":")[0], subject_type)
    if engine is None:
        return walk
    try:
        proposed = engine.subject_candidates(reads, object, subject_type, max_steps=max_steps)
    except InvalidQuery:  # an object id the engine cannot name: no schema permission on it
        return walk
    wildcard = f"{subject_type}:*"
    return (s for s in union(walk, proposed) if s != wildcard)


def union(*walks: Iterable[str]) -> Iterator[str]:
    """Every walk's items in turn, each once (the first occurrence keeps its place)."""
    seen: set[str] = set()
    for walk in walks:
        for item in walk:
            if item not in seen:
                seen.add(item)
                yield item


__all__ = ["union", "with_schema_resources", "with_schema_subjects"]
