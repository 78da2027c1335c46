"""Group commit: concurrent relation writes in one replica share one signed batch.

Each request enqueues its changes (and the hash of its ``Idempotency-Key``, if any) and
awaits its own future. One committer task per subject drains what is pending, at most
``max_changes`` changes in arrival order, and commits them as ONE :class:`ChangeBatch`
through the subject's :class:`~.writer.SequencedWriter` (so conflicts with other
replicas are retried as for any write); every member then gets the batch's seq as its
consistency token. While a batch is in flight the next requests queue up, so batches
grow with load and a lone request waits for nobody.

Combining is safe because a batch is applied change by change, in order, and each
change is idempotent: members A then B in one batch leave the state exactly as A's
batch followed by B's would. What cannot share a batch waits for the next one:

* a member whose key is already committed (the window in the replicated state) writes
  nothing: it gets the first outcome (``replayed``), or ``IdempotencyKeyReused`` when its
  changes differ;
* a member with the same key as an earlier member of the group waits for that member's
  outcome, i.e. the next round, where the key is committed (or not, if it failed);
* members past the change bound, or past NATS' max_payload once signed, wait too.

A batch that loses the sequence race to another replica is built again on the newer
state, and takes in what queued meanwhile (after its members, so arrival order holds):
under contention between replicas, batches grow instead of retries piling up.

The plan is made inside ``build``, which the writer calls right after reading the
expected sequence and again after each catch-up, so the key check always sees the state
the batch is published on top of. If the commit fails, every member included gets the
error (typed; ``retryable`` where a retry can help) and nothing else is lost: members
not included go back to the head of the queue.

The committer is parameterised by its writer (which names the subject) and a ``sign``
callable that turns members into ``(seq, signed bytes)`` for that subject's sequence, so
one committer can run per subject.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from tenantguard.errors import TenantGuardError, Unavailable
from tenantguard.relations import MAX_BATCH_CHANGES, RelationChange

from .errors import IdempotencyKeyReused
from .idempotency import KeyWindow
from .writer import SequencedWriter, Written

log = logging.getLogger(__name__)

MAX_PENDING: Final = 10_000  # requests waiting in one replica before new ones are refused (503, retryable)
SETTLE_ROUNDS: Final = 4  # event-loop rounds run before a group is taken (see GroupCommitter._drain)


@dataclass(slots=True, eq=False)
class Member:
    """One request waiting to be committed."""

    changes: tuple[RelationChange, ...]
    key: str | None  # key hash (see .idempotency), None without an Idempotency-Key
    digest: str | None  # changes digest, for keyed members
    future: asyncio.Future[Written] = field(repr=False)
    legacy: str | None = None  # the key's hash as planes before tenant-scoped keys wrote it


@dataclass(slots=True)
class Plan:
    """What one build decided for a group, against the state it was built on."""

    included: list[Member] = field(default_factory=list)
    replayed: list[tuple[Member, int]] = field(default_factory=list)  # key committed before: its seq
    reused: list[tuple[Member, int]] = field(default_factory=list)  # key committed with other changes
    deferred: list[Member] = field(default_factory=list)  # for the next round, in arrival order


class _NothingToWrite(Exception):
    """Every member of the group was answered from the key window."""


Sign = Callable[[Sequence[Member]], tuple[int, bytes]]


def plan(group: Sequence[Member], window: KeyWindow) -> Plan:
    """Sort ``group`` against the committed keys; see the module docstring."""
    out = Plan()
    keys: set[str] = set()
    for member in group:
        if member.key is None:
            out.included.append(member)
            continue
        committed = window.lookup(member.key)
        if committed is None and member.legacy is not None:
            committed = window.lookup(member.legacy)
        if committed is not None:
            seq, digest = committed
            (out.replayed if digest == member.digest else out.reused).append((member, seq))
        elif member.key in keys:
            out.deferred.append(member)
        else:
            keys.add(member.key)
            out.included.append(member)
    return out


def shrink(p: Plan) -> None:
    """Keep the first half of the included members; defer the rest (they stay in arrival order)."""
    keep = max(1, len(p.included) // 2)
    p.deferred[:0] = p.included[keep:]
    del p.included[keep:]


class GroupCommitter:
    def __init__(self, writer: SequencedWriter, sign: Sign, window: KeyWindow, *, coalesce: bool = True,
                 max_changes: int = MAX_BATCH_CHANGES, max_pending: int = MAX_PENDING,
                 settle_rounds: int = SETTLE_ROUNDS) -> None:
        self.writer = writer
        self.settle_rounds = settle_rounds
        self.sign = sign
        self.window = window
        self.coalesce = coalesce
        self.max_changes = max_changes
        self.max_pending = max_pending
        self.batches = 0  # batches committed
        self.members = 0  # requests committed in them
        self._pending: deque[Member] = deque()
        self._task: asyncio.Task[None] | None = None
        self._committing = 0  # members in the group being committed
        self._closed = False

    @property
    def waiting(self) -> int:
        """Requests not answered yet: queued, or in the batch being committed."""
        return len(self._pending) + self._committing

    async def submit(self, changes: Sequence[RelationChange], *, key: str | None = None,
                     digest: str | None = None, legacy: str | None = None) -> Written:
        """Commit ``changes`` (with a group); the outcome of this request alone."""
        if self._closed:
            raise Unavailable("the replica is stopping")
        if len(self._pending) >= self.max_pending:
            raise Unavailable(f"{len(self._pending)} writes are already waiting in this replica; retry")
        loop = asyncio.get_running_loop()
        member = Member(tuple(changes), key, digest, loop.create_future(), legacy)
        self._pending.append(member)
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._drain(), name=f"group-commit {self.writer.subject}")
        return await member.future

    async def close(self) -> None:
        """Stop; every request still waiting fails with a retryable error."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        _fail(self._pending, Unavailable("the replica stopped before committing this write"))
        self._pending.clear()

    async def _drain(self) -> None:
        """Commit groups while requests wait. Before taking each group, let the event loop run a few
        rounds: requests whose bytes have already arrived are parsed and queued, and the follower
        applies the batches other replicas committed (already in the socket), so the group is
        larger and built on the newest state, which loses fewer sequence races. Measured (8 clients,
        BENCHMARKS.md "Policy plane writes"): one replica 3,000-3,130 -> 3,500-3,600 writes/s
        (6.5 requests a batch, from 4), two 2,700-2,850 -> 3,200-3,380 (a third fewer races); a
        lone request waits four loop rounds, tens of microseconds."""
        while self._pending:
            for _ in range(self.settle_rounds):
                await asyncio.sleep(0)
            group = self._take()
            try:
                await self._commit(group)
            finally:
                self._committing = 0

    def _take(self) -> list[Member]:
        """The next group: pending members in arrival order up to ``max_changes`` (one when not coalescing)."""
        group: list[Member] = []
        self._absorb(group)
        return group

    def _absorb(self, group: list[Member]) -> None:
        """Move pending members to the end of ``group`` (arrival order kept) while they fit."""
        total = sum(len(m.changes) for m in group)
        while self._pending:
            member = self._pending[0]
            if member.future.done():  # the caller went away before anything was published
                self._pending.popleft()
                continue
            if group and (not self.coalesce or total + len(member.changes) > self.max_changes):
                break
            group.append(self._pending.popleft())
            total += len(member.changes)
        self._committing = len(group)

    async def _commit(self, group: list[Member]) -> None:
        """Commit one group and answer each member; on failure the members included get the error."""
        built: list[tuple[Plan, int]] = []

        def build() -> bytes:
            if built:  # again, after losing a sequence race to another replica: take in what queued meanwhile
                self._absorb(group)
            p = plan(group, self.window)
            while p.included:
                seq, data = self.sign(p.included)
                if len(data) <= self.writer.publisher.max_payload or len(p.included) == 1:
                    built[:] = [(p, seq)]
                    return data
                shrink(p)  # one member alone that is too large fails as it would have alone
            built[:] = [(p, 0)]
            raise _NothingToWrite

        try:
            commit = await self.writer.commit(build)
        except _NothingToWrite:
            self._answer(group, built, applied=True)
        except asyncio.CancelledError:
            self._answer(group, built, error=Unavailable(
                "the replica stopped while committing this write; retry with the same Idempotency-Key"))
            raise
        except TenantGuardError as exc:
            self._answer(group, built, error=exc)
        except Exception as exc:  # a bug must not leave callers waiting forever
            log.exception("group commit on %s failed", self.writer.subject)
            self._answer(group, built, error=Unavailable(f"commit failed ({type(exc).__name__})"))
        else:
            self._answer(group, built, applied=commit.applied)

    def _answer(self, group: list[Member], built: list[tuple[Plan, int]], *, applied: bool = True,
                error: TenantGuardError | None = None) -> None:
        """Answer every member of ``group`` by the last plan built (all get ``error`` if none was)."""
        if not built:
            _fail(group, error or Unavailable("nothing was built for this write"))
            return
        p, seq = built[0]
        for member, first in p.replayed:
            _resolve(member, Written(first, replayed=True))
        for member, first in p.reused:
            _reject(member, IdempotencyKeyReused("this Idempotency-Key was used for other changes",
                                                 consistency_token=first))
        self._pending.extendleft(reversed(p.deferred))
        if error is not None:
            # the members included, and any taken in by a rebuild that failed before planning them
            deferred = {id(m) for m in p.deferred}
            _fail([m for m in group if id(m) not in deferred], error)
            return
        if p.included:
            self.batches += 1
            self.members += len(p.included)
        for member in p.included:
            _resolve(member, Written(seq, applied=applied))


def _resolve(member: Member, written: Written) -> None:
    if not member.future.done():
        member.future.set_result(written)


def _reject(member: Member, error: BaseException) -> None:
    if not member.future.done():
        member.future.set_exception(error)


def _fail(members: Sequence[Member] | deque[Member], error: TenantGuardError) -> None:
    for member in members:
        _reject(member, error)
