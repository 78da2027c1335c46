"""The plane's one door to NATS: connect, ensure the topology, publish, read back.

Every NATS call goes through here and every NATS failure leaves as a tenantguard error
(:class:`~tenantguard.errors.Unavailable`, :class:`SequenceConflict`, ...), so the API
layer never sees a nats-py exception. Every await is bounded: the first connect by
``asyncio.wait_for`` (nats-py would otherwise retry a dead server for about two minutes),
requests by ``request_timeout``. Once connected, the client reconnects forever: a plane
outlives NATS restarts, and calls made meanwhile fail fast with ``Unavailable``.

Optimistic concurrency. Subjects whose events carry a gap-free ``seq`` (relations,
trust, revocations, bundle announces, snapshot manifests) are published with
``Nats-Expected-Last-Subject-Sequence`` = the JetStream sequence of the last message this
replica has seen on that subject. If another replica published first, JetStream refuses
with error 10071 (10164 on a clustered stream) and we raise :class:`SequenceConflict`; the caller catches up and
retries, so two replicas can never both claim seq N.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    ObjectStoreConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from tenantguard.errors import ConfigError, PayloadTooLarge, TenantGuardError, Unavailable
from tenantguard.feed import history, natsconn
from tenantguard.feed import topology as topo
from tenantguard.feed.natsconn import NatsConnection
from tenantguard.util.urls import shown_text

log = logging.getLogger(__name__)
_T = TypeVar("_T")

EXPECTED_LAST_SUBJECT_SEQ: Final = "Nats-Expected-Last-Subject-Sequence"
MSG_ID: Final = "Nats-Msg-Id"
DUPLICATE_WINDOW: Final = 600.0  # seconds JetStream remembers a Nats-Msg-Id: revocations (relation writes keep
# their keys in the replicated state, see idempotency.py; the window stays on TG_RELATIONS for replicas of
# earlier versions during a rolling upgrade)
PING_INTERVAL: Final = 0.5  # seconds between client pings; a node that misses MAX_OUTSTANDING_PINGS is left
MAX_OUTSTANDING_PINGS: Final = 4  # so a hung or blackholed node (alive to TCP, answering nothing) is left
# 2.0-2.5 s after its last answer, and another node reached within 3 s (tests/cluster/test_partitions.py).
# (1 s x 3 before, 3-4 s; 1 s x 2 had made writes fail during the meta leader's lame-duck handover in 2 of
# 3 runs of tests/cluster, while nats-py still reshuffled the server list on every reconnect)
MOVE_GRACE: Final = 5.0  # seconds a replica moving to another node still takes writes (see Publisher.moving)
SILENT_GRACE: Final = 0.5  # the same after leaving a node that went silent: the cut may be on our side
PEER_SILENT_NS: Final = 2_000_000_000  # a stream replica its leader has not heard from for 2 s is not counted
LOST_POLL: Final = 0.05  # seconds between two looks at whether a request in flight lost its connection
READ_PATIENCE: Final = 3.0  # seconds a read is asked again while JetStream is in a handover (Publisher._read)
READ_PAUSE: Final = 0.1  # seconds between two such asks
# what JetStream answers while a leader is being elected (a 503, or no responder to the API subject), or
# what a request meets while its connection moves to another node; any other refusal is final at once
_IN_HANDOVER = (nats.js.errors.ServiceUnavailableError, nats.errors.NoRespondersError, nats.errors.TimeoutError,
                nats.errors.ConnectionClosedError, nats.errors.ConnectionReconnectingError)
FOLLOW_PATIENCE: Final = 30.0  # seconds creating an ordered consumer is retried while NATS is unavailable
FOLLOW_HEARTBEAT: Final = 0.5  # ordered consumers: two missed heartbeats (1 s) and nats-py resets them
STREAM_SEQ_HINT: Final = "Tg-Stream-Seq"  # unsigned hint on snapshot manifests (see state.py)
# A lost expected-sequence race: 10071 from a single server, 10164 ("wrong last sequence")
# from a clustered stream's leader.
_WRONG_LAST_SEQUENCE: Final = frozenset({10071, 10164})
_STATED_LAST: Final = re.compile(r"wrong last sequence: (\d{1,19})\b")
_STREAM_NAME_IN_USE: Final = 10058
HISTORY_MAX_MSGS: Final = 100_000
HISTORY_MAX_BYTES: Final = 256 * 1024 * 1024
ROLLOUT_MAX_MSGS: Final = 1000
ROLLOUT_MAX_MSG: Final = 64 * 1024


class SequenceConflict(TenantGuardError):
    """Another replica published on this subject first; catch up and retry. ``detail["last"]``: the
    subject's last stream sequence, when JetStream said which (error 10071 does)."""

    code = "sequence_conflict"
    http_status = 409
    retryable = True


class ObjectMissing(Unavailable):
    """An object-store entry is not there (deleted, never written): unlike a timeout, trying again
    will not bring it back."""


@dataclass(frozen=True, slots=True)
class Stored:
    """Where a publish landed: the stream sequence, and whether it was a duplicate of an earlier one."""

    stream_seq: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class StoredMsg:
    """A message read back from a stream: its JetStream sequence, bytes and headers."""

    stream_seq: int
    data: bytes
    headers: dict[str, str]
    subject: str = ""


Handler = Callable[[str, int, bytes, dict[str, str]], Awaitable[None]]


DECISIONS_MAX_MSG_SIZE: Final = 256 * 1024  # = tenantguard.decisionlog.MAX_MESSAGE_BYTES
SCAN_FETCH: Final = 256


def stream_configs(*, relations_max_age: float, replicas: int, decisions_max_age: float = 7 * 24 * 3600.0,
                   decisions_max_bytes: int = 0) -> list[StreamConfig]:
    """The JetStream streams of :mod:`tenantguard.feed.topology`, as the plane creates them.

    TG_DECISIONS is the one stream sidecars write: limits by age and (when
    ``decisions_max_bytes`` is not 0) size, oldest records first, and a per-message bound so
    no publisher can store a huge message. A size bound is reserved against the JetStream
    store at creation: size the store for it."""

    def cfg(name: str, subjects: list[str], **extra: Any) -> StreamConfig:
        settings: dict[str, Any] = {"discard": DiscardPolicy.OLD} | extra
        return StreamConfig(name=name, subjects=subjects, storage=StorageType.FILE, num_replicas=replicas,
                            retention=RetentionPolicy.LIMITS, **settings)

    # "Newest wins" subjects keep their history and refuse new messages when full, so no
    # publisher can push the genuine newest event out, and "newest" is the highest signed
    # seq, never the last message stored. The plane compacts each subject after every
    # commit (``purge_before``), so in normal operation only a handful of messages remain.
    history = {"discard": DiscardPolicy.NEW, "max_msgs_per_subject": -1, "max_msgs": HISTORY_MAX_MSGS,
               "max_bytes": HISTORY_MAX_BYTES}
    return [
        # one subject per tenant cell (tg.relations.changes.<cell>); an existing stream's subjects are
        # updated by ensure_topology
        cfg(topo.STREAM_RELATIONS, [topo.SUBJECT_RELATIONS_ALL], max_age=relations_max_age,
            duplicate_window=DUPLICATE_WINDOW),
        cfg(topo.STREAM_SNAPSHOTS, [topo.SUBJECT_SNAPSHOTS_ALL], **history),
        cfg(topo.STREAM_TRUST, [topo.SUBJECT_TRUST], **history),
        cfg(topo.STREAM_REVOCATIONS, [topo.SUBJECT_REVOCATIONS], duplicate_window=DUPLICATE_WINDOW),
        cfg(topo.STREAM_BUNDLES, [f"{topo.SUBJECT_BUNDLES_PREFIX}.*", f"{topo.SUBJECT_SHADOWS_PREFIX}.*"], **history),
        cfg(topo.STREAM_DECISIONS, [topo.SUBJECT_DECISIONS_ALL], max_age=decisions_max_age,
            max_bytes=decisions_max_bytes or -1, max_msg_size=DECISIONS_MAX_MSG_SIZE),
        # rollout states are small and compacted after each commit: bounded by count and message size,
        # without a byte reservation (JetStream reserves max_bytes against the account's store)
        cfg(topo.STREAM_ROLLOUTS, [topo.SUBJECT_ROLLOUT], **{**history, "max_msgs": ROLLOUT_MAX_MSGS,
                                                               "max_bytes": -1, "max_msg_size": ROLLOUT_MAX_MSG}),
    ]


@contextlib.asynccontextmanager
async def nats_boundary(what: str) -> AsyncIterator[None]:
    """Translate nats-py (and timeout) failures into tenantguard errors."""
    try:
        yield
    except TenantGuardError:
        raise
    except nats.js.errors.APIError as exc:
        if exc.err_code in _WRONG_LAST_SEQUENCE:
            stated = _STATED_LAST.search(exc.description or "")  # a single server says which it is; a cluster not
            raise SequenceConflict(f"{what}: another writer got there first", nats=exc.description,
                                   **({"last": int(stated[1])} if stated else {})) from None
        if isinstance(exc, nats.js.errors.ServiceUnavailableError):
            raise Unavailable(f"{what}: JetStream is not available") from None
        raise Unavailable(f"{what}: JetStream refused: {exc.description}", nats_code=exc.err_code) from None
    except nats.errors.MaxPayloadError:
        raise PayloadTooLarge(f"{what}: message exceeds the NATS max_payload") from None
    except (nats.errors.Error, TimeoutError, OSError) as exc:
        raise Unavailable(f"{what}: NATS unavailable ({type(exc).__name__})") from None


class Publisher:
    """One NATS connection and its JetStream context; see the module docstring."""

    def __init__(self, url: str | NatsConnection, *, connect_timeout: float = 5.0, request_timeout: float = 5.0,
                 relations_max_age: float = 0.0, replicas: int = 1, decisions_max_age: float = 7 * 24 * 3600.0,
                 decisions_max_bytes: int = 0, name: str = "tenantguard-plane") -> None:
        self.connection = NatsConnection.of(url)
        self.name = name  # the client name NATS shows in /connz (the plane gives its replica id)
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.relations_max_age = relations_max_age
        self.decisions_max_age = decisions_max_age
        self.decisions_max_bytes = decisions_max_bytes
        self.replicas = replicas
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self.disconnects = 0
        self.lame_duck_moves = 0
        self._left_at: float | None = None  # monotonic time the current reconnect began
        self._left_silent = False  # the current reconnect began because the node stopped answering pings
        self._moving: asyncio.Future[None] | None = None

    # ------------------------------------------------------------------ connection

    async def connect(self) -> None:
        """First connect, bounded; any node of the server list will do, and nats-py then
        reconnects forever across the list. Pings every half second: with nats-py's default (every
        2 minutes, 2 outstanding) a replica attached to a hung node kept it for minutes,
        answering 503 to every write while reporting ready. The list is shuffled once, here, and
        then dialled in turn (``dont_randomize``): nats-py otherwise reshuffles it on every
        reconnect, so a replica leaving a blackholed node could dial that node again first and wait
        out ``connect_timeout`` there (a 6.4 s move in tests/cluster/test_partitions.py). Failures
        leave as typed errors with the servers redacted (an authorization refusal is reported at
        once, not as a timeout)."""
        servers = random.sample(self.connection.servers, len(self.connection.servers))  # spread the replicas
        nc = await natsconn.connect(
            self.connection, servers=servers, dont_randomize=True,
            timeout=self.connect_timeout * 2, connect_timeout=max(1, int(self.connect_timeout)),
            allow_reconnect=True, max_reconnect_attempts=-1, reconnect_time_wait=1, error_cb=self._on_error,
            ping_interval=PING_INTERVAL, max_outstanding_pings=MAX_OUTSTANDING_PINGS,
            disconnected_cb=self._on_disconnect, reconnected_cb=self._on_reconnect,
            lame_duck_mode_cb=self._on_lame_duck, name=self.name)
        self._nc = nc
        self._js = nc.jetstream(timeout=self.request_timeout)
        log.info("connected to NATS at %s", self.server)

    @property
    def server(self) -> str | None:
        """The node this replica is attached to (redacted URL), None while disconnected."""
        return natsconn.connected_server(self._nc) if self._nc is not None else None

    async def close(self) -> None:
        if self._nc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._nc.drain(), timeout=self.request_timeout)
            with contextlib.suppress(Exception):
                await self._nc.close()
        self._nc, self._js = None, None

    @property
    def connected(self) -> bool:
        return self._nc is not None and self._nc.is_connected

    @property
    def max_payload(self) -> int:
        return self._nc.max_payload if self._nc is not None else 1024 * 1024

    @property
    def js(self) -> JetStreamContext:
        if self._js is None:
            raise Unavailable("not connected to NATS")
        return self._js

    @property
    def nc(self) -> Client:
        if self._nc is None:
            raise Unavailable("not connected to NATS")
        return self._nc

    async def _on_error(self, exc: Exception) -> None:
        # nats-py errors may quote a server URL: redact before logging.
        log.warning("nats: %s: %s", type(exc).__name__, shown_text(str(exc))[:200])

    async def _on_disconnect(self) -> None:
        self.disconnects += 1
        if self._left_at is None:
            self._left_at = time.monotonic()
            self._left_silent = _went_silent(self._nc)

    async def _on_reconnect(self) -> None:
        self._left_at = None
        self._left_silent = False

    @property
    def moving(self) -> bool:
        """Reconnecting to another node for less than ``MOVE_GRACE`` seconds (its node left in
        lame-duck mode or died), or ``SILENT_GRACE`` after leaving a node that stopped answering
        pings. Writes are taken meanwhile rather than refused: nats-py holds their publish until
        it is attached again, and a writer sends one whose outcome is unknown again (writer.py).
        Past the grace (the cluster is gone) they are refused at once.

        Why a silent node gets the short grace: a node that closes our connection (it died, it
        was drained) leaves the others reachable, and the next one answers at once. Silence may as
        well be a cut on this replica's side (its own network, a partition), and then no node
        answers: writes held for 5 s more would be refused 7-8 s after the cut instead of within
        3 s. The next node of the list is dialled as soon as the silence is noticed (2.0-2.5 s),
        so a healthy one is reached within the short grace too."""
        nc = self._nc
        if nc is None or nc.is_closed or nc.is_connected:
            return False  # reconnecting, or connecting to the next node (a state of its own in nats-py)
        left = self._left_at
        grace = SILENT_GRACE if self._left_silent else MOVE_GRACE
        return left is None or time.monotonic() - left < grace

    async def until_lost(self, answer: Awaitable[_T], what: str) -> _T:
        """``answer`` (a request just sent), unless it can no longer come: then :class:`Unavailable`
        at once, the outcome unknown. nats-py waits for a reply until the request's timeout even
        when the connection it went out on is gone (the reply was due there), so a write in flight
        when its node went silent was answered only after the full 5 s, and a replica cut off from
        NATS refused it 10 s after the cut (tests/cluster/test_partitions.py)."""
        task = asyncio.ensure_future(answer)
        given_up = asyncio.ensure_future(self._given_up())
        waiting: set[asyncio.Future[Any]] = {task, given_up}
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            given_up.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        raise Unavailable(f"{what}: no answer can come, the connection to NATS is lost (outcome unknown)")

    async def _given_up(self) -> None:
        """Returns once a request sent just now can no longer be answered. Polled (every
        ``LOST_POLL``) from nats-py's own state rather than from its callbacks, which run after the
        state changed: a request sent in between would be matched with the wrong connection."""
        if not self.connected:  # sent between nodes: nats-py holds it and sends it once attached
            while not self.connected:
                if not self.moving:
                    return  # no node answers: nobody will send it
                await asyncio.sleep(LOST_POLL)
        while self.connected:  # the reply comes on this connection, unless it is lost first
            await asyncio.sleep(LOST_POLL)

    async def _on_lame_duck(self) -> None:
        """Our node entered lame-duck mode (it is being shut down, ``nats-server --signal ldm``):
        move to another node of the list now, while this one still routes, rather than when it
        closes the connection. A write in flight meanwhile has an unknown outcome and is sent
        again by its writer (writer.py); the followers resume where they were."""
        self.lame_duck_moves += 1
        log.info("NATS node %s entered lame-duck mode; moving to another node", self.server)
        nc = self._nc
        if nc is not None:
            self._left_at = time.monotonic()
            self._left_silent = False
            self._moving = asyncio.ensure_future(nc.force_reconnect())  # not from inside its read loop

    # ------------------------------------------------------------------ topology

    async def ensure_topology(self) -> None:
        """Create the streams and object stores of the contract; idempotent, replica-safe."""
        for config in stream_configs(relations_max_age=self.relations_max_age, replicas=self.replicas,
                                     decisions_max_age=self.decisions_max_age,
                                     decisions_max_bytes=self.decisions_max_bytes):
            await self._ensure_stream(config)
        for bucket in (topo.BUCKET_SNAPSHOTS, topo.BUCKET_BUNDLES):
            await self._ensure_bucket(bucket)

    async def _ensure_stream(self, config: StreamConfig) -> None:
        async with nats_boundary(f"create stream {config.name}"):
            try:
                await self.js.add_stream(config)
            except nats.js.errors.APIError as exc:
                if exc.err_code != _STREAM_NAME_IN_USE:
                    raise
                try:
                    await self.js.update_stream(config)  # the plane owns the topology
                except nats.js.errors.APIError as update:
                    raise ConfigError(
                        f"stream {config.name} exists and cannot be updated: {update.description}"
                    ) from None

    async def _ensure_bucket(self, bucket: str) -> None:
        async with nats_boundary(f"create object store {bucket}"):
            try:
                await self.js.object_store(bucket)
            except nats.js.errors.NotFoundError:
                await self.js.create_object_store(
                    bucket, ObjectStoreConfig(storage=StorageType.FILE, replicas=self.replicas)
                )

    # ------------------------------------------------------------------ publish and read

    async def publish(self, subject: str, data: bytes, *, expected_last_subject_seq: int | None = None,
                      headers: dict[str, str] | None = None, msg_id: str | None = None,
                      timeout: float | None = None) -> Stored:
        """Publish to JetStream; where it was stored, and whether JetStream had it already.
        ``timeout``: how long to wait for the acknowledgement (default: the request timeout).

        ``msg_id`` makes the publish idempotent within the stream's duplicate window: a
        second publish with the same id stores nothing and answers the first one's
        sequence (``duplicate``). With an expected sequence that the first one made stale,
        nats-server 2.15 answers the conflict instead (the sequence is checked first): the
        writer then reads what was stored after its expectation (:meth:`first_after`).
        """
        if len(data) > self.max_payload:
            raise PayloadTooLarge(f"event is {len(data)} bytes; NATS max_payload is {self.max_payload}",
                                  limit=self.max_payload)
        hdrs = dict(headers or {})
        if expected_last_subject_seq is not None:
            hdrs[EXPECTED_LAST_SUBJECT_SEQ] = str(expected_last_subject_seq)
        if msg_id is not None:
            hdrs[MSG_ID] = msg_id
        async with nats_boundary(f"publish {subject}"):
            ack = await self.until_lost(self.js.publish(subject, data, timeout=timeout, headers=hdrs or None),
                                        f"publish {subject}")
        return Stored(int(ack.seq), bool(ack.duplicate))

    async def _read(self, what: str, ask: Callable[[], Awaitable[_T]], *,
                    patience: float = READ_PATIENCE) -> _T | None:
        """``ask()``, a JetStream read (idempotent); None when JetStream has no such message or stream.

        Asked again for up to ``READ_PATIENCE`` while JetStream is in a handover or the
        connection moves to another node: a node leaving in lame-duck mode hands its leaderships
        away, and for a moment the API answers 503 or nobody answers (the meta leader leaving:
        ``read last ...: JetStream is not available`` reached a writer's caller as a 503 when it
        caught up after a lost race). Every other refusal passes at once; so does a failure once
        NATS is gone (neither connected nor moving) or the ``patience`` is spent (0: one ask)."""
        deadline = time.monotonic() + patience
        while True:
            async with nats_boundary(what):
                try:
                    return await ask()
                except nats.js.errors.NotFoundError:
                    return None
                except _IN_HANDOVER:
                    if time.monotonic() + READ_PAUSE >= deadline or not (self.connected or self.moving):
                        raise
            await asyncio.sleep(READ_PAUSE)

    async def stored(self, stream: str, stream_seq: int) -> StoredMsg:
        """The message at ``stream_seq`` (e.g. the first outcome of an idempotent retry)."""
        raw = await self._read(f"read {stream} message {stream_seq}", lambda: self.js.get_msg(stream, stream_seq))
        if raw is None:
            raise Unavailable(f"{stream} message {stream_seq} is gone")
        return StoredMsg(int(raw.seq or 0), bytes(raw.data or b""), dict(raw.headers or {}))

    async def first_after(self, stream: str, subject: str, stream_seq: int) -> StoredMsg | None:
        """The first message on ``subject`` stored after ``stream_seq``, None when there is none."""
        raw = await self._read(f"read {stream} after message {stream_seq}",
                               lambda: self.js.get_msg(stream, stream_seq + 1, subject=subject, next=True))
        if raw is None:
            return None
        return StoredMsg(int(raw.seq or 0), bytes(raw.data or b""), dict(raw.headers or {}), subject)

    async def publish_core(self, subject: str, data: bytes) -> None:
        """Fire-and-forget core NATS publish (heartbeats)."""
        async with nats_boundary(f"publish {subject}"):
            await self.nc.publish(subject, data)

    async def last_on_subject(self, stream: str, subject: str, *,
                              patience: float = READ_PATIENCE) -> StoredMsg | None:
        """The last message stored on ``subject``, or None when there is none."""
        raw = await self._read(f"read last {subject}", lambda: self.js.get_last_msg(stream, subject),
                               patience=patience)
        if raw is None:
            return None
        return StoredMsg(int(raw.seq or 0), bytes(raw.data or b""), dict(raw.headers or {}))

    async def subject_history(self, stream: str, subject: str, *, start_seq: int = 1,
                              limit: int = history.SCAN_LIMIT) -> AsyncIterator[StoredMsg]:
        """Every message stored on ``subject`` from ``start_seq``, oldest first, at most ``limit``
        (see :mod:`tenantguard.feed.history`)."""
        async with nats_boundary(f"read {subject} history"):
            async for raw in history.subject_history(self.js, stream, subject, limit=limit, start_seq=start_seq):
                yield StoredMsg(int(raw.seq or 0), bytes(raw.data or b""), dict(raw.headers or {}))

    async def purge_before(self, stream: str, subject: str, stream_seq: int) -> None:
        """Remove ``subject``'s messages stored before ``stream_seq`` (compaction after a commit)."""
        async with nats_boundary(f"compact {subject}"):
            await self.js.purge_stream(stream, seq=stream_seq, subject=subject)

    async def last_seq_on(self, stream: str, subject: str, *, patience: float = READ_PATIENCE) -> int:
        last = await self.last_on_subject(stream, subject, patience=patience)
        return last.stream_seq if last is not None else 0

    async def quorum_answers(self, stream: str) -> bool:
        """Whether ``stream``'s leader answers (one ask, no patience) and hears from enough of its
        replicas to commit. A leader cut off with a minority still answers reads until it steps
        down, several seconds later; it already reports its peers as not current or long silent."""
        info = await self._read(f"stream info {stream}", lambda: self.js.stream_info(stream), patience=0.0)
        if info is None:
            raise Unavailable(f"stream info {stream}: there is no such stream")
        peers = (info.cluster.replicas if info.cluster is not None else None) or []
        heard = 1 + sum(1 for p in peers if p.current and not p.offline and (p.active or 0) < PEER_SILENT_NS)
        return heard > (len(peers) + 1) // 2

    async def stream_bounds(self, stream: str) -> tuple[int, int]:
        """(first, last) sequence stored in ``stream``; (0, 0) or (n+1, n) when empty."""
        info = await self._read(f"stream info {stream}", lambda: self.js.stream_info(stream))
        if info is None:
            raise Unavailable(f"stream info {stream}: there is no such stream")
        return int(info.state.first_seq or 0), int(info.state.last_seq or 0)

    async def scan(self, stream: str, subject: str, *, start_seq: int, end_seq: int,
                   max_msgs: int) -> list[StoredMsg]:
        """Messages on ``subject`` (a filter) with ``start_seq <= seq <= end_seq``, oldest first,
        at most ``max_msgs``: an ephemeral pull consumer (no acks, deleted afterwards) whose
        pending count at creation says how many to fetch, so no fetch waits for its timeout."""
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=max(1, start_seq),
                                ack_policy=AckPolicy.NONE, inactive_threshold=60.0, mem_storage=True)
        out: list[StoredMsg] = []
        async with nats_boundary(f"scan {stream}"):
            psub = await self.js.pull_subscribe(subject, stream=stream, config=config)
            name: str | None = None
            try:
                info = await psub.consumer_info()
                name, pending = info.name, int(info.num_pending or 0)
                while pending > 0 and len(out) < max_msgs:
                    msgs = await psub.fetch(min(SCAN_FETCH, pending, max_msgs - len(out)),
                                            timeout=self.request_timeout)
                    if not msgs:
                        break
                    pending -= len(msgs)
                    for msg in msgs:
                        seq = int(msg.metadata.sequence.stream)
                        if seq > end_seq:
                            return out
                        out.append(StoredMsg(seq, bytes(msg.data or b""), dict(msg.headers or {}), msg.subject))
            finally:
                if name is not None:  # inactive_threshold removes it anyway if this fails
                    with contextlib.suppress(Exception):
                        await self.js.delete_consumer(stream, name)
                with contextlib.suppress(Exception):
                    await psub.unsubscribe()
        return out

    async def first_seq_since(self, stream: str, subject: str, since: float) -> int | None:
        """The sequence of the first message on ``subject`` stored at or after ``since`` (epoch
        seconds), None when there is none. A binary search over stored times with message gets
        (about log2(messages) requests, served by the stream leader): no consumer is created,
        so a replica starting while the cluster is busy adds no work to its meta layer."""
        first, last = await self.stream_bounds(stream)
        if last < max(first, 1):
            return None
        lo, hi = max(first, 1), last
        newest = await self._next_stored(stream, subject, hi)
        if newest is None or newest[1] < since:
            return None
        while lo < hi:  # the smallest position whose next stored message is recent enough
            mid = (lo + hi) // 2
            found = await self._next_stored(stream, subject, mid)
            if found is not None and found[1] >= since:
                hi = mid
            else:
                lo = mid + 1
        found = await self._next_stored(stream, subject, lo)
        return found[0] if found is not None else None

    async def _next_stored(self, stream: str, subject: str, seq: int) -> tuple[int, float] | None:
        """(sequence, stored time) of the first message on ``subject`` at or after ``seq``."""
        raw = await self._read(f"read {stream} from {seq}",
                               lambda: self.js.get_msg(stream, seq, subject=subject, next=True))
        if raw is None:
            return None
        return int(raw.seq or 0), raw.time.timestamp() if raw.time is not None else 0.0

    async def stream_last_seq(self, stream: str) -> int:
        """The last sequence stored in ``stream`` (0 when empty)."""
        info = await self._read(f"stream info {stream}", lambda: self.js.stream_info(stream))
        if info is None:
            raise Unavailable(f"stream info {stream}: there is no such stream")
        return int(info.state.last_seq or 0)

    async def put_object(self, bucket: str, name: str, data: bytes) -> None:
        async with nats_boundary(f"store {bucket}/{name}"):
            store = await self.js.object_store(bucket)
            await asyncio.wait_for(store.put(name, data), timeout=self.request_timeout * 6)

    async def get_object(self, bucket: str, name: str, *, max_bytes: int) -> bytes:
        """Object bytes, refusing before download anything larger than ``max_bytes``."""
        async with nats_boundary(f"read {bucket}/{name}"):
            store = await self.js.object_store(bucket)
            try:
                info = await store.get_info(name)
            except nats.js.errors.NotFoundError:
                raise ObjectMissing(f"object {bucket}/{name} is missing") from None
            if info.size is not None and info.size > max_bytes:
                raise PayloadTooLarge(f"object {bucket}/{name} is {info.size} bytes, limit {max_bytes}")
            result = await asyncio.wait_for(store.get(name), timeout=self.request_timeout * 6)
        return bytes(result.data or b"")

    # ------------------------------------------------------------------ consume

    async def follow(self, stream: str, subject: str, handler: Handler, *, start_seq: int = 1,
                     patience: float = FOLLOW_PATIENCE) -> Subscription:
        """An ordered consumer from ``start_seq``: in order, no gaps, reset by nats-py on reconnect and
        after two missed idle heartbeats (about a second), e.g. when the node serving it died.

        Creating it is retried for up to ``patience`` seconds while NATS answers ``Unavailable``
        (a timeout during a meta-leader election, a node restarting): a replica starting, or
        restarting a stalled follower, rides that out instead of exiting. Each attempt builds a
        new consumer config and deliver subject, and nats-py subscribes only once the consumer
        exists, so a timed-out attempt leaves at most an ephemeral consumer nobody listens to,
        which the server removes."""
        loop = asyncio.get_running_loop()
        deadline, delay = loop.time() + patience, 0.25
        while True:
            try:
                return await self._follow_once(stream, subject, handler, start_seq)
            except Unavailable as exc:
                if loop.time() + delay > deadline:
                    raise
                log.warning("following %s failed (%s); trying again in %g s", stream, exc.message, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 4.0)

    async def _follow_once(self, stream: str, subject: str, handler: Handler, start_seq: int) -> Subscription:
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=max(1, start_seq))

        async def on_msg(msg: Msg) -> None:
            meta = msg.metadata
            await handler(msg.subject, int(meta.sequence.stream), msg.data, dict(msg.headers or {}))

        async with nats_boundary(f"follow {stream}"):
            return await self.js.subscribe(subject, stream=stream, cb=on_msg, ordered_consumer=True, config=config,
                                           idle_heartbeat=FOLLOW_HEARTBEAT)

    async def subscribe_core(self, subject: str, handler: Callable[[Msg], Awaitable[None]]) -> Subscription:
        async with nats_boundary(f"subscribe {subject}"):
            return await self.nc.subscribe(subject, cb=handler, pending_msgs_limit=10_000,
                                           pending_bytes_limit=64 * 1024 * 1024)


def _went_silent(nc: Client | None) -> bool:
    """Whether nats-py is leaving its node because pings went unanswered (a stale connection),
    rather than because the node closed the connection. nats-py says so only in its ping
    counter (it reports no error for it), a private attribute of the version pinned in
    .ci/constraints.txt; tests/plane/test_silent_node.py fails if it ever stops meaning this."""
    if nc is None:
        return False
    return int(getattr(nc, "_pings_outstanding", 0)) > int(nc.options.get("max_outstanding_pings", 0))
