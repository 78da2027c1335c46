"""Decision logs: a bounded queue drained in batches by a background task.

A decision only ever calls :meth:`DecisionLog.submit`, which never blocks and never
raises: when the queue is full the record is dropped and counted. The drain task
publishes batches to a :class:`DecisionSink` (NATS in production) and counts failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from tenantguard.decision import DecisionRecord

log = logging.getLogger(__name__)

DEFAULT_BATCH = 200
DEFAULT_FLUSH_SECONDS = 0.5
MAX_RECENT = 1000


class DecisionSink(Protocol):
    async def publish(self, batch: Sequence[dict[str, Any]]) -> None: ...


class MemorySink:
    """Keeps the latest batches in memory (tests, `tenantguard dev`, and /v1/status)."""

    def __init__(self, keep: int = MAX_RECENT) -> None:
        self.records: deque[dict[str, Any]] = deque(maxlen=keep)

    async def publish(self, batch: Sequence[dict[str, Any]]) -> None:
        self.records.extend(batch)


class NatsSink:
    """Publishes each batch as one JSON message on ``subject`` (core NATS, fire-and-forget)."""

    def __init__(self, nc: Any, subject: str) -> None:
        self._nc = nc
        self._subject = subject

    async def publish(self, batch: Sequence[dict[str, Any]]) -> None:
        await self._nc.publish(self._subject, json.dumps({"decisions": list(batch)}).encode())


class DecisionLog:
    def __init__(self, sink: DecisionSink, *, maxsize: int = 10_000, batch_size: int = DEFAULT_BATCH,
                 flush_seconds: float = DEFAULT_FLUSH_SECONDS) -> None:
        self.sink = sink
        self.maxsize = maxsize
        self.batch_size = batch_size
        self.flush_seconds = flush_seconds
        self._queue: deque[DecisionRecord] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.submitted = 0
        self.dropped = 0
        self.published = 0
        self.failed_batches = 0

    def submit(self, record: DecisionRecord) -> None:
        """Called on the decision path: O(1), never blocks, never raises."""
        if len(self._queue) >= self.maxsize:
            self.dropped += 1
            return
        self._queue.append(record)
        self.submitted += 1
        if len(self._queue) >= self.batch_size:
            self._wake.set()

    @property
    def pending(self) -> int:
        return len(self._queue)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._drain_forever(), name="decision-log")

    async def stop(self) -> None:
        """Flush what is queued (bounded by one pass), then stop the task."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()

    async def flush(self) -> None:
        while self._queue:
            batch = [self._queue.popleft().to_wire() for _ in range(min(self.batch_size, len(self._queue)))]
            try:
                await asyncio.wait_for(self.sink.publish(batch), timeout=5.0)
                self.published += len(batch)
            except Exception as exc:  # the sink is down: count it, keep deciding
                self.failed_batches += 1
                self.dropped += len(batch)
                log.warning("decision log batch of %d dropped: %s", len(batch), exc)

    async def _drain_forever(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.flush_seconds)
            self._wake.clear()
            await self.flush()

    def stats(self) -> dict[str, int]:
        return {"submitted": self.submitted, "published": self.published, "dropped": self.dropped,
                "pending": self.pending, "failed_batches": self.failed_batches}
