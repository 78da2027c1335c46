"""Follow one stream in order and let writers wait until a given message has been applied.

A plane replica never changes its own state directly: it publishes, then waits until
its follower has consumed the message back from JetStream. All replicas therefore
apply exactly the same messages in the same order, and any replica can answer reads.

The follower records the JetStream sequence of the last message seen on each subject,
*whether or not the message verified*: a forged message injected into the stream still
moves the subject's last sequence, and the next genuine write must expect it (the
event itself is refused by every consumer, here and in the sidecars).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from nats.aio.subscription import Subscription
from tenantguard.errors import Unavailable

from .publisher import READ_PATIENCE, Publisher

log = logging.getLogger(__name__)

Apply = Callable[[str, int, bytes, dict[str, str]], Awaitable[None]]


class Follower:
    """An ordered consumer on ``stream`` feeding ``apply(subject, stream_seq, data, headers)``."""

    def __init__(self, publisher: Publisher, stream: str, subject: str, apply: Apply) -> None:
        self.publisher = publisher
        self.stream = stream
        self.subject = subject
        self._apply = apply
        self.last_stream_seq = 0
        self._per_subject: dict[str, int] = {}
        self._progress = asyncio.Condition()
        self._sub: Subscription | None = None
        self.handler_errors = 0
        self.progressed_at = time.monotonic()
        self.behind_since: float | None = None  # when the stream was first seen ahead of us (watchdog)
        self.restarts = 0

    def last_on(self, subject: str) -> int:
        """JetStream sequence of the last message seen on ``subject`` (0: none)."""
        return self._per_subject.get(subject, 0)

    async def start(self, start_seq: int = 1) -> None:
        if start_seq > 1:  # resuming after a snapshot: what came before is already in the state
            self.last_stream_seq = start_seq - 1
            if "*" not in self.subject and ">" not in self.subject:
                self._per_subject[self.subject] = start_seq - 1
        self._sub = await self.publisher.follow(self.stream, self.subject, self._on_message, start_seq=start_seq)

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None

    async def restart(self) -> None:
        """A new ordered consumer right after the last message applied (a stalled one is dropped).

        One attempt (no ``patience``): the watchdog calling this tries again on its next pass,
        and waiting here would leave every follower's lag unreported meanwhile."""
        await self.stop()
        self.restarts += 1
        self._sub = await self.publisher.follow(self.stream, self.subject, self._on_message,
                                                start_seq=self.last_stream_seq + 1, patience=0.0)

    async def stored_last(self, *, patience: float = READ_PATIENCE) -> int:
        """The stream sequence of the last stored message this follower's filter takes (0: none).

        Not the stream's last sequence: messages on subjects outside the filter (the pre-cell
        relations subject after an upgrade) are never delivered, so waiting for them would
        never end. ``patience``: how long to ask again through a JetStream handover
        (:meth:`Publisher._read`)."""
        return await self.publisher.last_seq_on(self.stream, self.subject, patience=patience)

    def observe(self, stored_last: int, now: float) -> float:
        """Note the stream's last sequence; return for how long this follower has been behind it."""
        if self.last_stream_seq >= stored_last:
            self.behind_since = None
            return 0.0
        if self.behind_since is None:
            self.behind_since = now
        return now - max(self.behind_since, self.progressed_at)

    async def _on_message(self, subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
        if stream_seq <= self.last_stream_seq:
            return  # redelivered after an ordered-consumer reset
        try:
            await self._apply(subject, stream_seq, data, headers)
        except Exception:  # one bad message must not stop the stream; the handler counts its own refusals
            self.handler_errors += 1
            log.exception("applying %s message %d failed", self.stream, stream_seq)
        self._per_subject[subject] = stream_seq
        self.last_stream_seq = stream_seq
        self.progressed_at = time.monotonic()
        async with self._progress:
            self._progress.notify_all()

    async def wait_for(self, stream_seq: int, timeout: float) -> None:
        """Return once the message at ``stream_seq`` (or a later one) has been applied."""
        if self.last_stream_seq >= stream_seq:
            return
        try:
            async with asyncio.timeout(timeout), self._progress:
                await self._progress.wait_for(lambda: self.last_stream_seq >= stream_seq)
        except TimeoutError:
            raise Unavailable(
                f"{self.stream}: message {stream_seq} not consumed back within {timeout:g}s "
                f"(at {self.last_stream_seq})"
            ) from None

    async def catch_up(self, subject: str, timeout: float, last: int | None = None) -> None:
        """Consume everything stored on ``subject`` right now; ``last``: its last stream sequence, when
        known (a refused publish says it), else asked of JetStream."""
        target = last if last is not None else await self.publisher.last_seq_on(self.stream, subject)
        await self.wait_for(target, timeout)
        # Consumed through ``target``, the subject's last message: true even when this
        # follower started after it (resumed from a snapshot).
        self._per_subject[subject] = max(self._per_subject.get(subject, 0), target)
