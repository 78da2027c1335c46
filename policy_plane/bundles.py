"""Publishing a policy bundle: verify or (compile, test, sign), order-check, store, announce.

* A signed upload must verify against the plane's bundle key (a bundle signed by
  anyone else never reaches a sidecar).
* Every upload is compiled and its Rego tests run (the publish gate); any failing test
  refuses it, naming the tests, unless the upload says ``skip_tests`` (the audit log and the
  answer record it). An unsigned upload (from an admin) is then signed with the bundle key.
* ``.manifest`` ``metadata.services`` (a list) picks the scopes the bundle is for;
  absent means ``all``. Each scope has its own :class:`BundleStore`, whose ordering
  rules refuse rollbacks (an older serial, or the same serial with other content).
* The bytes go to object ``bundles/<scope>/<revision>`` in ``tg-bundles`` first; only
  then is the signed ``bundle.announce`` published on ``tg.bundles.<scope>``, so a
  sidecar never hears of bytes that are not there yet.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from tenantguard.bundle import (
    SIGNATURES_FILE,
    Bundle,
    BundleStore,
    JwtSigner,
    order_key,
    read_archive,
    sign_bundle,
    verify_bundle,
)
from tenantguard.errors import (
    BundleMalformed,
    BundleRejected,
    BundleRollback,
    InvalidInput,
    PolicyError,
    ShadowNotFound,
    TenantGuardError,
    Unavailable,
)
from tenantguard.feed import topology as topo
from tenantguard.feed.events import BUNDLE_ANNOUNCE, sign_event
from tenantguard.identity.keys import SigningKey
from tenantguard.policy.engine import RegorusEngine
from tenantguard.policy.testrunner import run_tests
from tenantguard.relations import RelationIndex
from tenantguard.rollout import (
    ROLLOUT_STATE,
    ImpactAnalyzer,
    ImpactReport,
    ImpactUndeclared,
    ReplayRecord,
    RollbackTargetMissing,
    RolloutConflict,
    RolloutNotFound,
    RolloutState,
    manifest_expectations,
    next_serial,
    prepare_revision,
    restored_archive,
)
from tenantguard.rollout.plan import ABORTED, COMPLETED
from tenantguard.rollout.shadow import ShadowSettings

from .config import SERVICE_RE
from .errors import PolicyTestsFailed
from .publisher import Publisher
from .state import PlaneState
from .writer import SequencedWriter

REVISION_RE: Final = re.compile(r"[A-Za-z0-9._-]{1,128}")
IMPACT_MODES: Final = ("off", "report", "enforce")
IMPACT_GROUPS_SHOWN: Final = 50
RECONCILED_KEPT: Final = 20  # announces the reconciler made, kept for /v1/status and GET /v1/rollouts
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ImpactGate:
    """How a publish is checked against the plane's decision sample (docs/operations.md).

    ``mode``: ``off``, ``report`` (replay and answer the report) or ``enforce`` (also refuse,
    409 ``impact_undeclared_flips``, when undeclared flips exceed ``max_undeclared``).
    """

    mode: str = "off"
    max_undeclared: int = 0
    sample: int = 5000

    def stricter(self, mode: str | None, max_undeclared: int | None) -> ImpactGate:
        """A request may ask for more checking than the plane's setting, never for less."""
        if mode is not None and mode not in IMPACT_MODES:
            raise BundleMalformed(f"impact must be one of {', '.join(IMPACT_MODES)}")
        chosen = max(self.mode, mode or "off", key=IMPACT_MODES.index)
        if max_undeclared is None:
            limit = self.max_undeclared
        elif self.mode == "enforce":
            limit = min(self.max_undeclared, max_undeclared)  # a request may only tighten the plane's bound
        else:
            limit = max_undeclared
        return ImpactGate(chosen, max(0, limit), self.sample)


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


class _Unchanged(Exception):
    """The scope already runs exactly this content; nothing to announce."""


def bundle_scopes(bundle: Bundle) -> list[str]:
    services = bundle.manifest.metadata.get("services")
    if services is None:
        return [topo.BUNDLE_SCOPE_ALL]
    if not isinstance(services, list) or not services:
        raise BundleMalformed("manifest metadata.services must be a non-empty list of service names",
                              file=".manifest")
    for name in services:
        if not isinstance(name, str) or SERVICE_RE.fullmatch(name) is None or name == topo.BUNDLE_SCOPE_ALL:
            raise BundleMalformed(f"metadata.services entry {name!r:.60} is not a service name", file=".manifest")
    return sorted(set(services))


def within_declared(bundle: Bundle, scopes: list[str]) -> None:
    """A staged rollout reaches only scopes the bundle declares (``metadata.services``): stages
    name where and when, never a service the bundle was not written and reviewed for. A bundle
    that declares none is for every scope, ``all`` included."""
    declared = bundle_scopes(bundle)
    if declared == [topo.BUNDLE_SCOPE_ALL]:
        return
    outside = sorted(set(scopes) - set(declared))
    if outside:
        raise InvalidInput(f"stages name {', '.join(outside)}, which the bundle's metadata.services "
                           f"({', '.join(declared)}) does not declare; a staged rollout reaches only declared "
                           "services", field="stages", declared=declared, undeclared=outside)


def compile_and_test(bundle: Bundle, *, run: bool) -> int:
    """Compile (always) and run the Rego tests (when ``run``); return how many passed."""
    try:
        RegorusEngine().prepare(bundle.modules, bundle.data)
        if not run:
            return 0
        report = run_tests(bundle.modules, bundle.data)
    except PolicyError as exc:
        raise BundleRejected(f"bundle does not compile: {exc.message}", **exc.detail) from None
    failed = [r.full_name for r in report.results if r.outcome != "pass"]
    if failed:
        raise PolicyTestsFailed(f"{len(failed)} of {len(report.results)} Rego tests failed: {', '.join(failed[:20])}",
                                failed=failed[:100])
    return report.passed


class BundleService:
    def __init__(self, state: PlaneState, publisher: Publisher, event_key: SigningKey, bundle_key: SigningKey,
                 writer_for: Any, *, rollout_writer: SequencedWriter | None = None,
                 sample: Callable[[], Iterable[Mapping[str, Any]]] = tuple, gate: ImpactGate | None = None,
                 shadow_writer_for: Any = None) -> None:
        self.state = state
        self.publisher = publisher
        self.event_key = event_key
        self.signer = JwtSigner(bundle_key, issuer=topo.PLANE_ISSUER)
        self._writer_for = writer_for  # scope -> SequencedWriter
        self._rollout_writer = rollout_writer
        self._shadow_writer_for = shadow_writer_for  # scope -> SequencedWriter on tg.shadows.<scope>
        self._sample = sample  # the decision records kept by this replica (newest last)
        self.gate = gate or ImpactGate()
        self.reconciled = Reconciled()

    async def publish(self, archive: bytes, *, admin: bool, stages: tuple[tuple[str, ...], ...] | None = None,
                      impact: str | None = None, max_undeclared: int | None = None,
                      actor: str = "admin", skip_tests: bool = False) -> dict[str, Any]:
        """Publish to the bundle's scopes, or with ``stages`` start a staged rollout (stage 0 now).

        The bundle's Rego tests run first and any failure refuses it, unless ``skip_tests``
        (the answer's ``tests_skipped``, which the API writes to the audit log). With an impact
        gate (the plane's setting, made stricter by ``impact``), the plane's decision sample is
        replayed against the candidate next (see :meth:`impact`).
        """
        bundle, archive, signed_upload, passed = await self._accept(archive, admin=admin, skip_tests=skip_tests)
        scopes = [s for stage in stages for s in stage] if stages else bundle_scopes(bundle)
        if stages:
            within_declared(bundle, scopes)
        for scope in scopes:  # refuse before anything is stored
            try:
                self._check_order(scope, archive, bundle)
            except _Unchanged:
                continue
        gate = self.gate.stricter(impact, max_undeclared)
        report = await self.impact(bundle, scopes, gate) if gate.mode != "off" else None
        answer: dict[str, Any] = {"revision": bundle.revision, "serial": order_key(bundle.manifest),
                                  "signed_by": bundle.kid, "signed_by_plane": not signed_upload,
                                  "tests_passed": passed, "tests_skipped": skip_tests}
        if report is not None:
            answer["impact"] = report.to_wire(max_groups=IMPACT_GROUPS_SHOWN)
        if stages:
            rollout = await self._start_rollout(archive, bundle, stages, actor)
            answer["rollout"] = rollout.to_wire()
            answer["scopes"] = await self._announce_stage(rollout, archive, bundle)
            return answer
        answer["scopes"] = [await self._publish_scope(scope, archive, bundle, scopes) for scope in scopes]
        return answer

    async def _accept(self, archive: bytes, *, admin: bool,
                      skip_tests: bool = False) -> tuple[Bundle, bytes, bool, int]:
        """Verify (signed), compile, run the tests (unless ``skip_tests``) and sign (unsigned): the
        bundle, its archive as announced, whether it came signed, and how many tests passed."""
        files = read_archive(archive, self.state.bundle_limits)
        signed_upload = SIGNATURES_FILE in files
        if signed_upload:
            bundle = verify_bundle(archive, self.state.bundle_verifier, limits=self.state.bundle_limits)
        else:
            if not admin:
                raise BundleRejected("only an admin may upload an unsigned bundle for the plane to sign")
            bundle = verify_bundle(archive, None, require_signature=False, limits=self.state.bundle_limits)
        if REVISION_RE.fullmatch(bundle.revision) is None:
            raise BundleMalformed("manifest revision must be 1-128 characters of A-Z a-z 0-9 . _ -",
                                  file=".manifest")
        bundle_scopes(bundle)  # a malformed metadata.services is refused even for a staged rollout
        passed = await asyncio.to_thread(compile_and_test, bundle, run=not skip_tests)
        if not signed_upload:
            archive = sign_bundle(archive, self.signer, limits=self.state.bundle_limits)
            bundle = verify_bundle(archive, self.state.bundle_verifier, limits=self.state.bundle_limits)
        return bundle, archive, signed_upload, passed

    # ------------------------------------------------------------------ impact gate

    async def impact(self, bundle: Bundle, scopes: list[str], gate: ImpactGate) -> ImpactReport:
        """Replay this replica's decision sample against ``bundle``; refuse when ``gate`` enforces.

        The sample is the plane's in-memory decision ring (records of the services the
        scopes reach). Records carry no policy input today, so inputs are rebuilt from
        subject, action, resource and tenant, with relations from the plane's own index
        (its current state), and the baseline is each scope's active bundle evaluated on
        the same rebuilt input: a flip is the policy change alone.
        """
        records = self._sample_for(scopes, gate.sample)
        index = self.state.index
        report = await asyncio.to_thread(self._replay, bundle, scopes, records, index)
        if gate.mode == "enforce" and not report.ok(gate.max_undeclared):
            raise ImpactUndeclared(f"the candidate flips {report.undeclared} recorded decisions nobody declared "
                                   f"(at most {gate.max_undeclared} allowed); declare them in "
                                   "metadata.expected_flips or fix the policy",
                                   report=report.to_wire(max_groups=IMPACT_GROUPS_SHOWN))
        return report

    def _sample_for(self, scopes: list[str], limit: int) -> list[ReplayRecord]:
        reach_all = topo.BUNDLE_SCOPE_ALL in scopes
        out: list[ReplayRecord] = []
        for raw in reversed(list(self._sample())):
            if len(out) >= limit:
                break
            if not reach_all and raw.get("service") not in scopes:
                continue
            try:
                out.append(ReplayRecord.from_wire(raw))
            except TenantGuardError:
                continue  # a record the sidecars sent in another shape: not replayable
        return out

    def _replay(self, bundle: Bundle, scopes: list[str], records: list[ReplayRecord],
                index: RelationIndex) -> ImpactReport:
        candidate = prepare_revision(bundle)
        expected = manifest_expectations(bundle)
        baselines: dict[str, Any] = {}
        for scope in {*scopes, topo.BUNDLE_SCOPE_ALL}:
            store = self.state.stores.get(scope)  # read only: this runs in a worker thread
            active = store.active if store is not None else None
            if active is not None:
                baselines[scope] = prepare_revision(active.bundle)
        fallback = baselines.get(topo.BUNDLE_SCOPE_ALL)
        analyzers: dict[str, ImpactAnalyzer] = {}
        merged = ImpactReport(bundle.revision, "active", relations_seq=index.applied_seq, expected=expected)
        for record in records:
            baseline = baselines.get(record.service, fallback)
            if baseline is None:
                merged.skipped["no_baseline"] = merged.skipped.get("no_baseline", 0) + 1
                continue
            key = baseline.revision
            if key not in analyzers:
                analyzers[key] = ImpactAnalyzer(candidate, baseline=baseline, relations=index, expected=expected)
            analyzers[key].add(record)
        for analyzer in analyzers.values():
            _merge(merged, analyzer.report)
        return merged

    # ------------------------------------------------------------------ shadows

    async def publish_shadow(self, archive: bytes, *, admin: bool, sample_rate: float = 1.0,
                             max_per_second: int = 50, skip_tests: bool = False) -> dict[str, Any]:
        """Announce a candidate as a shadow for its scopes: signed as ``bundle.shadow``, a type no
        reader activates, with its bytes under ``shadows/<scope>/<revision>``. Sidecars evaluate it
        beside the active bundle and report agreements and disagreements."""
        if self._shadow_writer_for is None:
            raise Unavailable("shadow evaluation is not available on this replica")
        if not 0.0 < sample_rate <= 1.0 or not 0 < max_per_second <= 1000:
            raise BundleMalformed("sample_rate must be in (0, 1] and max_per_second in (0, 1000]")
        bundle, archive, signed_upload, passed = await self._accept(archive, admin=admin, skip_tests=skip_tests)
        scopes = bundle_scopes(bundle)
        digest = hashlib.sha256(archive).hexdigest()
        results = []
        for scope in scopes:
            name = f"shadows/{scope}/{bundle.revision}"
            await self.publisher.put_object(topo.BUCKET_BUNDLES, name, archive)
            payload = {"scope": scope, "revision": bundle.revision, "sha256": digest, "size": len(archive),
                       "object": name, "serial": order_key(bundle.manifest),
                       **ShadowSettings(sample_rate, max_per_second).to_wire()}
            results.append(await self._commit_shadow(scope, payload))
        return {"revision": bundle.revision, "shadow": True, "signed_by_plane": not signed_upload,
                "tests_passed": passed, "tests_skipped": skip_tests, "scopes": results}

    async def stop_shadow(self, scope: str) -> dict[str, Any]:
        current = self.state.shadows.get(scope)
        if current is None or current.get("stop"):
            raise ShadowNotFound(f"scope {scope} has no shadow running; `tenantguard bundle rollout status` lists "
                                 "running shadows under fleet.shadow")
        return await self._commit_shadow(scope, {"scope": scope, "stop": True})

    async def _commit_shadow(self, scope: str, payload: dict[str, Any]) -> dict[str, Any]:
        if self._shadow_writer_for is None:
            raise Unavailable("shadow evaluation is not available on this replica")
        chosen: list[int] = []

        def build() -> bytes:
            current = self.state.shadows.get(scope)
            chosen.append((current["seq"] if current else 0) + 1)
            return sign_event(self.event_key, topo.BUNDLE_SHADOW, payload, chosen[-1])

        await self._shadow_writer_for(scope).commit(build)
        return {"scope": scope, "seq": chosen[-1], **{k: v for k, v in payload.items() if k != "scope"}}

    # ------------------------------------------------------------------ rollback

    async def rollback(self, scope: str, to: str | None = None) -> dict[str, Any]:
        """Announce the old content of ``scope`` again, as a NEW revision with a newer serial.

        ``to`` names the revision to return to (its archive ``bundles/<scope>/<to>``); by
        default the one the active announce replaced (``previous``). The archive must verify
        against the plane's bundle key; only ``.manifest`` changes (new revision, serial,
        ``rollback_of``), and the plane signs it again. Readers' ordering rules stay whole:
        the rollback is the newest announce with the highest serial.
        """
        announce = self.state.announces.get(scope)
        if announce is None:
            raise RollbackTargetMissing(f"scope {scope} has no bundle to roll back")
        if to is None:
            if announce.previous is None:
                raise RollbackTargetMissing(f"scope {scope}: the active revision {announce.revision} replaced "
                                            "nothing; name one with --to")
            name, digest = str(announce.previous.get("object")), announce.previous.get("sha256")
        else:
            if REVISION_RE.fullmatch(to) is None:
                raise BundleMalformed("revision must be 1-128 characters of A-Z a-z 0-9 . _ -")
            name, digest = f"bundles/{scope}/{to}", None
        try:
            old_archive = await self.publisher.get_object(topo.BUCKET_BUNDLES, name,
                                                          max_bytes=self.state.max_bundle_bytes)
        except Unavailable as exc:
            if self.publisher.connected:
                raise RollbackTargetMissing(f"scope {scope}: archive {name} is not stored", object=name) from exc
            raise
        if digest is not None and hashlib.sha256(old_archive).hexdigest() != digest:
            raise RollbackTargetMissing(f"archive {name} was replaced since it was announced", object=name)
        old = verify_bundle(old_archive, self.state.bundle_verifier, limits=self.state.bundle_limits)
        if to is not None and old.revision != to:
            raise RollbackTargetMissing(f"archive {name} holds revision {old.revision!r}", object=name)
        active = self.state.store(scope).active
        serial = next_serial(announce.serial, active.order if active else None)
        archive = restored_archive(old, serial=serial, rolled_back_from=announce.revision, signer=self.signer)
        bundle = verify_bundle(archive, self.state.bundle_verifier, limits=self.state.bundle_limits)
        await asyncio.to_thread(compile_and_test, bundle, run=False)
        self._check_order(scope, archive, bundle)
        result = await self._publish_scope(scope, archive, bundle, [scope])
        return {"scope": scope, "restored": old.revision, "rolled_back_from": announce.revision,
                "revision": bundle.revision, "serial": serial, **{k: v for k, v in result.items() if k != "scope"}}

    # ------------------------------------------------------------------ staged rollouts

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

    def _check_order(self, scope: str, archive: bytes, bundle: Bundle) -> None:
        """Raise ``BundleRollback`` unless ``archive`` may follow the scope's active bundle."""
        announce = self.state.announces.get(scope)
        active = self.state.store(scope).active
        if announce is not None and not announce.loaded:
            raise Unavailable(f"scope {scope}: the active bundle could not be loaded, so order cannot be checked")
        if active is None:
            return
        if active.digest == bundle.content_digest():
            raise _Unchanged
        if active.bundle.revision == bundle.revision:
            raise BundleRollback(f"revision {bundle.revision!r} is already active in scope {scope} with other "
                                 "content; publish a new revision", active=bundle.revision)
        scratch: BundleStore[None] = BundleStore(self.state.bundle_verifier, limits=self.state.bundle_limits)
        scratch.activate(active.archive, force=True)
        scratch.activate(archive)  # BundleStore's ordering rules decide

    async def _publish_scope(self, scope: str, archive: bytes, bundle: Bundle, scopes: list[str]) -> dict[str, Any]:
        name = f"bundles/{scope}/{bundle.revision}"
        try:
            self._check_order(scope, archive, bundle)
        except _Unchanged:
            return {"scope": scope, "unchanged": True, "object": name, **self._announced(scope)}
        await self.publisher.put_object(topo.BUCKET_BUNDLES, name, archive)
        payload = {"scope": scope, "revision": bundle.revision, "sha256": hashlib.sha256(archive).hexdigest(),
                   "size": len(archive), "object": name, "services": scopes, "serial": order_key(bundle.manifest)}
        writer: SequencedWriter = self._writer_for(scope)

        def build() -> bytes:
            self._check_order(scope, archive, bundle)  # again: another replica may have published meanwhile
            current = self.state.announces.get(scope)
            previous = {"previous": current.pointer()} if current is not None else {}
            return sign_event(self.event_key, BUNDLE_ANNOUNCE, {**payload, **previous},
                              (current.seq if current else 0) + 1)

        try:
            await writer.commit(build)
        except _Unchanged:  # became identical meanwhile (another replica published it)
            return {"scope": scope, "unchanged": True, "object": name, **self._announced(scope)}
        return {"scope": scope, "unchanged": False, "object": name, **self._announced(scope)}

    def _announced(self, scope: str) -> dict[str, Any]:
        announce = self.state.announces.get(scope)
        return {"seq": announce.seq, "sha256": announce.sha256} if announce else {}


def _merge(into: ImpactReport, part: ImpactReport) -> None:
    """Add one baseline's replay to the combined report (each scope may run another revision)."""
    into.replayed += part.replayed
    into.agreed += part.agreed
    into.reasons_changed += part.reasons_changed
    into.reconstructed += part.reconstructed
    into.declared += part.declared
    into.undeclared += part.undeclared
    into.groups_dropped += part.groups_dropped
    for key, value in part.skipped.items():
        into.skipped[key] = into.skipped.get(key, 0) + value
    for key, value in part.flips.items():
        into.flips[key] += value
    for key, group in part.groups.items():
        mine = into.groups.get(key)
        if mine is None:
            into.groups[key] = group
            continue
        mine.count += group.count
        mine.examples = (mine.examples + group.examples)[:3]
