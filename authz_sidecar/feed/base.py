"""Shared pieces of the feed: options, the context every follower gets, and object fetches."""

from __future__ import annotations

import asyncio
import hashlib
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from nats.js.api import ConsumerConfig
from nats.js.client import JetStreamContext
from nats.js.errors import NotFoundError
from tenantguard.feed.events import DEFAULT_MAX_BYTES, EventDigestMismatch, EventTooLarge

from .errors import FeedUnavailable
from .gate import EventGate, FeedMetrics

if TYPE_CHECKING:
    from ..runtime import Sidecar


@dataclass(frozen=True, slots=True)
class FeedOptions:
    """Every wait is bounded; durations in seconds. Defaults suit production; tests shorten some."""

    connect_timeout: float = 2.0  # one TCP + INFO/CONNECT handshake
    request_timeout: float = 5.0  # each JetStream API request
    fetch_timeout: float = 60.0  # one snapshot or bundle download
    backoff_initial: float = 0.1
    backoff_max: float = 5.0
    # a silent (hung, blackholed) server is left 2.0-2.5 s after its last answer (ping_interval *
    # pings to ping_interval * (pings + 1)), and the next node dialled at once: moved within 3 s.
    # 1 s x 2 allowed up to 3 s of silence, and a move took 3.0-3.2 s (tests/cluster/test_partitions.py)
    ping_interval: float = 0.5
    max_outstanding_pings: int = 4
    idle_heartbeat: float = 2.0  # JetStream consumer heartbeats (stalled-consumer detection)
    persist_interval: float = 30.0
    lag_grace: float = 5.0  # behind a believable heartbeat for longer than this: lagging (high risk refused)
    replay_limit: int = 10_000  # further behind than this many batches: load the snapshot instead
    max_event_bytes: int = DEFAULT_MAX_BYTES
    max_snapshot_bytes: int = 256 * 1024 * 1024
    max_bundle_bytes: int = 64 * 1024 * 1024
    pending_msgs_limit: int = 10_000  # per subscription; beyond it the client drops and we resync
    pending_bytes_limit: int = 64 * 1024 * 1024
    # The revocations subscription replays the whole stream at start: room for all of it, so the
    # client does not drop while the replay runs (a drop is still caught: held, counted, replayed).
    revocations_pending_msgs_limit: int = 1_000_000
    revocations_pending_bytes_limit: int = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class FeedContext:
    """What a follower needs: the sidecar it feeds, the verifying gate, counters, options."""

    sidecar: Sidecar
    gate: EventGate
    metrics: FeedMetrics
    options: FeedOptions


class Follower(Protocol):
    """One JetStream subject followed with an ordered consumer, re-created on every (re)start.

    ``start`` decides where to begin (and may resynchronise first); ``handle`` gets each
    message in stream order and returns False to ask for a restart (a gap).
    """

    kind: str
    stream: str
    subject: str

    async def start(self, js: JetStreamContext) -> ConsumerConfig: ...

    async def handle(self, js: JetStreamContext, data: bytes, stream_seq: int) -> bool: ...


class ObjectMissing(EventDigestMismatch):
    """A signed announce or manifest names an object the bucket does not hold."""

    code = "object_missing"


async def fetch_object(js: JetStreamContext, bucket: str, name: str, *, size: int, sha256: str | None,
                       limit: int, timeout: float) -> bytes:
    """The object's bytes, only if they are exactly the ``size`` (and ``sha256``) a signed event named.

    The size is checked against the object's metadata before a byte is downloaded, so a
    huge object costs nothing; chunks are written into one buffer (linear, not repeated
    ``bytes +=``).
    """
    if size > limit:
        raise EventTooLarge(f"object {name} is {size} bytes, limit {limit}", limit=limit)
    store = await js.object_store(bucket)
    try:
        info = await store.get_info(name)
    except NotFoundError:
        raise ObjectMissing(f"object {name} is not in bucket {bucket}") from None
    if info.size != size:
        raise EventDigestMismatch(f"object {name} is {info.size} bytes, the signed event says {size}")
    buffer = io.BytesIO()
    await asyncio.wait_for(store.get(name, writeinto=buffer), timeout=timeout)
    data = buffer.getvalue()
    if len(data) < size:  # metadata matched, the download came up short: a transport failure, retry
        raise FeedUnavailable(f"object {name} arrived with {len(data)} of {size} bytes")
    if len(data) != size:
        raise EventDigestMismatch(f"object {name} arrived with {len(data)} bytes, expected {size}")
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise EventDigestMismatch(f"object {name} SHA-256 does not match the signed event")
    return data
