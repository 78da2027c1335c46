"""The feed's lifecycle: connect (bounded), run one session per connection, reconnect forever.

State machine (``Sidecar.feed_state``)::

    connecting --connected--> resyncing? --positioned--> live
        ^                         |  gap / purge            |
        |                         v                          | connection lost
        +------ backoff ----- disconnected <-----------------+
                                   (decisions go on from the local stores throughout)

A session is one NATS connection: nats-py's own reconnect is switched off, so when the
connection drops every consumer of that session ends together and the next session
re-creates them from the positions the followers remember (relations: the stream seq of
the last batch applied; revocations likewise; trust and bundles: the last value, skipped
when its seq was already applied). That keeps "where do we resume" in one place, ours,
instead of split between us and the client library's ordered-consumer resets.

Revocations are the exception to "decisions go on throughout": until the revocations consumer
has replayed its stream up to the end JetStream states at each (re)subscribe, decisions are
held (:mod:`.catchup`). A message the NATS client drops for a slow consumer is loss: counted
in ``tg_feed_slow_consumer_total``, and the revocations consumer is held and resubscribed.

Initial connects are bounded (``asyncio.wait_for`` plus a finite ``max_reconnect_attempts``:
nats-py otherwise keeps retrying a dead server for minutes), and the sidecar starts
serving from its persisted state without waiting for NATS at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import SlowConsumerError
from nats.js.client import JetStreamContext
from tenantguard.errors import ConfigError, NatsAuthorizationRefused, TenantGuardError
from tenantguard.feed import natsconn, topology
from tenantguard.feed.events import PLANE_ISSUER, REVOCATION, EventMalformed
from tenantguard.feed.natsconn import NatsConnection
from tenantguard.identity.keys import TrustedKey, TrustSet, load_public_key_file
from tenantguard.rollout.fleet import STATUS_INTERVAL
from tenantguard.util.urls import shown_text, shown_url

from .base import FeedContext, FeedOptions, Follower
from .confirm import FreshnessConfirmer
from .control import BundleFollower, PlaneView, RevocationsFollower, ShadowFollower, TrustFollower
from .errors import FeedUnavailable
from .gate import EventGate, FeedMetrics
from .relations import RelationsFollower
from .store import ControlState, FeedStore

if TYPE_CHECKING:
    from ..runtime import Sidecar

log = logging.getLogger(__name__)

_RECOVERABLE = (NatsError, OSError, TimeoutError, TenantGuardError)
URGENT_PERSIST_POLL = 0.1  # seconds: how soon a trust or revocation change reaches the state dir


class Backoff:
    """Exponential with full jitter, capped: a fleet of sidecars does not reconnect in lockstep."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial, self.maximum = initial, maximum
        self._next = initial

    def reset(self) -> None:
        self._next = self.initial

    async def sleep(self) -> None:
        delay = random.uniform(self._next / 2, self._next)  # noqa: S311 - jitter, not a secret
        self._next = min(self.maximum, self._next * 2)
        await asyncio.sleep(delay)


class Feed:
    """Pushes the plane's signed events into one sidecar's local stores; see the module docstring.

    Constructing a feed attaches it to the sidecar (metrics, status, the high-risk
    confirmer); one feed per sidecar.
    """

    def __init__(self, sidecar: Sidecar, *, url: str | NatsConnection, plane_keys: TrustSet,
                 store: FeedStore | None = None, options: FeedOptions | None = None,
                 max_staleness_seconds: float = 30.0) -> None:
        if not plane_keys.for_issuer(PLANE_ISSUER):
            raise ConfigError("the feed needs at least one key trusted for issuer 'plane' (--plane-key)")
        self.sidecar, self.store = sidecar, store
        self.connection = NatsConnection.of(url)
        self._next_server = random.randrange(len(self.connection.servers))  # noqa: S311 - spreads a fleet
        self.server: str | None = None  # the node of the current session (redacted URL)
        self.options = options or FeedOptions()
        self.metrics = FeedMetrics(sidecar.metrics.registry)
        sidecar.metrics.registry.register(natsconn.ServerInfoCollector(self.attached_server))
        self.gate = EventGate(plane_keys, self.metrics, max_bytes=self.options.max_event_bytes)
        self._ctx = FeedContext(sidecar, self.gate, self.metrics, self.options)
        # one follower per cell in scope (docs/scoped-feeds.md); cell c0 alone by default
        self.cells = {cell: RelationsFollower(self._ctx, cell) for cell in sidecar.relations.indexes}
        self.trust = TrustFollower(self._ctx)
        self.revocations = RevocationsFollower(self._ctx)
        self.metrics.revocations_caught_up.set_function(lambda: 1.0 if self.revocations.catch_up.synced else 0.0)
        self.bundles = [BundleFollower(self._ctx, topology.BUNDLE_SCOPE_ALL),
                        BundleFollower(self._ctx, sidecar.config.service)]
        self.shadows = [ShadowFollower(self._ctx, topology.BUNDLE_SCOPE_ALL),
                        ShadowFollower(self._ctx, sidecar.config.service)]
        self.plane = PlaneView()
        self._nc: Client | None = None
        self._records_js: tuple[Client, Any] | None = None  # (connection, its JetStream context) for records
        self._revocations_sub: Any = None  # the live revocations subscription (ended on a slow-consumer drop)
        self._drop_task: asyncio.Task[None] | None = None  # ends that subscription (a reference keeps it alive)
        self._drops_logged: set[str] = set()  # kinds whose slow-consumer drop was logged this session
        self._persisted_caught_up_seq = 0  # what the state dir said (status only; never believed)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._persist_lock = asyncio.Lock()
        self._persisted: tuple[tuple[int, ...], int, int, tuple[int, ...]] = ((), -1, -1, ())
        self._state_lock = threading.Lock()  # feed.json is written from the loop and from a worker thread
        self._state_written: tuple[int, int] = (-1, -1)  # (trust seq, revocations seq) in feed.json
        self._on_disk_relations: dict[str, tuple[int, int]] = {}  # cell -> (seq, stream seq) paired with its snapshot
        self._behind_since: dict[str, float] = {}
        self.connects = 0
        self.lame_duck_moves = 0
        self.status_reports = 0
        self.last_error: str | None = None
        sidecar.feed_state = "connecting"
        sidecar.feed_status = self.status
        sidecar.core.confirmer = FreshnessConfirmer(sidecar, max_staleness_seconds, self)

    @classmethod
    def for_sidecar(cls, sidecar: Sidecar, options: FeedOptions | None = None) -> Feed:
        """Build from the sidecar's config: ``nats_url``, ``plane_key``, ``state_dir``, staleness bound."""
        config = sidecar.config
        if config.nats_url is None or config.plane_key is None:
            raise ConfigError("a NATS feed needs both --nats and --plane-key")
        keys = TrustSet([TrustedKey.of(load_public_key_file(config.plane_key), PLANE_ISSUER)])
        store = FeedStore(config.state_dir / "feed") if config.state_dir is not None else None
        return cls(sidecar, url=config.nats or config.nats_url, plane_keys=keys, store=store, options=options,
                   max_staleness_seconds=config.max_staleness_seconds)

    # ------------------------------------------------------------------ lifecycle

    def load_persisted(self) -> None:
        """Restore relations, trust and revocations from ``state_dir`` (blocking; call before serving)."""
        if self.store is None:
            return
        state = self.store.load_state()
        scope = self.sidecar.relations.scope
        types = sorted(scope.types) if scope.types is not None else None
        if not state.relations:
            pass  # nothing persisted yet
        elif state.cells == scope.total and state.scope_types == types:
            for cell, cell_follower in self.cells.items():
                self._restore_cell(cell, cell_follower, state)
        else:  # kept under another cell count or type scope: it may lack what is in scope now
            log.warning("persisted relations were kept for %d cells and types %s, not %d and %s: ignoring them",
                        state.cells, state.scope_types, scope.total, types)
        if state.trust_event is not None:
            self.trust.apply(state.trust_event.encode("ascii"), where=str(self.store.state_path))
        for follower in self.bundles:  # never act on an announce older than one already acted on
            follower.restore(state.bundle_events.get(follower.scope), where=str(self.store.state_path))
        self._restore_revocations(state)
        self._persisted = self._fingerprint()

    def _restore_cell(self, cell: str, follower: RelationsFollower, state: ControlState) -> None:
        assert self.store is not None
        index = self.store.load_relations(cell)
        if index is None or index.applied_seq <= self.sidecar.relations.index(cell).applied_seq:
            return
        self.sidecar.replace_relations(index, cell)
        self.sidecar.readiness.cell_bootstrapped(cell)  # decides from it until NATS answers (cold start)
        seq, stream_seq = state.relations.get(cell, (0, 0))
        if seq == index.applied_seq:
            follower.stream_seq = stream_seq
        self._on_disk_relations[cell] = (index.applied_seq, follower.stream_seq)
        log.info("relations of %s restored from %s at seq %d", cell, self.store.snapshot_path_of(cell),
                 index.applied_seq)

    def _restore_revocations(self, state: ControlState) -> None:
        """Re-verify the persisted revocations and apply them in signed ``seq`` order.

        Never in file order: ``apply`` skips what is not newer than the last applied, so a
        file edited to list a later event first would have every earlier one (a kill
        switch) skipped as "already applied".
        """
        complete = True
        verified = []
        for raw in state.revocation_events:
            data = raw.encode("ascii")
            event = self.gate.verify(data, REVOCATION, where=str(self.store.state_path if self.store else ""))
            if event is None:
                complete = False
                continue
            verified.append((event, data))
        for event, data in sorted(verified, key=lambda pair: pair[0].seq):
            self.revocations.apply(event, data)
        self.revocations.stream_seq = state.revocations_stream_seq if complete else 0
        self.revocations.restored = self.revocations.stream_seq > 0  # checked against the stream first
        self._persisted_caught_up_seq = state.revocations_caught_up_seq

    async def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._run(), name=f"feed-{self.sidecar.config.service}")

    async def stop(self) -> None:
        """Close the connection (which ends every consumer), stop the task, persist what was applied.

        The connection is closed *before* cancelling: nats-py swallows or converts a
        cancellation that lands inside some of its calls, so closing is what reliably ends
        a session; the cancel (bounded) only interrupts a backoff or a connect attempt.
        """
        self._stopping = True
        await self._close()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            _, pending = await asyncio.wait({task}, timeout=self.options.request_timeout * 2)
            if pending:
                log.error("feed task did not stop within %.0f s", self.options.request_timeout * 2)
        self.sidecar.feed_state = "stopped"
        await self.persist()

    async def publish(self, subject: str, payload: bytes) -> None:
        """Core-NATS publish on the current connection (the decision-log sink uses this)."""
        nc = self._nc
        if nc is None or not nc.is_connected:
            raise FeedUnavailable("not connected to NATS")
        await nc.publish(subject, payload)

    async def publish_record(self, subject: str, payload: bytes) -> asyncio.Future[Any]:
        """JetStream publish of decision records, not waiting for the ack: the future resolves
        with it (or fails). Only TG_DECISIONS may store it (expected-stream header)."""
        nc = self._nc
        if nc is None or not nc.is_connected:
            raise FeedUnavailable("not connected to NATS")
        if self._records_js is None or self._records_js[0] is not nc:
            self._records_js = (nc, nc.jetstream(timeout=self.options.request_timeout))
        future: asyncio.Future[Any] = await self._records_js[1].publish_async(
            subject, payload, wait_stall=self.options.request_timeout, stream=topology.STREAM_DECISIONS)
        return future

    # ------------------------------------------------------------------ sessions

    async def _run(self) -> None:
        backoff = Backoff(self.options.backoff_initial, self.options.backoff_max)
        persister = asyncio.create_task(self._persist_forever(), name="feed-persist")
        try:
            while not self._stopping:
                lost = asyncio.Event()
                try:
                    self._nc = await self._connect(lost)
                except _RECOVERABLE as exc:
                    self._note_error("connect", exc)
                    await backoff.sleep()
                    continue
                backoff.reset()
                self.connects += 1
                self.metrics.connects.inc()
                try:
                    await self._session(self._nc, lost)
                finally:
                    self.sidecar.feed_state = "disconnected"
                    await self._close()
                await backoff.sleep()
        finally:
            persister.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await persister

    async def _connect(self, lost: asyncio.Event) -> Client:
        """Dial the server list, one node at a time, starting after the last node used.

        nats-py's reconnect stays off (one session per connection); rotating here is what
        moves a sidecar to a healthy node when its node dies. Every dial is bounded, so a
        pass over the list takes at most ``len(servers) * 3 * connect_timeout``. An
        authorization refusal is raised at once: every node of a cluster shares the users.
        """
        async def on_error(exc: Exception) -> None:
            if isinstance(exc, SlowConsumerError):
                self._on_slow_consumer(exc)
                return
            log.debug("nats: %s", shown_text(str(exc)))

        servers = self.connection.servers
        timeout = self.options.connect_timeout
        failure: Exception | None = None
        for _ in range(len(servers)):
            server = servers[self._next_server % len(servers)]
            self._next_server = (self._next_server + 1) % len(servers)
            attached = [False]  # a failed dial's client closes too: only the session's own may end it

            async def on_lost(attached: list[bool] = attached) -> None:
                if attached[0]:
                    lost.set()

            async def on_lame_duck(attached: list[bool] = attached) -> None:
                # the node is being shut down: leave now, while it still routes, for the next
                # node of the list (decisions go on from memory meanwhile)
                if attached[0]:
                    self.lame_duck_moves += 1
                    log.info("NATS node %s entered lame-duck mode; moving to another node", self.server)
                    lost.set()

            try:
                nc: Client = await natsconn.connect(
                    self.connection, servers=[server], timeout=timeout * 3, connect_timeout=timeout,
                    name=f"tg-sidecar-{self.sidecar.config.service}", allow_reconnect=False,
                    inbox_prefix=topology.sidecar_inbox(self.sidecar.config.service),
                    max_reconnect_attempts=1, reconnect_time_wait=0.05, ping_interval=self.options.ping_interval,
                    max_outstanding_pings=self.options.max_outstanding_pings,
                    disconnected_cb=on_lost, closed_cb=on_lost, lame_duck_mode_cb=on_lame_duck, error_cb=on_error)
            except NatsAuthorizationRefused:
                raise
            except _RECOVERABLE as exc:
                failure = exc
                continue
            attached[0] = True
            self.server = shown_url(server)
            return nc
        assert failure is not None
        raise failure

    async def _session(self, nc: Client, lost: asyncio.Event) -> None:
        """Run every follower and the heartbeat listener until the connection is lost."""
        log.info("feed connected to %s", natsconn.connected_server(nc) or self.server)
        self.sidecar.feed_state = "resyncing"
        self._drops_logged.clear()
        js = nc.jetstream(timeout=self.options.request_timeout)
        followers: list[Follower] = [*self.cells.values(), self.trust, self.revocations, *self.bundles,
                                     *self.shadows]
        tasks = [asyncio.create_task(self._follow(nc, js, f), name=f"feed-{f.kind}") for f in followers]
        tasks.append(asyncio.create_task(self._report_status(nc), name="feed-status"))
        try:
            await nc.subscribe(topology.SUBJECT_HEARTBEAT, cb=self._on_heartbeat)
            await lost.wait()
        except _RECOVERABLE as exc:
            self._note_error("heartbeat subscribe", exc)
        finally:
            for task in tasks:
                task.cancel()
            _, pending = await asyncio.wait(tasks, timeout=self.options.request_timeout)
            for task in pending:
                log.error("feed %s did not stop with its session", task.get_name())
        log.warning("feed lost its NATS connection; deciding from local state, reconnecting")

    async def _report_status(self, nc: Client) -> None:
        """Report this instance's revision on ``tg.status.<service>``: every few seconds and right after
        each bundle swap, so the plane's fleet view follows a rollout stage by stage. Best effort: a
        failed publish is counted and retried at the next report."""
        sidecar = self.sidecar
        subject = topology.status_subject(sidecar.config.service)
        changed = sidecar.status_changed
        while not nc.is_closed:
            changed.clear()
            try:
                await nc.publish(subject, json.dumps(sidecar.fleet_status().to_wire()).encode())
                self.status_reports += 1
            except _RECOVERABLE as exc:
                self._note_error("status report", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), timeout=STATUS_INTERVAL)

    async def _follow(self, nc: Client, js: JetStreamContext, follower: Follower) -> None:
        """One follower for the length of a session: (re)start, consume in order, back off on errors."""
        backoff = Backoff(self.options.backoff_initial, self.options.backoff_max)
        while not nc.is_closed and not self._stopping:
            try:
                await self._consume(js, follower, backoff.reset)
            except _RECOVERABLE as exc:
                if nc.is_closed:
                    return
                self._note_error(follower.kind, exc)
                await backoff.sleep()
            except Exception:  # a bug must not stop the feed for good; say so loudly and retry
                log.exception("feed %s failed unexpectedly", follower.kind)
                await backoff.sleep()

    async def _consume(self, js: JetStreamContext, follower: Follower, progressed: Callable[[], None]) -> None:
        config = await follower.start(js)
        revocations = follower is self.revocations
        options = self.options
        sub = await js.subscribe(follower.subject, stream=follower.stream, ordered_consumer=True, config=config,
                                 idle_heartbeat=options.idle_heartbeat,
                                 pending_msgs_limit=options.revocations_pending_msgs_limit if revocations
                                 else options.pending_msgs_limit,
                                 pending_bytes_limit=options.revocations_pending_bytes_limit if revocations
                                 else options.pending_bytes_limit)
        if revocations:
            self._revocations_sub = sub
        try:
            async for msg in sub.messages:
                if not await follower.handle(js, msg.data, msg.metadata.sequence.stream):
                    return
                if revocations:
                    self.revocations.advanced(msg.metadata.num_pending)
                if (follower is self.trust or revocations) and not msg.metadata.num_pending:
                    self.persist_control_now()  # no await since the apply: nobody has seen it unpersisted
                progressed()
        finally:
            if revocations and self._revocations_sub is sub:
                self._revocations_sub = None
            with contextlib.suppress(*_RECOVERABLE):
                await asyncio.wait_for(sub.unsubscribe(), timeout=self.options.request_timeout)

    def _on_slow_consumer(self, exc: SlowConsumerError) -> None:
        """The client dropped a message that found its subscription's queue full. On the revocations
        subscription that is a hole: hold decisions and resubscribe after the last message handled
        (nats-py's ordered consumer does not redeliver it; tests/feed/test_revocations_slow_consumer.py).
        Other followers find the hole by their own sequence checks; the drop is counted for them too."""
        stream, stream_seq = _ack_position(exc.reply)
        kind = "revocations" if stream == self.revocations.stream else (stream or "unknown").lower()
        self.metrics.slow_consumer.labels(kind).inc()
        first = self.revocations.lost_from is None if kind == "revocations" else kind not in self._drops_logged
        self._drops_logged.add(kind)
        if first:  # a burst drops thousands: the counter has them all, the log the first of each subscription
            log.error("nats dropped a message of %s (stream seq %s): slow consumer", kind, stream_seq or "?")
        if kind != "revocations" or stream_seq is None:
            return
        self.revocations.dropped(stream_seq)
        sub = self._revocations_sub
        if sub is not None:  # wake the consumer even if nothing follows the dropped message
            self._revocations_sub = None
            self._drop_task = asyncio.get_running_loop().create_task(self._end_subscription(sub),
                                                                     name="feed-revocations-drop")

    async def _end_subscription(self, sub: Any) -> None:
        with contextlib.suppress(*_RECOVERABLE):
            await asyncio.wait_for(sub.unsubscribe(), timeout=self.options.request_timeout)

    async def _on_heartbeat(self, msg: Msg) -> None:
        event = self.gate.verify(msg.data, topology.PLANE_HEARTBEAT, where=topology.SUBJECT_HEARTBEAT)
        if event is None:
            return
        try:
            if not self.plane.accept(event):
                return
        except EventMalformed as exc:  # HeartbeatExpired included: a replayed heartbeat proves nothing
            self.gate.reject(exc.code, topology.SUBJECT_HEARTBEAT, exc.message)
            return
        self._check_cells()
        for cell, follower in self.cells.items():
            follower.note_plane_seq(self.plane.cell_seqs.get(cell, 0))
        now = time.time()
        behind = self._behind()
        self._behind_since = {kind: self._behind_since.get(kind, now) for kind in behind}
        if not behind:
            self.sidecar.last_update = now

    def _check_cells(self) -> None:
        """A plane running another cell count routes tenants elsewhere: every answer would be about
        the wrong tuples, so the sidecar is not ready until the settings agree."""
        declared, own = self.plane.cells, self.sidecar.config.cells
        problem = None if declared in (None, own) else (
            f"cell count mismatch: this sidecar is configured for {own} cells, the plane runs {declared}")
        readiness = self.sidecar.readiness
        if problem != readiness.scope_problem:
            if problem is not None:
                log.error("%s; not ready until --cells matches", problem)
            readiness.scope_problem = problem
            readiness.changed.set()

    def _applied_and_declared(self) -> dict[str, tuple[int, int]]:
        """Per stream: (applied here, newest the plane's last heartbeat declared)."""
        pairs = {f.kind: (f.applied, self.plane.cell_seqs.get(cell, 0)) for cell, f in self.cells.items()}
        pairs |= {"trust": (self.trust.seq, self.plane.trust_seq),
                 "revocations": (self.revocations.seq, self.plane.revocations_seq)}
        for follower in self.bundles:
            if follower.scope in self.plane.bundles:
                pairs[follower.kind] = (follower.seq, self.plane.bundles[follower.scope])
        return pairs

    def _behind(self) -> dict[str, tuple[int, int]]:
        return {kind: pair for kind, pair in self._applied_and_declared().items() if pair[0] < pair[1]}

    def lagging(self, now: float | None = None) -> dict[str, tuple[int, int]]:
        """Streams behind the plane's last believable heartbeat for longer than ``lag_grace``.

        A sidecar fed replays or a partial history (a freeze or rollback attempt, or a
        broken link) shows up here; the high-risk confirmer refuses while it is not empty.
        """
        now = time.time() if now is None else now
        grace = self.options.lag_grace
        return {kind: pair for kind, pair in self._behind().items()
                if now - self._behind_since.get(kind, now) > grace}

    async def _close(self) -> None:
        nc, self._nc = self._nc, None
        if nc is not None and not nc.is_closed:
            with contextlib.suppress(*_RECOVERABLE):
                await asyncio.wait_for(nc.close(), timeout=self.options.request_timeout)

    def _note_error(self, where: str, exc: BaseException) -> None:
        """Record for status; warn once per distinct error (an outage retries every few seconds)."""
        message = shown_text(f"{where}: {type(exc).__name__}: {exc}")[:300]
        log.log(logging.DEBUG if message == self.last_error else logging.WARNING, "feed %s", message)
        self.last_error = message

    # ------------------------------------------------------------------ persistence

    async def _persist_forever(self) -> None:
        """Persist every ``persist_interval`` when anything changed, and within about
        ``URGENT_PERSIST_POLL`` once trust or revocations changed: a sidecar killed right after
        a kill switch reached it must not restart from a state without it (it decides from the
        persisted state until NATS answers, which may be never)."""
        due = time.monotonic() + self.options.persist_interval
        while True:
            await asyncio.sleep(min(URGENT_PERSIST_POLL, self.options.persist_interval))
            urgent = self._fingerprint()[1:3] != self._persisted[1:3]
            if not urgent and time.monotonic() < due:
                continue
            due = time.monotonic() + self.options.persist_interval
            try:
                await self.persist()
            except OSError as exc:  # a full disk must not stop the feed; the next pass retries
                log.error("feed state not persisted: %s", exc)
                await asyncio.sleep(self.options.persist_interval)

    def _fingerprint(self) -> tuple[tuple[int, ...], int, int, tuple[int, ...]]:
        return (tuple(f.applied for f in self.cells.values()), self.trust.seq, self.revocations.seq,
                tuple(b.seq for b in self.bundles))

    async def persist(self) -> None:
        """Write the relations snapshot and the control state if anything changed (off the loop)."""
        if self.store is None:
            return
        async with self._persist_lock:
            fingerprint = self._fingerprint()
            if fingerprint == self._persisted:
                return
            await self._write(fingerprint)
            self._persisted = fingerprint

    async def _write(self, fingerprint: tuple[tuple[int, ...], int, int, tuple[int, ...]]) -> None:
        """Write the snapshot of every cell that moved (only those), then feed.json pointing at them."""
        store = self.store
        assert store is not None
        positions = dict(self._on_disk_relations)
        for cell, follower in self.cells.items():
            applied, stream_seq = follower.applied, follower.stream_seq
            if positions.get(cell, (-1, 0))[0] == applied:
                continue
            written = await asyncio.to_thread(store.save_relations, self.sidecar.relations.index(cell), cell)
            positions[cell] = (written, stream_seq if written == applied else 0)
        state = self._control_state(positions)
        if await asyncio.to_thread(self._save_state, state, (self.trust.seq, self.revocations.seq)):
            self._on_disk_relations = positions

    def _control_state(self, positions: dict[str, tuple[int, int]]) -> ControlState:
        scope = self.sidecar.relations.scope
        return ControlState(
            relations=positions,
            cells=scope.total,
            scope_types=sorted(scope.types) if scope.types is not None else None,
            trust_event=self.trust.raw,
            revocation_events=self.revocations.to_keep(time.time()),
            revocations_stream_seq=self.revocations.stream_seq,
            revocations_caught_up_seq=self.revocations.catch_up.caught_up_seq,
            bundle_seqs={b.scope: b.seq for b in self.bundles if b.seq},
            bundle_events={b.scope: b.raw for b in self.bundles if b.seq and b.raw is not None},
        )

    def _save_state(self, state: ControlState, control: tuple[int, int]) -> bool:
        """Write feed.json unless a newer trust set or revocation list is already there (a worker
        thread may finish after the loop wrote a newer one); ``control`` is (trust seq,
        revocations seq) of ``state``. True when written."""
        with self._state_lock:
            if control[0] < self._state_written[0] or control[1] < self._state_written[1]:
                return False
            assert self.store is not None
            self.store.save_state(state)
            self._state_written = control
            return True

    def persist_control_now(self) -> None:
        """Write trust and revocations to feed.json right now, blocking the loop for one small
        write: called right after a live trust or revocation event was applied (the last one
        pending), before any request can observe it, so that a sidecar killed at any moment
        after a kill switch answered 401 comes back with it. A relations snapshot is not
        written here (the 30 s pass does that); feed.json keeps pointing at the one on disk."""
        if self.store is None:
            return
        try:
            self._save_state(self._control_state(self._on_disk_relations), (self.trust.seq, self.revocations.seq))
        except OSError as exc:  # the periodic pass retries; decisions go on
            log.error("trust/revocations not persisted: %s", exc)
            return
        self._persisted = (self._persisted[0], self.trust.seq, self.revocations.seq, self._persisted[3])

    # ------------------------------------------------------------------ status

    def attached_server(self) -> str | None:
        """The node of the live session (redacted URL), None while disconnected."""
        return self.server if self._nc is not None and self._nc.is_connected else None

    def status(self) -> dict[str, Any]:
        """What ``/v1/status`` shows under ``feed_detail``."""
        now = time.time()
        hb_age = round(now - self.plane.received_at, 3) if self.plane.received_at else None
        return {
            "state": self.sidecar.feed_state,
            "connected": self._nc is not None and self._nc.is_connected,
            "server": self.attached_server(),
            "nats": self.connection.redacted(),
            "connects": self.connects,
            "lame_duck_moves": self.lame_duck_moves,
            "status_reports": self.status_reports,
            "relations": {"applied_seq": self.sidecar.relations.applied_seq,
                          "plane_seq": sum(f.plane_seq for f in self.cells.values()),
                          "stream_seq": max(f.stream_seq for f in self.cells.values())},
            "cells": {"plane_cells": self.plane.cells,
                      **{cell: {"applied_seq": f.applied, "plane_seq": f.plane_seq, "stream_seq": f.stream_seq}
                         for cell, f in self.cells.items()}},
            "trust": {"applied_seq": self.trust.seq, "plane_seq": self.plane.trust_seq},
            "revocations": {"applied_seq": self.revocations.seq, "plane_seq": self.plane.revocations_seq,
                            "stream_seq": self.revocations.stream_seq, "caught_up": self.revocations.catch_up.synced,
                            "target_seq": self.revocations.catch_up.target,
                            "caught_up_seq": self.revocations.catch_up.caught_up_seq,
                            "persisted_caught_up_seq": self._persisted_caught_up_seq},
            "bundles": {b.scope: {"announce_seq": b.seq, "revision": b.revision} for b in self.bundles},
            "bundle_plane_seqs": {b.scope: self.plane.bundles[b.scope] for b in self.bundles
                                  if b.scope in self.plane.bundles},
            "heartbeat": {"received": self.plane.heartbeats, "age_seconds": hb_age,
                          "expires_in_seconds": round(self.plane.expires_at - now, 3) if self.plane.heartbeats
                          else None, "believable": self.plane.believable(now)},
            "lagging": {kind: {"applied_seq": a, "plane_seq": p} for kind, (a, p) in self.lagging(now).items()},
            "events_rejected": self.gate.rejected,
            "persisted_relations_seq": sum(self._persisted[0]) if self.store is not None else None,
            "last_error": self.last_error,
        }


def _ack_position(reply: str | None) -> tuple[str | None, int | None]:
    """(stream, stream seq) from a JetStream message's reply subject: ``$JS.ACK.<stream>.<consumer>.
    <delivered>.<sseq>...`` (9 tokens) or, with domain and account hash, ``$JS.ACK.<domain>.<hash>.
    <stream>.<consumer>.<delivered>.<sseq>...`` (11 or more)."""
    tokens = (reply or "").split(".")
    if len(tokens) < 9 or tokens[:2] != ["$JS", "ACK"]:
        return None, None
    offset = 2 if len(tokens) >= 11 else 0
    try:
        return tokens[2 + offset], int(tokens[5 + offset])
    except ValueError:
        return tokens[2 + offset], None
