"""Deleting expired tuples.

An expired tuple grants nothing from its expiry on (every reader judges it on its own clock,
with no write), but it stays in the index, in listings and in snapshots until it is deleted.
The plane deletes it once it has been expired for ``grace`` seconds (the clock slack between
the plane and the sidecars), through its cell's ordered stream like any write, so every
replica and sidecar converges on the same state and the cell's sequence moves.

Never a lost write, by construction: candidates are found by a scan that yields to the event
loop (a big index never stalls the plane), and each one is checked again inside the sequenced
writer's ``build``, against the state at exactly the sequence the batch is published on top
of. A write that renews a tuple (a later expiry, or none) is either in that state (the check
sees it and leaves the tuple) or lands after the delete (and writes the tuple again). Replicas
purge independently: the first batch wins the sequence race, the others rebuild on it and find
nothing left to delete.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from tenantguard.errors import TenantGuardError
from tenantguard.relations import MAX_BATCH_CHANGES, RelationChange, Relationship
from tenantguard.relations.index import IndexView, RelationIndex

log = logging.getLogger(__name__)

DEFAULT_PURGE_SECONDS = 60.0  # between purge rounds; 0 turns purging off
DEFAULT_PURGE_GRACE = 60.0  # seconds a tuple stays expired before it is deleted
SCAN_YIELD = 200  # tenants scanned between yields to the event loop


@dataclass(frozen=True, slots=True)
class Expired:
    """A tuple the scan found expired, with the expiry it had then."""

    tenant: str
    object: str
    relation: str
    subject: str
    expires_at: float

    def change(self) -> RelationChange:
        return RelationChange("delete", Relationship(self.tenant, self.object, self.relation, self.subject))


async def scan(view: IndexView, cutoff: float, limit: int = MAX_BATCH_CHANGES) -> list[Expired]:
    """Up to ``limit`` tuples of ``view`` whose expiry is at or before ``cutoff``, in tenant
    order; yields to the event loop every :data:`SCAN_YIELD` tenants."""
    found: list[Expired] = []
    for i, tenant in enumerate(view.tenants()):
        if i and i % SCAN_YIELD == 0:
            await asyncio.sleep(0)
        for obj, rel, subject, meta in view.meta_rows(tenant):
            if meta.expires_at is not None and meta.expires_at <= cutoff:
                found.append(Expired(tenant, obj, rel, subject, meta.expires_at))
                if len(found) >= limit:
                    return found
    return found


def still_expired(index: RelationIndex, candidates: Iterable[Expired]) -> list[RelationChange]:
    """The deletes of the candidates that are still there with the expiry the scan saw
    (a renewed or deleted tuple is left alone): what ``build`` publishes."""
    out: list[RelationChange] = []
    for c in candidates:
        fact = index.tenant(c.tenant).find(c.object, c.relation, c.subject)
        if fact is not None and fact[1] is not None and fact[1].expires_at == c.expires_at:
            out.append(c.change())
    return out


# (cell, changes chosen inside build) -> tuples deleted: the plane's sequenced commit of one batch
Commit = Callable[[str, Callable[[], list[RelationChange]]], Awaitable[int]]


class ExpiredPurge:
    """Every ``seconds``, deletes what has been expired for ``grace`` seconds, cell by cell,
    at most :data:`~tenantguard.relations.MAX_BATCH_CHANGES` a batch."""

    def __init__(self, indexes: Callable[[], Mapping[str, RelationIndex]], commit: Commit, *,
                 seconds: float = DEFAULT_PURGE_SECONDS, grace: float = DEFAULT_PURGE_GRACE,
                 ready: Callable[[], bool] = lambda: True, clock: Callable[[], float] = time.time) -> None:
        self.indexes = indexes
        self.commit = commit
        self.seconds = seconds
        self.grace = grace
        self.ready = ready
        self.clock = clock
        self.purged = 0  # tuples this replica deleted (tg_plane_expired_purged_total)

    async def purge_cell(self, cell: str, index: RelationIndex, max_batches: int = 10) -> int:
        """Deletes in ``cell`` until none is left or ``max_batches`` were committed; how many."""
        total = 0
        for _ in range(max_batches):
            candidates = await scan(index.view(), self.clock() - self.grace)
            if not candidates:
                break
            deleted = await self.commit(cell, lambda c=candidates: still_expired(index, c))
            total += deleted
            if deleted == 0 or len(candidates) < MAX_BATCH_CHANGES:
                break
        if total:
            self.purged += total
            log.info("deleted %d expired tuples in cell %s", total, cell)
        return total

    async def run_once(self) -> int:
        if not self.ready():
            return 0
        total = 0
        for cell, index in sorted(self.indexes().items()):
            try:
                total += await self.purge_cell(cell, index)
            except TenantGuardError as exc:  # NATS down, a lost race past the timeout: next round
                log.warning("purging expired tuples of %s failed: %s", cell, exc)
        return total

    async def run_forever(self) -> None:
        while True:
            await asyncio.sleep(self.seconds)
            await self.run_once()
