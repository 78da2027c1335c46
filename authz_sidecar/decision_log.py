"""Decision logs: a bounded queue drained in batches by a background task.

A decision only ever calls :meth:`DecisionLog.submit`, which never blocks and never
raises: a decision the :class:`~tenantguard.decisionlog.LogPolicy` samples out is counted
and forgotten; when the queue is full the record is dropped and counted. The drain task
turns records into wire form (policy input, masks, token scrub: off the decision path)
and hands batches to a :class:`DecisionSink`: :class:`JetStreamSink` in production (stream
TG_DECISIONS, acks awaited in the background, a bounded number of messages in flight),
:class:`MemorySink` without NATS. Records that never reach the stream are counted as
dropped, whatever the reason (queue full, NATS down, no ack).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Protocol

from tenantguard.decision.core import DecisionRecord
from tenantguard.decisionlog import LogPolicy, encode_batches
from tenantguard.feed import topology

log = logging.getLogger(__name__)

DEFAULT_BATCH = 200
DEFAULT_FLUSH_SECONDS = 0.5
MAX_RECENT = 1000
MAX_IN_FLIGHT: Final = 64  # JetStream messages published and not yet acknowledged
ACK_TIMEOUT: Final = 5.0


class DecisionSink(Protocol):
    async def publish(self, batch: Sequence[dict[str, Any]]) -> None: ...


class MemorySink:
    """Keeps the latest batches in memory (tests, `tenantguard dev`, and /v1/status)."""

    def __init__(self, keep: int = MAX_RECENT) -> None:
        self.records: deque[dict[str, Any]] = deque(maxlen=keep)

    async def publish(self, batch: Sequence[dict[str, Any]]) -> None:
        self.records.extend(batch)


class RecordPublisher(Protocol):
    """A JetStream publish that returns the ack as a future (the feed's connection)."""

    async def publish_record(self, subject: str, payload: bytes) -> asyncio.Future[Any]: ...


class JetStreamSink:
    """Publishes each tenant's records on ``tg.decisions.<service>.<tenant>`` to TG_DECISIONS.

    :meth:`publish` waits only for room among :data:`MAX_IN_FLIGHT` unacknowledged messages
    (it runs in the drain task, never on a decision); acks are awaited by small watcher
    tasks, each bounded by ``ack_timeout``, which count what was stored or lost.
    """

    def __init__(self, nats: RecordPublisher, service: str, *, max_in_flight: int = MAX_IN_FLIGHT,
                 ack_timeout: float = ACK_TIMEOUT) -> None:
        self._nats = nats
        self.service = service
        self.ack_timeout = ack_timeout
        self._room = asyncio.Semaphore(max_in_flight)
        self._watchers: set[asyncio.Task[None]] = set()
        self.on_lost: Callable[[int], None] = lambda n: None
        self.stored = 0
        self.unacked = 0

    @property
    def in_flight(self) -> int:
        return len(self._watchers)

    async def publish(self, batch: Sequence[dict[str, Any]]) -> None:
        for tenant, count, data in encode_batches(batch):
            await asyncio.wait_for(self._room.acquire(), timeout=self.ack_timeout)
            try:
                ack = await self._nats.publish_record(topology.decisions_subject(self.service, tenant), data)
            except BaseException:
                self._room.release()
                raise
            task = asyncio.get_running_loop().create_task(self._await_ack(ack, count))
            self._watchers.add(task)
            task.add_done_callback(self._watchers.discard)

    async def _await_ack(self, ack: Awaitable[Any], count: int) -> None:
        try:
            await asyncio.wait_for(ack, timeout=self.ack_timeout)
            self.stored += count
        except asyncio.CancelledError:
            self.unacked += count
            self.on_lost(count)
            raise
        except Exception as exc:  # no ack (JetStream away, stream full): the records are lost; count them
            self.unacked += count
            self.on_lost(count)
            log.warning("decision records not stored (%d): %s", count, type(exc).__name__)
        finally:
            self._room.release()

    async def settle(self, timeout: float) -> None:
        """Wait (bounded) for the acks in flight, e.g. at shutdown."""
        if self._watchers:
            await asyncio.wait(set(self._watchers), timeout=timeout)


class DecisionLog:
    def __init__(self, sink: DecisionSink, *, maxsize: int = 10_000, batch_size: int = DEFAULT_BATCH,
                 flush_seconds: float = DEFAULT_FLUSH_SECONDS, policy: LogPolicy | None = None,
                 sidecar_id: str | None = None) -> None:
        self.maxsize = maxsize
        self.batch_size = batch_size
        self.flush_seconds = flush_seconds
        self.policy = policy or LogPolicy()
        self.sidecar_id = sidecar_id
        self._queue: deque[DecisionRecord] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.submitted = 0
        self.sampled_out = 0
        self.dropped = 0
        self.published = 0
        self.failed_batches = 0
        self.sink = sink

    @property
    def sink(self) -> DecisionSink:
        return self._sink

    @sink.setter
    def sink(self, sink: DecisionSink) -> None:
        self._sink = sink
        if isinstance(sink, JetStreamSink):
            sink.on_lost = self._lost

    def _lost(self, count: int) -> None:
        self.dropped += count

    def submit(self, record: DecisionRecord) -> None:
        """Called on the decision path: O(1), never blocks, never raises."""
        if not self.policy.keeps(record.allow, record.decision_id):
            self.sampled_out += 1
            return
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
        if isinstance(self._sink, JetStreamSink):
            await self._sink.settle(self._sink.ack_timeout)

    def wire(self, record: DecisionRecord) -> dict[str, Any]:
        """The record as published: wire form, this sidecar's id, masks and token scrub applied."""
        wire = record.to_wire()
        wire["sidecar"] = self.sidecar_id
        return self.policy.apply(wire)

    async def flush(self) -> None:
        while self._queue:
            records = [self._queue.popleft() for _ in range(min(self.batch_size, len(self._queue)))]
            try:
                batch = [self.wire(r) for r in records]
            except Exception:  # a record that cannot be rendered must not stop the log
                log.exception("decision records could not be rendered")
                self.dropped += len(records)
                continue
            try:
                await asyncio.wait_for(self._sink.publish(batch), timeout=5.0)
                self.published += len(batch)
            except Exception as exc:  # the sink is down: count it, keep deciding
                self.failed_batches += 1
                self.dropped += len(batch)
                log.warning("decision log batch of %d dropped: %s", len(batch), type(exc).__name__)

    async def _drain_forever(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.flush_seconds)
            self._wake.clear()
            await self.flush()

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"submitted": self.submitted, "sampled_out": self.sampled_out,
                               "published": self.published, "dropped": self.dropped, "pending": self.pending,
                               "failed_batches": self.failed_batches,
                               "sample": {"allow": self.policy.sample_allow, "deny": self.policy.sample_deny},
                               "masks": [m.text for m in self.policy.masks]}
        if isinstance(self._sink, JetStreamSink):
            out["stream"] = {"name": topology.STREAM_DECISIONS, "stored": self._sink.stored,
                             "unacked": self._sink.unacked, "in_flight": self._sink.in_flight}
        return out
