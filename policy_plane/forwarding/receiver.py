"""The writer's side: take the writes other replicas hand over, commit them with our own.

Each verified request's writes go into the cell's group committer in the order they were
queued at the sender, without an await in between, so they share batches with this
replica's own requests and keep arrival order; the answer, one outcome per write, is
signed and sent to the reply subject the request names (``tg.plane.replies.<sender>.<n>``).

What is refused, and answered "refused" where an answer can reach the sender (it then
commits the writes itself, which is safe because nothing of them was queued here): a
request this replica cannot commit now (not ready, stopping), one for another replica,
one whose writes are not all of its cell. What is dropped without an answer (the sender
times out with a retryable "outcome unknown" 503): anything the channel key does not
authenticate, a request older than :data:`FRESH_SECONDS` by our clock, or one whose number its
sender's run has used before (:class:`ReplayWindow`): a replayed request must never
commit old writes again, e.g. re-add a tuple deleted since.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final

from cachetools import TTLCache
from nats.aio.msg import Msg
from tenantguard.errors import TenantGuardError, Unavailable
from tenantguard.events import EventMalformed, EventRejected
from tenantguard.topology import replies_subject

from ..groupcommit import GroupCommitter
from .wire import ForwardRequest, Outcome, Refused, sign_reply, verify_request

log = logging.getLogger(__name__)

FRESH_SECONDS: Final = 30.0  # a request signed longer ago than this (either way, by our clock) is dropped
REPLAY_SPAN: Final = 1024  # numbers below a run's highest by at most this are still accepted once (reordering)
RUNS_KEPT: Final = 4096  # sender runs remembered; a run unheard of for 2 x FRESH_SECONDS can only send stale requests


class ReplayWindow:
    """Which request numbers each sender run has used: a number is accepted once, and only
    within :data:`REPLAY_SPAN` of the highest seen (the anti-replay window of IPsec, RFC 4303
    3.4.3), so memory is bounded per run and runs age out once their requests are stale."""

    def __init__(self, span: int = REPLAY_SPAN, runs: int = RUNS_KEPT, ttl: float = 2 * FRESH_SECONDS) -> None:
        self.span = span
        self._runs: TTLCache[tuple[str, str], tuple[int, set[int]]] = TTLCache(runs, ttl)

    def accept(self, sender: str, epoch: str, number: int) -> bool:
        """True the first time ``number`` is seen for this run (and records it)."""
        top, seen = self._runs.get((sender, epoch), (0, set()))
        if number <= top - self.span or number in seen:
            return False
        seen.add(number)
        top = max(top, number)
        if len(seen) > 2 * self.span:  # now and then, not per request: forget what the window left behind
            seen = {n for n in seen if n > top - self.span}
        self._runs[(sender, epoch)] = (top, seen)
        return True


class ForwardReceiver:
    """Commits forwarded writes through this replica's committers and answers each request."""

    def __init__(self, me: str, key: bytes, committer_for: Callable[[str], GroupCommitter],
                 check: Callable[[str], None], publish: Callable[[str, bytes], Awaitable[None]],
                 cells: Callable[[ForwardRequest], set[str]], *, max_bytes: int) -> None:
        self.me = me  # our replica token
        self.key = key  # the channel key (.wire.channel_key)
        self.committer_for = committer_for
        self.check = check  # raises when this replica cannot take writes for the cell now
        self.publish = publish
        self.cells = cells  # the cells a request's changes touch
        self.max_bytes = max_bytes
        self.window = ReplayWindow()
        self.counts = {"taken": 0, "writes": 0, "refused": 0, "dropped": 0}
        self._answers: set[asyncio.Task[None]] = set()

    async def on_message(self, msg: Msg) -> None:
        """One request (NATS calls this in order, one at a time); never raises."""
        try:
            request = verify_request(msg.data, self.key, max_bytes=self.max_bytes)
        except EventRejected as exc:
            self.counts["dropped"] += 1
            log.warning("dropped a forwarded request: %s", exc.message)
            return
        if abs(time.time() - request.issued_at) > FRESH_SECONDS:
            self.counts["dropped"] += 1
            log.warning("dropped a stale forwarded request (%s #%d)", request.sender, request.number)
            return
        if not self.window.accept(request.sender, request.epoch, request.number):
            self.counts["dropped"] += 1
            log.warning("dropped a replayed forwarded request (%s #%d)", request.sender, request.number)
            return
        reply = replies_subject(request.sender, request.number)  # from the signed request, never msg.reply
        try:
            futures = self._enqueue(request)
        except TenantGuardError as exc:
            self.counts["refused"] += 1
            await self._send(reply, sign_reply(self.key, request, self.me, refused=exc))
            return
        self.counts["taken"] += 1
        self.counts["writes"] += len(futures)
        task = asyncio.get_running_loop().create_task(self._answer(reply, request, futures))
        self._answers.add(task)
        task.add_done_callback(self._answers.discard)

    def _enqueue(self, request: ForwardRequest) -> list[asyncio.Future[object]]:
        """Queue every write of ``request``, or none (raising why)."""
        if request.to != self.me:
            raise Refused("this request is for another replica")
        if self.cells(request) != {request.cell}:
            raise Refused("the request's changes are not all of its cell")
        self.check(request.cell)
        committer = self.committer_for(request.cell)
        if committer.waiting + len(request.writes) > committer.max_pending:
            raise Refused(f"{committer.waiting} writes are already waiting in the writer")
        return [committer.enqueue(w.changes, key=w.key, digest=w.digest, legacy=w.legacy) for w in request.writes]

    async def _answer(self, reply: str, request: ForwardRequest, futures: list[asyncio.Future[object]]) -> None:
        results = await asyncio.gather(*futures, return_exceptions=True)
        outcomes: list[Outcome] = []
        for result in results:
            if isinstance(result, TenantGuardError):
                outcomes.append(result)
            elif isinstance(result, BaseException):
                outcomes.append(Unavailable(f"commit failed ({type(result).__name__})"))
            else:
                outcomes.append(result)  # type: ignore[arg-type]
        try:
            data = sign_reply(self.key, request, self.me, outcomes)
        except EventMalformed:  # an outcome that cannot be signed as it is: say the outcome is unknown
            log.exception("could not sign the answer to %s #%d", request.sender, request.number)
            return
        await self._send(reply, data)

    async def _send(self, subject: str, data: bytes) -> None:
        try:
            await self.publish(subject, data)
        except TenantGuardError as exc:  # the sender times out: "outcome unknown", retryable
            log.warning("could not answer a forwarded request: %s", exc.message)

    async def close(self) -> None:
        for task in list(self._answers):
            task.cancel()
