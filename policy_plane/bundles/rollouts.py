"""Staged rollouts: the state committed first (``TG_ROLLOUTS``), then the stage announced; and the
reconciler every replica runs, which announces the current rollout's bundle to reached scopes that
lack it, so a failed announce converges without an operator."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections import deque
from typing import Any, Final

from tenantguard.bundle import Bundle, order_key, verify_bundle
from tenantguard.errors import BundleRollback, TenantGuardError, Unavailable
from tenantguard.feed import topology as topo
from tenantguard.feed.events import sign_event
from tenantguard.rollout import (
    ROLLOUT_STATE,
    RollbackTargetMissing,
    RolloutConflict,
    RolloutNotFound,
    RolloutState,
)
from tenantguard.rollout.plan import ABORTED, COMPLETED

from ..writer import SequencedWriter
from .core import BundleCore

RECONCILED_KEPT: Final = 20  # announces the reconciler made, kept for /v1/status and GET /v1/rollouts
log = logging.getLogger(__name__)


class Reconciled:
    """What this replica's rollout reconciler did (``/v1/status`` and ``GET /v1/rollouts``: ``reconcile``).

    ``left`` remembers, per scope, the announce the reconciler decided to leave alone (a newer
    bundle holds the scope, or it already runs the same content): the scope is looked at again
    only when its announce changes, so a superseded scope costs nothing and is logged once.
    """

    def __init__(self) -> None:
        self.rounds = 0
        self.rollout: str | None = None
        self.announced: deque[dict[str, Any]] = deque(maxlen=RECONCILED_KEPT)
        self.pending: dict[str, int] = {}  # scope -> its announce seq when last found lacking
        self.left: dict[str, dict[str, Any]] = {}  # scope -> {seq, reason, revision}
        self.failing: dict[str, dict[str, Any]] = {}  # scope -> {code, message, since_ms}

    def follow(self, rollout: str) -> None:
        """Forget what was decided for another rollout."""
        if rollout != self.rollout:
            self.rollout = rollout
            self.pending.clear()
            self.left.clear()
            self.failing.clear()

    def to_wire(self) -> dict[str, Any]:
        return {"rounds": self.rounds, "rollout": self.rollout, "pending": sorted(self.pending),
                "announced": list(self.announced),
                "left": {scope: dict(v) for scope, v in sorted(self.left.items())},
                "failing": {scope: dict(v) for scope, v in sorted(self.failing.items())}}



class Rollouts(BundleCore):
    """Staged rollouts and their reconciler (a mixin of :class:`~policy_plane.bundles.service.BundleService`)."""

    reconciled: Reconciled
    _rollout_writer: SequencedWriter | None

    async def _start_rollout(self, archive: bytes, bundle: Bundle, stages: tuple[tuple[str, ...], ...],
                             actor: str) -> RolloutState:
        if self._rollout_writer is None:
            raise Unavailable("staged rollouts are not available on this replica")
        current = self.state.rollout
        if current is not None and current.open:
            raise RolloutConflict(f"rollout {current.id} is {current.status}; finish it (`tenantguard bundle rollout "
                                  f"advance {current.id}` to its last stage) or abort it (`tenantguard bundle rollout "
                                  f"abort {current.id}`) first", rollout=current.id)
        name = f"rollouts/{bundle.revision}.{order_key(bundle.manifest)}"
        await self.publisher.put_object(topo.BUCKET_BUNDLES, name, archive)
        state = RolloutState.start(bundle, sha256=hashlib.sha256(archive).hexdigest(), size=len(archive),
                                   object=name, stages=stages, actor=actor)
        if len(stages) == 1:
            state = dataclasses.replace(state, status=COMPLETED)

        def build() -> bytes:
            latest = self.state.rollout
            if latest is not None and latest.open:
                raise RolloutConflict(f"rollout {latest.id} started meanwhile", rollout=latest.id)
            return sign_event(self.event_key, ROLLOUT_STATE, state.to_wire(), self.state.rollout_seq + 1)

        await self._rollout_writer.commit(build)
        return state

    async def rollout_step(self, rollout_id: str, action: str, actor: str) -> dict[str, Any]:
        """``advance``, ``halt``, ``resume`` or ``abort`` the current rollout; the new state is
        committed first, so a halted rollout can never advance, then the next stage is announced."""
        current = self.state.rollout
        if current is None or current.id != rollout_id:
            raise RolloutNotFound(f"no rollout {rollout_id!r}")
        if self._rollout_writer is None:
            raise Unavailable("staged rollouts are not available on this replica")
        step = {"advance": RolloutState.advance, "halt": RolloutState.halt, "resume": RolloutState.resume,
                "abort": RolloutState.abort}[action]
        step(current, actor)  # refuse at once when the step does not apply
        archive = bundle = None
        if action == "advance":
            archive, bundle = await self._rollout_archive(current)
        chosen: list[RolloutState] = []

        def build() -> bytes:
            latest = self.state.rollout
            if latest is None or latest.id != rollout_id:
                raise RolloutNotFound(f"no rollout {rollout_id!r}")
            chosen.append(step(latest, actor))
            return sign_event(self.event_key, ROLLOUT_STATE, chosen[-1].to_wire(), self.state.rollout_seq + 1)

        await self._rollout_writer.commit(build)
        state = chosen[-1]
        answer: dict[str, Any] = {"rollout": state.to_wire(), "scopes": []}
        if archive is not None and bundle is not None:
            answer["scopes"] = await self._announce_stage(state, archive, bundle)
        return answer

    async def _rollout_archive(self, rollout: RolloutState) -> tuple[bytes, Bundle]:
        """The rollout's archive (``rollouts/<id>`` in ``tg-bundles``), checked against its digest and key."""
        archive = await self.publisher.get_object(topo.BUCKET_BUNDLES, rollout.object,
                                                  max_bytes=self.state.max_bundle_bytes)
        if hashlib.sha256(archive).hexdigest() != rollout.sha256:
            raise RollbackTargetMissing(f"rollout archive {rollout.object} was replaced")
        return archive, verify_bundle(archive, self.state.bundle_verifier, limits=self.state.bundle_limits)

    async def _announce_stage(self, rollout: RolloutState, archive: bytes, bundle: Bundle) -> list[dict[str, Any]]:
        """Announce the scopes of the stage ``rollout`` (committed) has just reached.

        The state is committed already, so a scope whose announce fails is not an error of the
        request: its entry carries ``error`` (``code``, ``message``, ``will_retry``) and the
        reconciler (:meth:`reconcile_rollout`) announces it later, unless a newer bundle holds the
        scope (``bundle_rollback``: ``will_retry`` false, the scope is left as it is).
        """
        out: list[dict[str, Any]] = []
        for scope in rollout.stages[rollout.stage]:
            try:
                out.append(await self._publish_scope(scope, archive, bundle, [scope]))
            except TenantGuardError as exc:
                will_retry = not isinstance(exc, BundleRollback)
                log.warning("rollout %s: announcing scope %s failed after the state was committed (%s)%s",
                            rollout.id, scope, exc, "; the reconciler will retry" if will_retry else "")
                out.append({"scope": scope, "error": {"code": exc.code, "message": exc.message,
                                                      "will_retry": will_retry}})
        return out

    async def reconcile_rollout(self) -> list[tuple[str, str]]:
        """One pass: announce the current rollout's bundle to every reached scope that lacks it.

        A rollout commits its state before it announces, so an announce that failed (a NATS
        blip, a replica killed between the two steps) leaves a reached scope without the
        bundle. Every replica runs this periodically; it is a dictionary walk when nothing is
        missing (the archive is fetched only for a scope that needs it). A scope is announced
        through :meth:`_publish_scope`, whose ordering check refuses to move it backwards: a
        scope that a newer bundle holds (a later publish, a rollback) is left alone, logged
        once. A scope is announced once it was found lacking on two passes in a row, so a step
        whose announces are under way (on any replica) is not raced; two replicas at once still
        announce a scope once: the second one's commit conflicts, catches up and finds the scope
        unchanged. An ``aborted`` rollout is not reconciled.

        Returns ``(scope, outcome)`` for every scope acted on: ``announced``, ``superseded``
        (left alone) or ``failed`` (tried again next pass).
        """
        self.reconciled.rounds += 1
        rollout = self.state.rollout
        if rollout is None or self._rollout_writer is None:
            return []
        self.reconciled.follow(rollout.id)
        if rollout.status == ABORTED:
            self.reconciled.pending.clear()
            return []
        lacking = {scope: self._announce_seq(scope) for scope in rollout.reached if self._lacks(scope, rollout)}
        # only what lacked the bundle on the previous pass too: a step announcing right now is not raced
        todo = [scope for scope, seq in lacking.items() if self.reconciled.pending.get(scope) == seq]
        self.reconciled.pending = lacking
        if not todo:
            return []
        try:
            archive, bundle = await self._rollout_archive(rollout)
        except TenantGuardError as exc:
            for scope in todo:
                self._failing(rollout, scope, exc)
            return [(scope, "failed") for scope in todo]
        outcomes: list[tuple[str, str]] = []
        for scope in todo:
            try:
                result = await self._publish_scope(scope, archive, bundle, [scope])
            except BundleRollback as exc:
                self.reconciled.pending.pop(scope, None)
                self._leave(rollout, scope, "superseded", exc.message)
                outcomes.append((scope, "superseded"))
            except TenantGuardError as exc:  # still pending: tried again next pass
                self._failing(rollout, scope, exc)
                outcomes.append((scope, "failed"))
            else:
                self.reconciled.pending.pop(scope, None)
                self.reconciled.failing.pop(scope, None)
                if result["unchanged"]:  # another replica announced it meanwhile, or the same content runs
                    if result.get("sha256") != rollout.sha256:
                        self._leave(rollout, scope, "unchanged", "the scope runs the same content")
                    continue
                log.warning("rollout %s: scope %s lacked the rollout's bundle (an announce failed after the state "
                            "was committed); announced %s (seq %s)", rollout.id, scope, rollout.revision,
                            result.get("seq"))
                self.reconciled.announced.append({"rollout": rollout.id, "scope": scope, "revision": bundle.revision,
                                                  "seq": result.get("seq"), "at_ms": int(time.time() * 1000)})
                outcomes.append((scope, "announced"))
        return outcomes

    def _announce_seq(self, scope: str) -> int:
        announce = self.state.announces.get(scope)
        return announce.seq if announce is not None else 0

    def _lacks(self, scope: str, rollout: RolloutState) -> bool:
        """The scope's active announce is not the rollout's archive, and it was not left alone as it is."""
        announce = self.state.announces.get(scope)
        if announce is not None and announce.sha256 == rollout.sha256:
            self.reconciled.failing.pop(scope, None)
            return False
        left = self.reconciled.left.get(scope)
        return left is None or left["seq"] != self._announce_seq(scope)

    def _leave(self, rollout: RolloutState, scope: str, reason: str, why: str) -> None:
        announce = self.state.announces.get(scope)
        self.reconciled.failing.pop(scope, None)
        self.reconciled.left[scope] = {"seq": self._announce_seq(scope), "reason": reason,
                                       "revision": announce.revision if announce else None}
        log.info("rollout %s: scope %s is left at revision %s (%s): %s", rollout.id, scope,
                 announce.revision if announce else None, reason, why)

    def _failing(self, rollout: RolloutState, scope: str, exc: TenantGuardError) -> None:
        before = self.reconciled.failing.get(scope)
        if before is None or before["code"] != exc.code:
            log.warning("rollout %s: scope %s lacks the rollout's bundle and announcing it failed (%s); retrying",
                        rollout.id, scope, exc)
            self.reconciled.failing[scope] = {"code": exc.code, "message": exc.message,
                                              "since_ms": int(time.time() * 1000)}
