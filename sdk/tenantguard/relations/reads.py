"""What the schema engine reads: one tenant's tuples, forward and reverse.

The engine (``tenantguard.schema.engine``) evaluates a schema over any ``RelationReads``:
the sidecar's compact index (``TenantRelations``), or ``MemoryReads`` for tools and tests
(``tenantguard model test`` loads a store file into one). Keeping the protocol this small
is what lets the index stay compact: both reads are a range of one of its two key sets.

Subjects are canonical strings: ``user:anne``, a userset ``group:eng#member``, or a
wildcard ``user:*`` (every subject of that type). A tuple may carry ``TupleMeta``: the
name of a condition (OpenFGA) / caveat (SpiceDB) with the context written with the tuple,
and an expiry. A tuple without either has ``meta`` None, which is the common case and
costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

EMPTY_CONTEXT: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class TupleMeta:
    """A tuple's condition and expiry. ``expires_at`` is POSIX seconds (UTC); the tuple
    stops granting at that instant without any write. ``context`` holds the condition's
    parameters written with the tuple (JSON values); the request's context fills the rest.
    """

    condition: str | None = None
    context: Mapping[str, Any] = field(default_factory=lambda: EMPTY_CONTEXT, hash=False)
    expires_at: float | None = None

    def expired(self, now: float) -> bool:
        """True once ``now`` has reached the expiry (an expiry is exclusive: at it, gone)."""
        return self.expires_at is not None and now >= self.expires_at


Fact = tuple[str, TupleMeta | None]
"""One tuple as a read returns it: the other end (subject or object) and its meta."""


class RelationReads(Protocol):
    """One tenant's relationship tuples. Iterators are lazy: the engine stops reading once
    it has its answer and counts every item against its own budget."""

    def subjects(self, object: str, relation: str) -> Iterator[Fact]:
        """Every subject written directly on ``object#relation`` (objects, usersets, wildcards)."""
        ...

    def find(self, object: str, relation: str, subject: str) -> Fact | None:
        """The one tuple ``object#relation@subject`` as written (a point read), or None: what a
        check asks of a relation with thousands of subjects, without reading them."""
        ...

    def usersets(self, object: str, relation: str) -> Iterator[Fact]:
        """The subjects of ``object#relation`` that are usersets (``group:eng#member``): the
        only ones a check follows further."""
        ...

    def objects(self, object_type: str, relation: str, subject: str) -> Iterator[Fact]:
        """Every object of ``object_type`` whose ``relation`` names exactly ``subject``.

        ``subject`` is matched as written: ``user:anne`` does not return tuples written for
        ``user:*`` or ``group:eng#member``; the engine asks for those itself."""
        ...


class MemoryReads:
    """``RelationReads`` over plain dicts, for tools and tests (not the sidecar's index)."""

    def __init__(self, tuples: Iterable[tuple[str, str, str, TupleMeta | None]] = ()) -> None:
        self._forward: dict[tuple[str, str], dict[str, TupleMeta | None]] = {}
        self._usersets: dict[tuple[str, str], dict[str, TupleMeta | None]] = {}  # the forward map's usersets
        self._reverse: dict[tuple[str, str, str], dict[str, TupleMeta | None]] = {}
        for obj, relation, subject, meta in tuples:
            self.write(obj, relation, subject, meta)

    def write(self, object: str, relation: str, subject: str, meta: TupleMeta | None = None) -> None:
        """Add (or replace the meta of) ``object#relation@subject``."""
        self._forward.setdefault((object, relation), {})[subject] = meta
        if "#" in subject:
            self._usersets.setdefault((object, relation), {})[subject] = meta
        object_type = object.partition(":")[0]
        self._reverse.setdefault((object_type, relation, subject), {})[object] = meta

    def delete(self, object: str, relation: str, subject: str) -> None:
        """Remove ``object#relation@subject`` if present."""
        self._forward.get((object, relation), {}).pop(subject, None)
        self._usersets.get((object, relation), {}).pop(subject, None)
        self._reverse.get((object.partition(":")[0], relation, subject), {}).pop(object, None)

    def subjects(self, object: str, relation: str) -> Iterator[Fact]:
        yield from list(self._forward.get((object, relation), {}).items())

    def find(self, object: str, relation: str, subject: str) -> Fact | None:
        subjects = self._forward.get((object, relation), {})
        return (subject, subjects[subject]) if subject in subjects else None

    def usersets(self, object: str, relation: str) -> Iterator[Fact]:
        yield from list(self._usersets.get((object, relation), {}).items())

    def objects(self, object_type: str, relation: str, subject: str) -> Iterator[Fact]:
        yield from list(self._reverse.get((object_type, relation, subject), {}).items())

    def __len__(self) -> int:
        return sum(len(s) for s in self._forward.values())
