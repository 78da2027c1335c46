"""One plane replica: NATS connection, followers, writers, background tasks, operations.

Startup order: connect (bounded), ensure the topology, load the latest relations
snapshot, start one follower per stream, consume everything already stored (bounded by
``bootstrap_timeout``), and only then report ready. Any replica can serve any request;
all of them converge on the same state because state changes only through JetStream.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any

from nats.aio.msg import Msg
from prometheus_client.core import GaugeMetricFamily
from tenantguard.errors import InvalidInput, TenantGuardError, Unavailable
from tenantguard.feed import topology as topo
from tenantguard.feed.events import REVOCATION, TRUST_UPDATE, sign_batch, sign_event, verify_event
from tenantguard.feed.natsconn import ServerInfoCollector
from tenantguard.identity.keys import TrustedKey, TrustSet
from tenantguard.relations import CellsMixed, ChangeBatch, RelationChange
from tenantguard.rollout import FleetView

from .admission import SchemaAdmission
from .audit import AuditLog
from .bundles import BundleService, ImpactGate
from .config import PlaneConfig
from .decisions import DecisionStore
from .decisions.explain import Explainer
from .errors import IdempotencyKeyReused, NotReady
from .follower import Follower
from .groupcommit import GroupCommitter, Member
from .idempotency import changes_digest, key_hash, legacy_key_hash, revocation_msg_id
from .metrics import PlaneMetrics
from .migrate import carry_legacy_relations
from .publisher import Publisher
from .purge import ExpiredPurge
from .revocations import REQUEST_DIGEST, request_digest, same_request
from .snapshots import Heartbeat, Snapshotter
from .state import OwnBatch, PlaneState
from .trust import jwks_of
from .writer import SequencedWriter, Written

log = logging.getLogger(__name__)


class _NoChange(Exception):
    """The requested change leaves the state as it is: publish nothing."""


WATCH_INTERVAL = 1.0
STALL_RESTART = 2.0  # seconds behind the stream without progress before a follower is re-created
LAG_NOT_READY = 5.0  # seconds behind the stream before the replica says it is not ready
CUT_OFF_AFTER = 3.0  # seconds without a quorum answering for the relations stream: cut off from JetStream
PROBE_EVERY = 0.5  # seconds between two such questions
PROBE_TIMEOUT = 1.0  # seconds one question may take
CLOCK_SLACK = 60.0  # seconds read back before the idempotency window (NATS' clock and ours may differ)
IDEMPOTENCY_KEY_RE = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def _checked_key(key: str | None) -> str | None:
    if key is None:
        return None
    if IDEMPOTENCY_KEY_RE.fullmatch(key) is None:
        raise InvalidInput("Idempotency-Key must be 1-128 characters of A-Z a-z 0-9 . _ : -", field="Idempotency-Key")
    return key


class _CellsCollector:
    """``tg_plane_cell_relations_seq{cell}`` and ``tg_plane_cell_relations_tuples{cell}``."""

    def __init__(self, state: PlaneState) -> None:
        self.state = state

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Any:
        seq = GaugeMetricFamily("tg_plane_cell_relations_seq", "Relations sequence applied, per tenant cell",
                                labels=["cell"])
        tuples = GaugeMetricFamily("tg_plane_cell_relations_tuples", "Tuples held, per tenant cell", labels=["cell"])
        for cell, index in self.state.index.indexes.items():
            seq.add_metric([cell], index.applied_seq)
            tuples.add_metric([cell], index.count())
        yield seq
        yield tuples


class Plane:
    def __init__(self, config: PlaneConfig) -> None:
        self.config = config
        self.publisher = Publisher(config.nats or config.nats_url, connect_timeout=config.connect_timeout,
                                   request_timeout=config.request_timeout,
                                   relations_max_age=config.relations_max_age, replicas=config.stream_replicas,
                                   decisions_max_age=config.decisions_max_age,
                                   decisions_max_bytes=config.decisions_max_bytes,
                                   name=f"tenantguard-plane/{config.replica}")
        self.state = PlaneState(config.event_key, config.bundle_key, max_bundle_bytes=config.max_bundle_bytes,
                                cells=config.cells)
        self.state.publisher = self.publisher
        self.admission = SchemaAdmission(self.state)
        self.metrics = PlaneMetrics()
        self.audit = AuditLog(config.audit_kept, config.replica)
        self.decisions = DecisionStore(self.publisher, config.decisions_kept)
        self.explainer = Explainer(self.state, self.publisher, self.decisions)
        self._decisions_sub: Any = None
        p, s = self.publisher, self.state
        self.followers = {
            # every cell's subject in one ordered consumer (Follower tracks each subject's position)
            "relations": Follower(p, topo.STREAM_RELATIONS, topo.SUBJECT_RELATIONS_ALL, s.apply_relations),
            "trust": Follower(p, topo.STREAM_TRUST, topo.SUBJECT_TRUST, s.apply_trust),
            "revocations": Follower(p, topo.STREAM_REVOCATIONS, topo.SUBJECT_REVOCATIONS, s.apply_revocation),
            # one consumer for the whole stream (announces and shadows), so it is never "behind" a message
            # of the other kind that it would not be delivered
            "bundles": Follower(p, topo.STREAM_BUNDLES, f"{topo.SUBJECT_ROOT}.>", self._apply_bundles_stream),
            "snapshots": Follower(p, topo.STREAM_SNAPSHOTS, topo.SUBJECT_SNAPSHOTS_ALL, s.apply_snapshot),
            "rollouts": Follower(p, topo.STREAM_ROLLOUTS, topo.SUBJECT_ROLLOUT, s.apply_rollout),
        }
        timeout = config.request_timeout * 2
        self.writers = {
            "trust": SequencedWriter(p, self.followers["trust"], topo.SUBJECT_TRUST, timeout=timeout, compact=True),
            "revocations": SequencedWriter(p, self.followers["revocations"], topo.SUBJECT_REVOCATIONS,
                                           timeout=timeout),
            "rollouts": SequencedWriter(p, self.followers["rollouts"], topo.SUBJECT_ROLLOUT, timeout=timeout,
                                        compact=True),
        }
        self._committers: dict[str, GroupCommitter] = {}  # one group committer per relations cell subject
        self._bundle_writers: dict[str, SequencedWriter] = {}
        self._cell_writers: dict[str, SequencedWriter] = {}  # relations:<cell> and snapshots:<cell>, made on first use
        self.fleet = FleetView()
        self.bundles = BundleService(
            s, p, config.event_key, config.bundle_key, self._bundle_writer, rollout_writer=self.writers["rollouts"],
            sample=lambda: self.decisions.records, shadow_writer_for=self._shadow_writer,
            gate=ImpactGate(config.impact_gate, config.impact_max_undeclared, config.impact_sample))
        self.snapshotter = Snapshotter(s, p, self.followers["relations"], self.snapshot_writer,
                                       config.event_key, self.metrics, every=config.snapshot_every,
                                       seconds=config.snapshot_seconds)
        self.heartbeat = Heartbeat(s, p, config.event_key, config.replica, config.heartbeat_seconds)
        self.purge = ExpiredPurge(lambda: s.index.indexes, self.commit_purge, seconds=config.purge_seconds,
                                  grace=config.purge_grace, ready=lambda: self.ready)
        self.bootstrapped = False
        self.lagging: dict[str, float] = {}  # follower -> seconds behind its stream (watchdog)
        self.jetstream_heard_at = time.monotonic()  # the relations stream's leader last answered (probe)
        self.cut_off = False  # no answer for CUT_OFF_AFTER: see _watch_jetstream
        self._stopping = False
        self.heartbeat.withheld = lambda: self.cut_off
        self.started_at = time.time()
        # writes the hot doors answered, and those they handed to the framework (policy_plane.api.hot)
        self.write_doors = {"answered": 0, "to_framework": 0}
        self._tasks: list[asyncio.Task[None]] = []
        self._register_metrics()

    async def _apply_bundles_stream(self, subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
        if subject.startswith(topo.SUBJECT_SHADOWS_PREFIX + "."):
            await self.state.apply_shadow(subject, stream_seq, data, headers)
        else:
            await self.state.apply_bundle(subject, stream_seq, data, headers)

    def relations_writer(self, cell: str) -> SequencedWriter:
        """The sequenced writer of ``tg.relations.changes.<cell>`` (one cell, one sequence)."""
        key = f"relations:{cell}"
        if key not in self._cell_writers:
            self._cell_writers[key] = SequencedWriter(self.publisher, self.followers["relations"],
                                                      topo.relations_subject(cell),
                                                      timeout=self.config.request_timeout * 2,
                                                      seal=self.state.batch_seal.headers)
        return self._cell_writers[key]

    def snapshot_writer(self, cell: str) -> SequencedWriter:
        """The sequenced, compacting writer of ``tg.snapshots.relations.<cell>`` (newest wins per cell)."""
        key = f"snapshots:{cell}"
        if key not in self._cell_writers:
            self._cell_writers[key] = SequencedWriter(self.publisher, self.followers["snapshots"],
                                                      topo.snapshot_subject(cell),
                                                      timeout=self.config.request_timeout * 2, compact=True)
        return self._cell_writers[key]

    def cell_of_changes(self, changes: list[RelationChange]) -> str:
        """The one cell every change's tenant belongs to; :class:`CellsMixed` (422) otherwise."""
        cells = sorted({self.state.index.cell(c.rel.tenant) for c in changes}, key=lambda c: int(c[1:]))
        if len(cells) > 1:
            raise CellsMixed(f"a batch must touch tenants of one cell (one consistency token); this one touches "
                             f"cells {', '.join(cells[:8])}: split it per cell", cells=cells[:64])
        return cells[0] if cells else topo.DEFAULT_CELL

    def _shadow_writer(self, scope: str) -> SequencedWriter:
        key = f"shadow:{scope}"
        if key not in self._bundle_writers:
            self._bundle_writers[key] = SequencedWriter(
                self.publisher, self.followers["bundles"], topo.shadow_subject(scope),
                timeout=self.config.request_timeout * 2, compact=True)
        return self._bundle_writers[key]

    def _bundle_writer(self, scope: str) -> SequencedWriter:
        if scope not in self._bundle_writers:
            self._bundle_writers[scope] = SequencedWriter(
                self.publisher, self.followers["bundles"], topo.bundle_subject(scope),
                timeout=self.config.request_timeout * 2, compact=True)
        return self._bundle_writers[scope]

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        await self.publisher.connect()
        await self.publisher.ensure_topology()
        await carry_legacy_relations(self.publisher, self.config.event_key, self.state.event_trust, self.config.cells)
        resume_at = await self.state.bootstrap_relations(self.publisher)
        # Read back from the start of the idempotency window too (keys only: the index skips
        # batches the snapshot holds), so a retry of a write committed before the snapshot replays.
        window = await self.publisher.first_seq_since(topo.STREAM_RELATIONS, topo.SUBJECT_RELATIONS_ALL,
                                                      time.time() - self.state.keys.seconds - CLOCK_SLACK)
        resume_at = min(resume_at, window) if window is not None else resume_at
        for name, follower in self.followers.items():
            await follower.start(resume_at if name == "relations" else 1)
        # Decision records: this replica's recent window, read from the stream (so it survives restarts).
        self._decisions_sub = await self.publisher.follow(topo.STREAM_DECISIONS, topo.SUBJECT_DECISIONS_ALL,
                                                          self.decisions.on_message,
                                                          start_seq=await self.decisions.start_seq())
        await self.publisher.subscribe_core(f"{topo.SUBJECT_STATUS_PREFIX}.*", self._on_status)
        for follower in self.followers.values():  # consume what is stored before answering anything
            await follower.wait_for(await follower.stored_last(), self.config.bootstrap_timeout)
        self.state.check_replayed()
        self.bootstrapped = True
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self.snapshotter.run_forever(), name="plane-snapshots"),
                       loop.create_task(self.heartbeat.run_forever(), name="plane-heartbeat"),
                       loop.create_task(self._watch_followers(), name="plane-follower-watchdog"),
                       loop.create_task(self._watch_jetstream(), name="plane-jetstream-watch"),
                       loop.create_task(self._reconcile_rollouts(), name="plane-rollout-reconciler")]
        if self.config.purge_seconds:
            self._tasks.append(loop.create_task(self.purge.run_forever(), name="plane-expired-purge"))
        log.info("plane replica %s ready: relations seq %d", self.config.replica, self.state.index.applied_seq)

    async def stop(self) -> None:
        self._stopping = True
        for committer in self._committers.values():
            await committer.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for follower in self.followers.values():
            await follower.stop()
        if self._decisions_sub is not None:
            with contextlib.suppress(Exception):
                await self._decisions_sub.unsubscribe()
        await self.publisher.close()

    async def _watch_followers(self) -> None:
        """Once a second: a follower behind its stream without progress is restarted after
        ``STALL_RESTART`` (nats-py's own reset can lag behind a lost node), and the replica
        reports not ready while any follower lags longer than ``LAG_NOT_READY``: its reads
        would be stale and its writes would wait on the read-back."""
        while True:
            await asyncio.sleep(WATCH_INTERVAL)
            now = time.monotonic()
            lagging: dict[str, float] = {}
            for name, follower in self.followers.items():
                try:
                    behind = follower.observe(await follower.stored_last(patience=0.0), now)
                except TenantGuardError:
                    continue  # NATS away or in a handover: readiness says so, the next pass looks again
                if behind > STALL_RESTART and now - follower.progressed_at > STALL_RESTART:
                    log.warning("follower %s stalled %.1f s behind its stream; restarting it", name, behind)
                    with contextlib.suppress(TenantGuardError):
                        await follower.restart()
                if behind > LAG_NOT_READY:
                    lagging[name] = round(behind, 1)
            self.lagging = lagging

    async def _watch_jetstream(self) -> None:
        """Every ``PROBE_EVERY``, ask the relations stream's leader whether it hears from a quorum of
        its replicas (:meth:`Publisher.quorum_answers`); no such answer for ``CUT_OFF_AFTER`` and the
        replica is cut off: not ready, and its heartbeats withheld.

        Why: a replica attached to a node that is cut from the other nodes (a minority) stays
        connected and sees nothing wrong but timeouts. Its writes are never acknowledged (JetStream
        needs a quorum), yet its heartbeats, signed and unexpired, kept telling the sidecars on that
        node that their state was current, so they confirmed high-risk actions on stale relations.
        Withheld, the last heartbeat expires and those sidecars refuse high-risk actions. Writes are
        not refused here: during an ordinary stream-leader election the probe goes unanswered too,
        and a write waits for the new leader (writer.py) rather than being refused."""
        self.jetstream_heard_at = time.monotonic()  # the bootstrap just read the streams
        while not self._stopping:
            try:
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow the task's own
                # cancellation when the answer lands at the same moment, and this loop then outlived
                # stop() (a teardown hung in tests/plane/test_lag_scope.py, 1 run in 3)
                async with asyncio.timeout(PROBE_TIMEOUT):
                    answered = await self.publisher.quorum_answers(topo.STREAM_RELATIONS)
                if answered:
                    self.jetstream_heard_at = time.monotonic()
            except (TenantGuardError, TimeoutError):
                pass
            cut = time.monotonic() - self.jetstream_heard_at > CUT_OFF_AFTER
            if cut != self.cut_off:
                if cut:
                    log.warning("no answer from JetStream for %.0f s: cut off; heartbeats withheld, not ready",
                                CUT_OFF_AFTER)
                else:
                    log.info("JetStream answers again; heartbeats resume")
                self.cut_off = cut
            await asyncio.sleep(PROBE_EVERY)

    async def _reconcile_rollouts(self) -> None:
        """Every ``rollout_reconcile_seconds`` (jittered, so replicas rarely look at once): announce the
        current rollout's bundle to the reached scopes that lack it (:meth:`BundleService.reconcile_rollout`).
        Only on a ready replica: a lagging one would judge from a stale state."""
        interval = self.config.rollout_reconcile_seconds
        while True:
            if self.ready:
                try:
                    outcomes = await self.bundles.reconcile_rollout()
                except Exception:  # a bug here must not end the repair loop: say so, try again next round
                    log.exception("rollout reconciler pass failed")
                    outcomes = []
                for _scope, outcome in outcomes:
                    self.metrics.rollout_reconciled.labels(outcome).inc()
            await asyncio.sleep(interval * (0.8 + secrets.randbelow(401) / 1000))

    async def _on_status(self, msg: Msg) -> None:
        """A sidecar's report (``tg.status.<service>``): the service is the subject's, never the body's."""
        self.fleet.receive(msg.subject.rsplit(".", 1)[-1], msg.data)

    @property
    def ready(self) -> bool:
        return (self.bootstrapped and self.publisher.connected and self.state.relations_broken is None
                and not self.lagging and not self.cut_off)

    def require_ready(self, *needs: str) -> None:
        """Refuse (503, retryable) what this replica cannot do now. ``needs``: the followers the
        caller depends on (all when none is named): a relations write is not refused because the
        bundles or trust follower lags (one follower being re-created after a node's recovery
        made every write answer ``plane_not_ready``)."""
        if not self.bootstrapped:
            raise NotReady("the plane is still rebuilding its state from JetStream")
        if self.state.relations_broken is not None:
            raise NotReady(f"relations state is inconsistent: {self.state.relations_broken}")
        if not self.publisher.connected and not self.publisher.moving:
            raise Unavailable("not connected to NATS")
        lagging = {name: behind for name, behind in self.lagging.items() if not needs or name in needs}
        if lagging:
            raise NotReady(f"this replica lags behind JetStream ({', '.join(sorted(lagging))}); "
                           "another replica can take the write", lagging=lagging)

    # ------------------------------------------------------------------ writes

    async def write_relations(self, changes: list[RelationChange], *, idempotency_key: str | None = None) -> Written:
        """Commit ``changes`` (tenants of one cell) atomically, in order, sharing a batch with
        concurrent writes to that cell (:mod:`.groupcommit`); the batch's sequence is the
        consistency token: the relations sequence of that cell.

        Every write is first checked against the active schema (:mod:`.admission`): one the
        schema does not admit refuses the whole batch (422 ``tuple_not_allowed``), before anything
        is published. With ``idempotency_key``, a retry of a write that was committed before (an
        ambiguous outcome: a timeout, a lost connection) returns that first write's
        sequence and publishes nothing, at any replica; the same key with other changes is refused.
        A key is scoped to the tenants the changes touch (:func:`~.idempotency.key_hash`).
        """
        self.require_ready("relations")
        cell = self.cell_of_changes(changes)
        key = _checked_key(idempotency_key)
        tenants = {c.rel.tenant for c in changes}
        hashed, legacy = (key_hash(key, tenants), legacy_key_hash(key)) if key else (None, None)
        if not self._key_committed(hashed, legacy):  # a retry gets its first outcome, whatever the schema says now
            await self.admission.check(changes)
        written = await self.relations_committer(cell).submit(
            changes, key=hashed, digest=changes_digest(changes) if key else None, legacy=legacy)
        if not written.replayed:
            self.metrics.relation_changes.inc(len(changes))
        return Written(written.seq, written.replayed, written.applied, written.payload, cell)

    def _key_committed(self, hashed: str | None, legacy: str | None) -> bool:
        """Whether a write with this key was committed (the group committer answers it from the window)."""
        window = self.state.keys
        return any(k is not None and window.lookup(k) is not None for k in (hashed, legacy))

    def relations_committer(self, cell: str) -> GroupCommitter:
        """The group committer of ``cell``'s subject (made on first use)."""
        committer = self._committers.get(cell)
        if committer is None:
            committer = self._committers[cell] = GroupCommitter(
                self.relations_writer(cell), functools.partial(self._sign_relations, cell), self.state.keys,
                coalesce=self.config.group_commit)
        return committer

    def _committed(self, counter: str) -> int:
        """A group-commit counter summed over the cells' committers."""
        return sum(getattr(c, counter) for c in self._committers.values())

    def _sign_relations(self, cell: str, members: Sequence[Member]) -> tuple[int, bytes]:
        """The next batch of ``cell`` holding ``members``' changes in order, and their keys."""
        keys = tuple((m.key, m.digest) for m in members if m.key is not None and m.digest is not None)
        return self._signed_relations(cell, tuple(c for m in members for c in m.changes), keys)

    def _signed_relations(self, cell: str, changes: tuple[RelationChange, ...],
                          keys: tuple[tuple[str, str], ...] = ()) -> tuple[int, bytes]:
        """The next batch of ``cell`` holding ``changes``, signed; the state applies it from here
        when it comes back (:class:`~.state.OwnBatch`)."""
        seq = self.state.index.index(cell).applied_seq + 1
        batch = ChangeBatch(seq, changes)
        now = time.time()
        data = sign_batch(self.config.event_key, batch, cell=cell, keys=keys, now=now)
        self.state.expect_own(topo.relations_subject(cell), OwnBatch(data, batch, keys, int(now * 1000) / 1000))
        return seq, data

    async def commit_purge(self, cell: str, choose: Callable[[], list[RelationChange]]) -> int:
        """Publish one batch of the deletes ``choose`` picks (inside the writer's build, on the state
        the batch lands on: :mod:`.purge`); how many, 0 when it picked none (nothing published)."""
        self.require_ready("relations")
        chosen: list[int] = []

        def build() -> bytes:
            changes = choose()
            if not changes:
                raise _NoChange
            chosen.append(len(changes))
            return self._signed_relations(cell, tuple(changes))[1]

        try:
            await self.relations_writer(cell).commit(build)
        except _NoChange:
            return 0
        self.metrics.relation_changes.inc(chosen[-1])
        return chosen[-1]

    async def change_trust(self, change: Callable[[TrustSet], list[TrustedKey]]) -> tuple[int, bool]:
        """Apply ``change`` to the current trust set and publish the result; ``(seq, changed)``."""
        self.require_ready("trust")

        def build() -> bytes:
            new = jwks_of(change(self.state.trust))
            if new == self.state.trust.to_jwks():
                raise _NoChange
            return sign_event(self.config.event_key, TRUST_UPDATE, {"jwks": new}, self.state.trust_seq + 1)

        chosen: list[int] = []

        def build_seq() -> bytes:
            data = build()
            chosen.append(self.state.trust_seq + 1)
            return data

        try:
            await self.writers["trust"].commit(build_seq)
        except _NoChange:
            return self.state.trust_seq, False
        return chosen[-1], True

    async def revoke(self, payload: dict[str, Any], *, idempotency_key: str | None = None,
                     stated: dict[str, Any] | None = None) -> Written:
        """Publish one revocation; its sequence. ``stated`` (what the request said) is what a
        retry with the same ``idempotency_key`` must repeat, exactly, to get the first outcome back.

        With a key, the signed payload carries the digest of what was stated
        (:func:`~.revocations.request_digest`): a retry that leaves out a member the first
        request stated (``issued_before``, say) differs from it as much as one that adds one,
        and both are 422 ``idempotency_key_reused``.
        """
        self.require_ready("revocations")
        key = _checked_key(idempotency_key)
        said = stated if stated is not None else payload
        if key is not None:
            payload = {**payload, REQUEST_DIGEST: request_digest(said)}
        chosen: list[int] = []

        def build() -> bytes:
            chosen.append(self.state.revocations_seq + 1)
            return sign_event(self.config.event_key, REVOCATION, payload, chosen[-1])

        commit = await self.writers["revocations"].commit(build, msg_id=None if key is None else revocation_msg_id(key))
        if commit.duplicate:
            stored = await self.publisher.stored(topo.STREAM_REVOCATIONS, commit.stream_seq)
            event = verify_event(stored.data, self.state.event_trust, expected_type=REVOCATION)
            if not same_request(event.payload, said):
                raise IdempotencyKeyReused("this Idempotency-Key was used for another revocation", seq=event.seq)
            return Written(event.seq, replayed=True, applied=commit.applied, payload=event.payload)
        return Written(chosen[-1], applied=commit.applied, payload=payload)

    async def wait_relations(self, at_least: int, timeout: float, tenant: str | None = None) -> None:
        """Wait (bounded) until the cell of ``tenant`` has applied ``at_least`` (a consistency token is
        a cell's sequence; no tenant: every cell); a later read sees it."""
        follower = self.followers["relations"]

        def applied() -> int:
            return self.state.index.seq_of(tenant) or 0

        if applied() >= at_least:
            return
        deadline = time.monotonic() + timeout
        while applied() < at_least:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Unavailable(f"relations at {applied()}, not yet at {at_least}",
                                  consistency_token=applied())
            with contextlib.suppress(Unavailable):
                await follower.wait_for(follower.last_stream_seq + 1, min(remaining, 0.25))

    # ------------------------------------------------------------------ reporting

    def status(self) -> dict[str, Any]:
        s = self.state
        return {
            "replica": self.config.replica,
            "ready": self.ready,
            "lagging": dict(self.lagging),
            "cut_off": self.cut_off,
            "jetstream_silent_seconds": round(time.monotonic() - self.jetstream_heard_at, 3),
            "follower_restarts": {name: f.restarts for name, f in self.followers.items() if f.restarts},
            "uptime_seconds": round(time.time() - self.started_at, 3),
            "nats": {"connected": self.publisher.connected, "disconnects": self.publisher.disconnects,
                     "lame_duck_moves": self.publisher.lame_duck_moves,
                     "server": self.publisher.server, **self.publisher.connection.redacted()},
            "relations": {"seq": s.index.applied_seq, "count": s.index.count(),
                          "stream_seq": self.followers["relations"].last_stream_seq, "broken": s.relations_broken,
                          "cells": s.cells},
            "cells": {cell: {"seq": index.applied_seq, "count": index.count(),
                             "snapshot_seq": s.snapshots[cell].seq if cell in s.snapshots else None}
                      for cell, index in s.index.indexes.items()},
            "snapshot": {"seq": s.snapshot.seq, "count": s.snapshot.count, "size": s.snapshot.size}
            if s.snapshot else None,
            "trust": {"seq": s.trust_seq, "keys": len(s.trust)},
            "revocations": {"seq": s.revocations_seq, "count": len(s.revocations)},
            "bundles": {scope: a.to_wire() for scope, a in sorted(s.announces.items())},
            "rejected_events": {f"{stream}:{code}": n for (stream, code), n in sorted(s.rejected.items())},
            "group_commit": {"on": self.config.group_commit, "batches": self._committed("batches"),
                             "writes": self._committed("members"), "waiting": self._committed("waiting"),
                             "keys": len(s.keys)},
            "fast_writes": {"on": self.config.fast_writes, **self.write_doors},
            "conflicts": {name: w.conflicts for name, w in self.writers.items()}
            | {"relations": sum(w.conflicts for k, w in self._cell_writers.items() if k.startswith("relations:"))}
            | {f"bundles:{k}": w.conflicts for k, w in self._bundle_writers.items()},
            "longest_conflict_streak": self._longest_conflict_streak(),
            "republished": sum(w.republished for w in self._all_writers()),
            "decisions": self.decisions.stats(),
            "rollout": s.rollout.to_wire() if s.rollout else None,
            "rollout_reconcile": self.bundles.reconciled.to_wire(),
            "shadows": {scope: shadow for scope, shadow in sorted(s.shadows.items()) if not shadow.get("stop")},
            "fleet": self.fleet.summary(),
            "heartbeats_sent": self.heartbeat.sent,
            "secrets": self._secret_files(),
        }

    def _secret_files(self) -> dict[str, dict[str, Any]]:
        """Each secret file's changes taken since start and why its last change was not (rotation)."""
        checkers = {"admin": self.config.admin, "operator": self.config.operator,
                    **{f"join:{service}": c for service, c in self.config.join_secrets.items()}}
        return {name: {"generation": c.generation, "reload_error": c.reload_error}
                for name, c in checkers.items() if c is not None}

    def _all_writers(self) -> list[SequencedWriter]:
        return [*self.writers.values(), *self._cell_writers.values(), *self._bundle_writers.values()]

    def _longest_conflict_streak(self) -> int:
        return max((w.streak for w in self._all_writers()), default=0)

    def _register_metrics(self) -> None:
        s = self.state
        self.metrics.registry.register(ServerInfoCollector(lambda: self.publisher.server))
        self.metrics.registry.register(_CellsCollector(s))
        self.metrics.read_from(
            gauges={
                "tg_plane_relations_seq": ("Relations sequence applied", lambda: s.index.applied_seq),
                "tg_plane_relations_tuples": ("Tuples in the index", lambda: s.index.count()),
                "tg_plane_snapshot_seq": ("Latest snapshot sequence", lambda: s.snapshot.seq if s.snapshot else 0),
                "tg_plane_trust_seq": ("Trust set sequence", lambda: s.trust_seq),
                "tg_plane_revocations_seq": ("Revocations sequence", lambda: s.revocations_seq),
                "tg_plane_ready": ("1 when ready", lambda: 1.0 if self.ready else 0.0),
                "tg_plane_nats_connected": ("1 when connected to NATS", lambda: 1.0 if self.publisher.connected
                                            else 0.0),
                "tg_plane_write_conflict_streak": ("Most expected-sequence races one write lost in a row, since "
                                                   "start (retried until the write timeout)",
                                                   self._longest_conflict_streak),
            },
            counters={
                "tg_plane_relation_batches": ("Relation batches committed by this replica",
                                              lambda: self._committed("batches")),
                "tg_plane_relation_writes": ("Relation write requests committed by this replica (several share "
                                             "a batch under load)", lambda: self._committed("members")),
                "tg_plane_expired_purged": ("Expired tuples this replica deleted (purge_seconds, purge_grace)",
                                            lambda: self.purge.purged),
                "tg_plane_events_rejected": ("Stream messages that did not verify", lambda: sum(s.rejected.values())),
                "tg_plane_write_conflicts": ("Expected-sequence conflicts with other replicas",
                                             lambda: sum(w.conflicts for w in [*self.writers.values(),
                                                                               *self._cell_writers.values()])),
                "tg_plane_decisions_received": ("Decision records received", lambda: self.decisions.received),
                "tg_plane_decisions_malformed": ("Decision messages that were no record batch",
                                                 lambda: self.decisions.malformed),
                "tg_plane_decisions_refused": ("Decision records refused (malformed, another service or tenant "
                                               "than their subject)", lambda: sum(self.decisions.refused.values())),
            },
        )
