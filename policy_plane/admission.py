"""Relationship writes checked against the schema of the active bundle, before anything is published.

Which schema: the one in the bundle active for every sidecar (scope ``all``), as this replica
last activated it from ``TG_BUNDLES`` (``PlaneState.store``: the bundle, and so its schema, is
parsed once per activation; a publish, a rollback or a replica learning of either from the
stream swaps it). No schema there, no check (a bundle without one keeps the tuples-and-groups
behaviour). While a staged rollout is open, a tuple is also admitted when its candidate's
schema admits it: the operator writes the tuples of a new relation before the rollout
completes, OpenFGA's documented migration order (write the new model, then its tuples, then
switch readers). The candidate is read from ``tg-bundles`` only when the active schema
refuses something, and kept (one, by its digest) until the rollout changes.

Deletes are never checked: removing a tuple the schema no longer admits must keep working.

A refusal is final (422 ``tuple_not_allowed``) only when every schema that could admit the
tuple was read and refused it. When the scope's newest announce could not be loaded, or the
candidate cannot be read right now, a tuple the known schema refuses is a retryable 503 instead.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tenantguard.bundle import verify_bundle
from tenantguard.errors import TenantGuardError, Unavailable
from tenantguard.feed import topology as topo
from tenantguard.relations import RelationChange
from tenantguard.rollout import RolloutState
from tenantguard.schema.admission import TupleNotAllowed, check_relationship, refused_at
from tenantguard.schema.model import Schema

from .state import PlaneState

SCOPE = topo.BUNDLE_SCOPE_ALL


@dataclass(frozen=True, slots=True)
class Candidate:
    """An open rollout's bundle, as far as admission needs it."""

    sha256: str
    revision: str
    schema: Schema | None


class SchemaAdmission:
    """Checks a batch's writes against the active schema (and an open rollout's candidate)."""

    def __init__(self, state: PlaneState) -> None:
        self.state = state
        self._candidate: Candidate | None = None
        self._reading = asyncio.Lock()  # one read of a candidate at a time; the others wait and reuse it

    async def check(self, changes: Sequence[RelationChange]) -> None:
        """Raise :class:`TupleNotAllowed` naming the first write no applicable schema admits
        (its rule, its position ``index`` and the tuple); return when every write is admitted."""
        active = self.state.store(SCOPE).active
        if active is None or active.bundle.schema is None:
            return
        schema = active.bundle.schema
        refused: list[tuple[int, RelationChange, TupleNotAllowed]] = []
        for index, change in enumerate(changes):
            if change.op != "write":
                continue
            try:
                check_relationship(schema, change.rel)
            except TupleNotAllowed as exc:
                refused.append((index, change, exc))
        if not refused:
            return
        candidate = await self._open_candidate()
        if candidate is not None and candidate.schema is not None:
            refused = [(i, change, exc) for i, change, exc in refused if not _admits(candidate.schema, change)]
            if not refused:
                return
        self._require_current()
        index, change, exc = refused[0]
        detail: dict[str, Any] = {"revision": active.bundle.revision}
        if candidate is not None:
            detail["candidate"] = {"revision": candidate.revision, "rule": _rule(candidate.schema, change)}
        raise refused_at(exc, index, change.rel, **detail)

    def _require_current(self) -> None:
        """The schema checked is the announced one: a newer announce this replica could not load
        may admit what the loaded one refuses, so that refusal is not final."""
        announce = self.state.announces.get(SCOPE)
        if announce is not None and not announce.loaded:
            raise Unavailable(f"the bundle announced for scope {SCOPE} ({announce.revision}) could not be loaded "
                              "by this replica, so its schema is unknown; retry", scope=SCOPE)

    async def _open_candidate(self) -> Candidate | None:
        """The open rollout's candidate when it differs from the active bundle; None otherwise."""
        rollout = self.state.rollout
        if rollout is None or not rollout.open:
            return None
        announce = self.state.announces.get(SCOPE)
        if announce is not None and announce.sha256 == rollout.sha256:
            return None  # the rollout has reached scope all: its schema is the active one
        async with self._reading:
            held = self._candidate
            if held is None or held.sha256 != rollout.sha256:
                held = self._candidate = await self._read(rollout)
            return held

    async def _read(self, rollout: RolloutState) -> Candidate:
        """The rollout's archive from ``tg-bundles``, checked against its digest and the bundle key."""
        publisher = self.state.publisher
        try:
            if publisher is None:
                raise Unavailable("no connection to read it with")
            archive = await publisher.get_object(topo.BUCKET_BUNDLES, rollout.object,
                                                 max_bytes=self.state.max_bundle_bytes)
            if hashlib.sha256(archive).hexdigest() != rollout.sha256:
                raise Unavailable(f"object {rollout.object} does not match the rollout's digest")
            bundle = await asyncio.to_thread(verify_bundle, archive, self.state.bundle_verifier,
                                             limits=self.state.bundle_limits)
        except TenantGuardError as exc:
            raise Unavailable(f"rollout {rollout.id}'s candidate bundle could not be read to check the tuples the "
                              f"active schema refuses ({exc.message}); retry", rollout=rollout.id) from None
        return Candidate(rollout.sha256, bundle.revision, bundle.schema)


def _admits(schema: Schema, change: RelationChange) -> bool:
    return _rule(schema, change) is None


def _rule(schema: Schema | None, change: RelationChange) -> str | None:
    """The rule ``schema`` refuses the change's tuple by; None when it admits it or is absent
    (a candidate without a schema widens nothing: its tuples are checked by the active one)."""
    if schema is None:
        return None
    try:
        check_relationship(schema, change.rel)
    except TupleNotAllowed as exc:
        return exc.rule
    return None
