"""The sidecar's policy slot: which verified bundle revision decides, and how another takes its place.

A bundle is verified, ordered (no rollback) and compiled before the decision core's one
reference is swapped, so a rejected bundle leaves the active revision serving. Bundles
come through :meth:`PolicySlot.activate` (startup, files, tests) or
:meth:`PolicySlot.activate_async` (bundles from NATS, on the serving event loop: compiled
in steps so decisions keep being answered meanwhile). A shadow candidate is verified and
compiled the same way but never activated: it only judges the decisions the active
revision makes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable, Generator, Iterator

from tenantguard.bundle import Bundle, BundleStore, TrustSetVerifier, verify_bundle
from tenantguard.decision.core import DEFAULT_DECISION_ENTRYPOINT, RELATED_EXTENSION, DecisionCore, PolicyRevision
from tenantguard.decision.permissions import schema_engine
from tenantguard.errors import BundleRejected, TenantGuardError
from tenantguard.identity.keys import TrustSet
from tenantguard.policy.engine import RegorusEngine
from tenantguard.rollout import ShadowEvaluator, ShadowSettings

from .config import SidecarConfig
from .metrics import SidecarMetrics

# The logger the sidecar's bundle messages have always been written under (operators filter on it).
log = logging.getLogger("authz_sidecar.runtime")


class PolicySlot:
    """The active policy revision of one sidecar, the store it is activated through, and a shadow beside it.

    ``on_swap`` runs after every swap (readiness, the fleet report and staleness follow it);
    ``on_shadow`` after a shadow starts or stops (the fleet report shows it).
    """

    def __init__(self, config: SidecarConfig, core: DecisionCore, metrics: SidecarMetrics, bundle_trust: TrustSet,
                 *, on_swap: Callable[[], None], on_shadow: Callable[[], None]) -> None:
        self._decision = config.decision
        self._core = core
        self._metrics = metrics
        self._on_swap, self._on_shadow = on_swap, on_shadow
        self.shadow = ShadowEvaluator(core)  # idle (and off the core's path) until a shadow is announced
        self._verifier = TrustSetVerifier(bundle_trust)
        self.bundles: BundleStore[PolicyRevision] = BundleStore(
            self._verifier,
            persist_dir=config.state_dir / "bundles" if config.state_dir else None,
        )
        self.engine = RegorusEngine()
        self._activation_lock = asyncio.Lock()
        self._archive_sha: tuple[object, str] | None = None

    # -- activation ------------------------------------------------------------------------

    def load_persisted(self) -> None:
        """Serve the bundle persisted under ``--state-dir`` (cold start); a rejected one is logged and skipped."""
        try:
            activation = self.bundles.load_persisted(prepare=self._prepare)
        except BundleRejected as exc:
            log.error("persisted bundle rejected (%s); waiting for a fresh one", exc)
            self._metrics.bundles_rejected.labels(exc.code).inc()
            return
        if activation is not None and activation.prepared is not None:
            self._swap(activation.prepared)

    def activate(self, archive: bytes, *, force: bool = False) -> PolicyRevision:
        """Verify, compile and swap in a bundle; a rejected one leaves the active one serving."""
        with self._counting_rejections():
            activation = self.bundles.activate(archive, force=force, prepare=self._prepare)
        return self._adopt(activation.prepared)

    async def activate_async(self, archive: bytes, *, force: bool = False) -> PolicyRevision:
        """:meth:`activate` for the serving event loop (bundles from NATS): no stall.

        The policy is compiled with :meth:`RegorusEngine.prepare_steps`, one step per loop
        iteration, so decisions keep being answered on the active revision meanwhile;
        verifying and persisting (fsync) run in a worker thread. The verdict is still
        :class:`BundleStore`'s alone: ``activate`` re-verifies the archive, applies the
        ordering (rollback) rules, persists and swaps, exactly as on the synchronous path;
        the first verification here only yields the parsed bundle to compile. Activations
        are serialised, so two announces cannot interleave.
        """
        async with self._activation_lock:
            with self._counting_rejections():
                bundle = await asyncio.to_thread(verify_bundle, archive, self._verifier)
                active = self.bundles.active
                if active is not None and active.digest == bundle.content_digest() and active.prepared is not None:
                    return active.prepared  # already serving this content (BundleStore would say the same)
                revision = await self._prepare_async(bundle)
                activation = await asyncio.to_thread(self.bundles.activate, archive, force=force,
                                                     prepare=lambda _bundle: revision)
            return self._adopt(activation.prepared)

    # -- shadows ---------------------------------------------------------------------------

    async def set_shadow(self, archive: bytes, settings: ShadowSettings, scope: str) -> PolicyRevision:
        """Verify and compile a shadow candidate (as a bundle, never through the bundle store) and judge
        decisions with it from now on; the decision path only gains an O(1) hand-off."""
        with self._counting_rejections():
            bundle = await asyncio.to_thread(verify_bundle, archive, self._verifier)
            revision = await self._prepare_async(bundle)
        self.shadow.set_candidate(revision, settings, scope)
        self._core.observer = self.shadow.offer
        self._on_shadow()
        log.info("shadow revision %s (scope %s) evaluated beside %s", revision.revision, scope, self.bundle_revision)
        return revision

    def stop_shadow(self, scope: str) -> None:
        """End the shadow announced on ``scope`` (a shadow from the other scope keeps running)."""
        if self.shadow.candidate is None or self.shadow.scope != scope:
            return
        self._core.observer = None
        self.shadow.set_candidate(None)
        self._on_shadow()
        log.info("shadow on scope %s stopped", scope)

    # -- what is active --------------------------------------------------------------------

    @property
    def bundle_revision(self) -> str | None:
        return self._core.active.revision if self._core.active else None

    @property
    def decision_entrypoint(self) -> str:
        active = self._core.active
        return active.entrypoint if active else (self._decision or DEFAULT_DECISION_ENTRYPOINT)

    def active_sha256(self) -> str | None:
        """SHA-256 of the active bundle's archive (the fleet report's), hashed once per activation."""
        active = self.bundles.active
        if active is None:
            return None
        cached = self._archive_sha
        if cached is None or cached[0] is not active:
            cached = self._archive_sha = (active, hashlib.sha256(active.archive).hexdigest())
        return cached[1]

    # -- compiling and swapping ------------------------------------------------------------

    @contextlib.contextmanager
    def _counting_rejections(self) -> Iterator[None]:
        """Count and log a rejected bundle by its code, then let the typed error through."""
        try:
            yield
        except BundleRejected as exc:
            self._metrics.bundles_rejected.labels(exc.code).inc()
            log.warning("bundle rejected: %s", exc)
            raise

    def _adopt(self, revision: PolicyRevision | None) -> PolicyRevision:
        """Swap in an activated revision unless it is already the one deciding."""
        assert revision is not None  # both paths always prepare one
        if self._core.active is not revision:
            self._swap(revision)
        return revision

    async def _prepare_async(self, bundle: Bundle) -> PolicyRevision:
        """Drive :meth:`_prepare_steps` one ``next()`` per event-loop iteration.

        Failures are typed as on the synchronous path (``BundleStore``'s ``prepare``):
        tenantguard errors as they are, anything else as ``BundleRejected``.
        """
        steps = self._prepare_steps(bundle)
        try:
            while True:
                try:
                    next(steps)
                except StopIteration as done:
                    revision: PolicyRevision = done.value
                    return revision
                await asyncio.sleep(0)
        except TenantGuardError:
            raise
        except Exception as exc:
            raise BundleRejected(f"bundle {bundle.revision!r} failed to prepare: {exc}") from exc
        finally:
            steps.close()

    def _prepare_steps(self, bundle: Bundle) -> Generator[None, None, PolicyRevision]:
        entrypoint = self._entrypoint_for(bundle)
        policy = yield from self.engine.prepare_steps(bundle.modules, bundle.data, extensions=RELATED_EXTENSION,
                                                      entrypoints=(entrypoint,))
        return PolicyRevision(revision=bundle.revision, policy=policy, entrypoint=entrypoint,
                              schema=schema_engine(bundle.schema))

    def _prepare(self, bundle: Bundle) -> PolicyRevision:
        entrypoint = self._entrypoint_for(bundle)
        policy = self.engine.prepare(bundle.modules, bundle.data, extensions=RELATED_EXTENSION,
                                     entrypoints=(entrypoint,))
        return PolicyRevision(revision=bundle.revision, policy=policy, entrypoint=entrypoint,
                              schema=schema_engine(bundle.schema))

    def _entrypoint_for(self, bundle: Bundle) -> str:
        return self._decision or _manifest_decision(bundle) or DEFAULT_DECISION_ENTRYPOINT

    def _swap(self, revision: PolicyRevision) -> None:
        self._core.activate(revision)
        self._on_swap()
        self._metrics.bundles_activated.inc()
        self._metrics.set_revision(revision.revision)
        log.info("bundle revision %s active (decision %s)", revision.revision, revision.entrypoint)


def _manifest_decision(bundle: Bundle) -> str | None:
    value = bundle.manifest.metadata.get("decision")
    return value if isinstance(value, str) and value else None
