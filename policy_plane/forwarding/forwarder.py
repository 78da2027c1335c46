"""The sending side: hand a cell's writes to the replica that writes it, in groups.

Requests for one (writer, cell) queue up while up to :data:`IN_FLIGHT` forwarded requests
are out, then leave as one authenticated request of at most one batch's worth of changes, so a
forwarding replica sends one message per group, as a writer publishes one batch per
group. Each write's caller gets its own outcome.

Outcomes, and why each is safe:

* an answer: each write's own outcome (its consistency token, or its typed error);
* :class:`NotDelivered` (no replica listens on the writer's subject, or the writer refused
  the whole request): nothing of it was queued there, so the caller commits the write
  itself, as it would without forwarding, and the writer is not asked for a while;
* no answer in time, or an answer that does not verify: the write may or may not be
  committed (the writer may have published it), so the caller gets a retryable 503 that
  says the outcome is unknown, as when a replica dies under a local commit; a retry with
  the same ``Idempotency-Key`` returns the first outcome.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from nats.aio.msg import Msg
from tenantguard.errors import TenantGuardError, Unavailable
from tenantguard.events import EventRejected
from tenantguard.relations import MAX_BATCH_CHANGES
from tenantguard.topology import forward_subject, replies_subject

from ..writer import Written
from .peers import Peers
from .wire import ForwardRequest, Refused, Write, sign_request, verify_reply

log = logging.getLogger(__name__)

IN_FLIGHT: Final = 2  # forwarded requests out at once per (writer, cell); the rest queue and group
BENCH_SECONDS: Final = 5.0  # a writer that took nothing is not asked again for this long
NO_RESPONDERS: Final = "503"  # the status NATS answers a request nobody listens to with


class NotDelivered(Exception):
    """Nothing of the write was queued at the writer: commit it here."""


@dataclass(slots=True)
class _Pending:
    write: Write
    future: asyncio.Future[Written] = field(repr=False)


@dataclass(slots=True)
class _Queue:
    pending: deque[_Pending] = field(default_factory=deque)
    slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(IN_FLIGHT))
    task: asyncio.Task[None] | None = None


class Forwarder:
    def __init__(self, me: str, key: bytes, peers: Peers,
                 publish: Callable[[str, bytes, str], Awaitable[None]], *, timeout: float, max_bytes: int) -> None:
        self.me = me  # our replica token
        self.key = key  # the channel key (.wire.channel_key)
        self.peers = peers
        self.publish = publish  # (subject, data, reply subject)
        self.timeout = timeout  # how long an answer may take: the writer's whole commit, read-back included
        self.max_bytes = max_bytes  # NATS max_payload: a request larger than this is split
        self.epoch = os.urandom(8).hex()
        self.counts = {"requests": 0, "writes": 0, "not_delivered": 0, "unknown": 0}
        self._numbers = itertools.count(1)
        self._queues: dict[tuple[str, str], _Queue] = {}
        self._answers: dict[int, asyncio.Future[bytes]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def writer_of(self, cell: str) -> str | None:
        return self.peers.writer_of(cell)

    async def forward(self, writer: str, cell: str, write: Write) -> Written:
        """``write``'s outcome at ``writer``; :class:`NotDelivered` when the caller must commit it."""
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault((writer, cell), _Queue())
        pending = _Pending(write, loop.create_future())
        queue.pending.append(pending)
        if queue.task is None or queue.task.done():
            queue.task = loop.create_task(self._drain(writer, cell, queue), name=f"forward {cell} to {writer}")
        return await pending.future

    def on_answer(self, msg: Msg) -> None:
        """An answer on ``tg.plane.replies.<me>.<n>`` (or NATS saying nobody took request n)."""
        number = msg.subject.rpartition(".")[2]
        future = self._answers.get(int(number)) if number.isdigit() else None
        if future is None or future.done():
            return
        if msg.headers and msg.headers.get("Status") == NO_RESPONDERS and not msg.data:
            future.set_exception(NotDelivered("no replica listens on the writer's subject"))
        else:
            future.set_result(msg.data)

    async def close(self) -> None:
        for task in [*self._tasks, *(q.task for q in self._queues.values() if q.task is not None)]:
            task.cancel()
        for queue in self._queues.values():
            for pending in queue.pending:
                if not pending.future.done():
                    pending.future.set_exception(Unavailable("the replica is stopping"))

    async def _drain(self, writer: str, cell: str, queue: _Queue) -> None:
        while queue.pending:
            await queue.slots.acquire()
            group = _take(queue.pending)
            if not group:
                queue.slots.release()
                return
            task = asyncio.get_running_loop().create_task(self._send(writer, cell, group))
            self._tasks.add(task)
            task.add_done_callback(lambda t: (self._tasks.discard(t), queue.slots.release()))

    async def _send(self, writer: str, cell: str, group: list[_Pending]) -> None:
        """Forward ``group`` as one request (split while too large for NATS) and answer each member."""
        number = next(self._numbers)
        request = ForwardRequest(self.me, self.epoch, number, writer, cell, tuple(p.write for p in group))
        data = sign_request(self.key, request)
        if len(data) > self.max_bytes and len(group) > 1:
            half = len(group) // 2
            await asyncio.gather(self._send(writer, cell, group[:half]), self._send(writer, cell, group[half:]))
            return
        answer = asyncio.get_running_loop().create_future()
        self._answers[number] = answer
        self.counts["requests"] += 1
        self.counts["writes"] += len(group)
        try:
            await self.publish(forward_subject(writer), data, replies_subject(self.me, number))
            async with asyncio.timeout(self.timeout):
                raw = await answer
            outcomes = verify_reply(raw, self.key, request, max_bytes=self.max_bytes)
        except (NotDelivered, Refused) as exc:
            self.counts["not_delivered"] += 1
            self.peers.bench(writer, BENCH_SECONDS)
            log.info("writer %s took nothing of request %d (%s); committing here", writer, number, exc)
            _settle(group, NotDelivered(str(exc)))
        except (TimeoutError, TenantGuardError, EventRejected) as exc:
            self.counts["unknown"] += 1
            log.warning("no valid answer from writer %s to request %d (%s)", writer, number, type(exc).__name__)
            _settle(group, Unavailable(
                "the replica writing this cell did not answer in time; the write may or may not be committed: "
                "retry with the same Idempotency-Key", writer=writer))
        else:
            for pending, outcome in zip(group, outcomes, strict=True):
                _settle([pending], outcome)
        finally:
            self._answers.pop(number, None)


def _take(pending: deque[_Pending]) -> list[_Pending]:
    """The next group: queued writes in order, up to one batch's worth of changes."""
    group: list[_Pending] = []
    total = 0
    while pending:
        head = pending[0]
        if head.future.done():  # the caller went away before it was sent
            pending.popleft()
            continue
        if group and total + len(head.write.changes) > MAX_BATCH_CHANGES:
            break
        group.append(pending.popleft())
        total += len(head.write.changes)
    return group


def _settle(group: list[_Pending], outcome: Written | BaseException) -> None:
    for pending in group:
        if pending.future.done():
            continue
        if isinstance(outcome, BaseException):
            pending.future.set_exception(outcome)
        else:
            pending.future.set_result(outcome)

