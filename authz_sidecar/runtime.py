"""The sidecar's state: verifier, decision core, bundle store, relations, log, metrics.

Every door holds one :class:`Sidecar` and calls :meth:`Sidecar.authenticate` then
:meth:`Sidecar.decide`. Loading a bundle goes through :meth:`Sidecar.activate_bundle`
(startup, files, tests) or :meth:`Sidecar.activate_bundle_async` (bundles from NATS,
on the serving event loop): both verify, compile and only then swap.

Token trust (what :meth:`Sidecar.replace_trust` implements):

* the sidecar's own exchange key is always in its own trust set (issuer
  ``sidecar:<service>``), unless the plane withdraws it (see below);
* without NATS, the ``--trust`` file is the whole token trust set;
* with NATS, the plane's trust set is authoritative: the ``--trust`` file (if any) is
  only the bootstrap used until the first ``trust.update`` is applied (from NATS, or
  the one persisted under ``--state-dir``); from then on the set is exactly the
  plane's (plus the own key), and keys found only in the file are dropped. A key
  removed at the plane must stop being trusted everywhere, which a local file that
  kept it alive would defeat. Once the plane's set has listed the own key, a later
  set without it means the plane withdrew it, and the sidecar stops trusting it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import logging
import os
import socket
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tenantguard.bundle import Bundle, BundleStore, TrustSetVerifier, verify_bundle
from tenantguard.decision.core import (
    DEFAULT_DECISION_ENTRYPOINT,
    RELATED_EXTENSION,
    Decision,
    DecisionCore,
    DecisionRecord,
    DecisionRequest,
    PolicyRevision,
    tenant_seq,
)
from tenantguard.decision.permissions import schema_engine
from tenantguard.decision.verdicts import VerdictMemo
from tenantguard.decisionlog import LogPolicy
from tenantguard.errors import (
    BundleRejected,
    ConfigError,
    TenantGuardError,
    TokenError,
    TokenMissing,
)
from tenantguard.exchange import (
    KeyRegistrar,
    LocalTrustOnly,
    PropagationMode,
    TokenExchanger,
    propagation_mode,
    replace_signing_key,
)
from tenantguard.feed.topology import DEFAULT_CELL, sidecar_issuer
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet, load_public_key_file
from tenantguard.identity.oidc import EdgeConfig, EdgeVerifier
from tenantguard.identity.revocations import RevocationList
from tenantguard.identity.tokens import Claims, TokenVerifier, VerifyOptions
from tenantguard.policy.engine import RegorusEngine
from tenantguard.relations import CellRelations, RelationIndex
from tenantguard.rollout import ShadowEvaluator, ShadowSettings, SidecarStatus
from tenantguard.rollout.shadow import REPORTED_EXAMPLES
from tenantguard.search import Searcher, SearchRunner

from .config import SidecarConfig
from .decision_log import DecisionLog, DecisionSink, MemorySink
from .loaders import exchange_settings, load_relations_file, read_bundle_file
from .metrics import SidecarMetrics
from .pep import PepKeys
from .registration import PlaneRegistrar

log = logging.getLogger(__name__)

BUNDLE_ISSUER = "plane"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks: a verified token's claims, or (without one) the tenant the caller is bound to.

    ``tenant`` comes from the caller's PEP key or the sidecar's ``--tenant``, never from the
    request; ``pep`` names the PEP key used, for logs.
    """

    claims: Claims | None
    tenant: str | None = None
    pep: str | None = None


class Sidecar:
    """One service's local authorizer; safe to share between the HTTP and gRPC doors."""

    def __init__(
        self,
        config: SidecarConfig,
        *,
        trust: TrustSet | None = None,
        bundle_trust: TrustSet | None = None,
        relations: RelationIndex | None = None,
        revocations: RevocationList | None = None,
        log_sink: DecisionSink | None = None,
        exchange_key: SigningKey | None = None,
        edge_config: EdgeConfig | None = None,
        client_secret: bytes | None = None,
        pep_keys: PepKeys | None = None,
    ) -> None:
        self.config = config
        if pep_keys is not None and config.tenant is not None and pep_keys.tenants() != {config.tenant}:
            raise ConfigError("with --tenant, every PEP key must be bound to that tenant")
        self.pep_keys = pep_keys
        self.bound_url: str | None = None  # http://host:port once the HTTP listener is bound (server.py)
        self.trust = trust if trust is not None else TrustSet()
        self.revocations = revocations if revocations is not None else RevocationList()
        self.relations = CellRelations(config.relation_scope)  # one index per cell in scope
        if relations is not None:  # a relations file, or a caller's own index: one cell, every type
            if not self.relations.scope.unscoped or config.cells != 1:
                raise ConfigError("a given relations index holds every tenant: it needs one cell and no scope")
            self.relations.replace(DEFAULT_CELL, relations)
        # cells whose relations are loaded (persisted state or a feed bootstrap); readiness of a
        # scoped sidecar waits for all of them. A sidecar without a feed holds what it was given.
        self.cells_bootstrapped: set[str] = set() if config.nats_url is not None else set(self.relations.indexes)
        self.scope_problem: str | None = None  # e.g. the plane runs another cell count (the feed sets it)
        self.metrics = SidecarMetrics()
        self.decision_log = DecisionLog(
            log_sink or MemorySink(), maxsize=config.decision_log_queue,
            sidecar_id=config.sidecar_id or _sidecar_id(config),
            policy=LogPolicy.of(sample_allow=config.decision_log_sample_allow,
                                sample_deny=config.decision_log_sample_deny, masks=config.decision_log_masks))
        self.verifier = TokenVerifier(
            self.trust,
            VerifyOptions(audience=config.service, algorithms=config.algorithms, leeway=config.leeway),
            revocations=self.revocations,
        )
        self.memo = VerdictMemo(config.decision_memo_size) if config.decision_memo_size else None
        self.core = DecisionCore(config.service, self.relations, revocations=self.revocations,
                                 on_decision=self.decision_log.submit, memo=self.memo)
        self.shadow = ShadowEvaluator(self.core)  # idle (and off the core's path) until a shadow is announced
        self.search_runner = SearchRunner()  # search pages run on its workers, never on the serving loop
        # reads core.relations and core.active live; pins per search
        self.searcher = Searcher(self.core, between=self.search_runner.breathe)
        self.metrics.search_in_flight.set_function(lambda: self.search_runner.in_flight)
        self.exchange = self._build_exchange(exchange_key, edge_config, client_secret)
        self.own_key = TrustedKey.of(self.exchange.key.public_key, sidecar_issuer(config.service))
        if self.own_key.kid not in self.trust:
            self.trust.add(self.own_key)
        self.trust_source = "local"  # "plane" once a trust update from the plane is applied
        self.trust_seq = 0  # the plane's trust set sequence applied (set by the feed)
        self.revocations_seq = 0  # the last revocation applied (set by the feed)
        self._own_key_in_plane = False  # whether the plane's last trust set listed the own key
        self._own_key_withdrawn = False
        self.registrar: PlaneRegistrar | None = None  # set by from_config with --plane-url
        self._bundle_verifier = TrustSetVerifier(bundle_trust if bundle_trust is not None else TrustSet())
        self.bundles: BundleStore[PolicyRevision] = BundleStore(
            self._bundle_verifier,
            persist_dir=config.state_dir / "bundles" if config.state_dir else None,
        )
        self._activation_lock = asyncio.Lock()
        self.engine = RegorusEngine()
        self.started_at = time.time()
        self.last_update = self.started_at
        self.feed_state = "file" if config.nats_url is None else "connecting"
        self.feed_status: Callable[[], dict[str, Any]] | None = None  # set by authz_sidecar.feed
        self._seq_changed = asyncio.Condition()
        # Set whenever readiness may have changed (a bundle swap), so the gRPC health
        # service follows it at once; set on the serving loop's thread only.
        self.readiness_changed = asyncio.Event()
        # Set on every bundle swap: the feed reports the new revision on tg.status.<service> at once.
        self.status_changed = asyncio.Event()
        self.instance = f"{socket.gethostname()[:64]}-{os.getpid()}"
        self._bundle_sha: tuple[object, str] | None = None
        self.settle_heap_on_reload = False  # set when serving: see settle_heap()
        self._register_metric_callbacks()

    # -- assembly from configuration ---------------------------------------------------

    @classmethod
    def from_config(cls, config: SidecarConfig, log_sink: DecisionSink | None = None) -> Sidecar:
        """Build from files named in the config: trust file, bundle keys, relations, bundle."""
        trust = TrustSet.load(config.trust_file) if config.trust_file else TrustSet()
        bundle_trust = TrustSet()
        for path in config.bundle_keys:
            bundle_trust.add_public_key(load_public_key_file(path), BUNDLE_ISSUER)
        relations = load_relations_file(config.relations_file) if config.relations_file else None
        pep_keys = PepKeys.load(config.pep_keys_file) if config.pep_keys_file is not None else None
        sidecar = cls(config, trust=trust, bundle_trust=bundle_trust, relations=relations, log_sink=log_sink,
                      pep_keys=pep_keys, **exchange_settings(config))
        if config.plane_url is not None and config.join_secret_file is not None:
            sidecar.registrar = PlaneRegistrar.from_files(config.plane_url, config.join_secret_file,
                                                         tls=config.plane_tls)
            sidecar.registrar.on_revoked = sidecar.rotate_exchange_key  # the plane knew before our feed did
        sidecar.register_exchange_key(sidecar.registrar)
        if config.state_dir is not None:
            sidecar._load_persisted()
        if config.bundle_file is not None:
            try:
                sidecar.activate_bundle(read_bundle_file(config.bundle_file))
            except BundleRejected:
                if not sidecar.core.ready and config.nats_url is None:
                    raise  # nothing to serve and nothing coming: refuse to start, loudly
                log.error("bundle file %s rejected; serving revision %s", config.bundle_file,
                          sidecar.bundle_revision)
        return sidecar

    def _load_persisted(self) -> None:
        try:
            activation = self.bundles.load_persisted(prepare=self._prepare)
        except BundleRejected as exc:
            log.error("persisted bundle rejected (%s); waiting for a fresh one", exc)
            self.metrics.bundles_rejected.labels(exc.code).inc()
            return
        if activation is not None and activation.prepared is not None:
            self._swap(activation.prepared)

    # -- bundles -------------------------------------------------------------------------

    def activate_bundle(self, archive: bytes, *, force: bool = False) -> PolicyRevision:
        """Verify, compile and swap in a bundle; a rejected one leaves the active one serving."""
        with self._counting_rejections():
            activation = self.bundles.activate(archive, force=force, prepare=self._prepare)
        return self._adopt(activation.prepared)

    async def activate_bundle_async(self, archive: bytes, *, force: bool = False) -> PolicyRevision:
        """:meth:`activate_bundle` for the serving event loop (bundles from NATS): no stall.

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
                bundle = await asyncio.to_thread(verify_bundle, archive, self._bundle_verifier)
                active = self.bundles.active
                if active is not None and active.digest == bundle.content_digest() and active.prepared is not None:
                    return active.prepared  # already serving this content (BundleStore would say the same)
                revision = await self._prepare_async(bundle)
                activation = await asyncio.to_thread(self.bundles.activate, archive, force=force,
                                                     prepare=lambda _bundle: revision)
            return self._adopt(activation.prepared)

    async def set_shadow(self, archive: bytes, settings: ShadowSettings, scope: str) -> PolicyRevision:
        """Verify and compile a shadow candidate (as a bundle, never through the bundle store) and judge
        decisions with it from now on; the decision path only gains an O(1) hand-off."""
        with self._counting_rejections():
            bundle = await asyncio.to_thread(verify_bundle, archive, self._bundle_verifier)
            revision = await self._prepare_async(bundle)
        self.shadow.set_candidate(revision, settings, scope)
        self.core.observer = self.shadow.offer
        self.status_changed.set()
        log.info("shadow revision %s (scope %s) evaluated beside %s", revision.revision, scope, self.bundle_revision)
        return revision

    def stop_shadow(self, scope: str) -> None:
        """End the shadow announced on ``scope`` (a shadow from the other scope keeps running)."""
        if self.shadow.candidate is None or self.shadow.scope != scope:
            return
        self.core.observer = None
        self.shadow.set_candidate(None)
        self.status_changed.set()
        log.info("shadow on scope %s stopped", scope)

    @contextlib.contextmanager
    def _counting_rejections(self) -> Iterator[None]:
        """Count and log a rejected bundle by its code, then let the typed error through."""
        try:
            yield
        except BundleRejected as exc:
            self.metrics.bundles_rejected.labels(exc.code).inc()
            log.warning("bundle rejected: %s", exc)
            raise

    def _adopt(self, revision: PolicyRevision | None) -> PolicyRevision:
        """Swap in an activated revision unless it is already the one deciding."""
        assert revision is not None  # both paths always prepare one
        if self.core.active is not revision:
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
        return self.config.decision or _manifest_decision(bundle) or DEFAULT_DECISION_ENTRYPOINT

    def _swap(self, revision: PolicyRevision) -> None:
        self.core.activate(revision)
        self.readiness_changed.set()
        self.status_changed.set()
        self.last_update = time.time()
        self.metrics.bundles_activated.inc()
        self.metrics.set_revision(revision.revision)
        log.info("bundle revision %s active (decision %s)", revision.revision, revision.entrypoint)

    @property
    def ready(self) -> bool:
        """Whether this sidecar can decide: a verified bundle is active (``/ready``, gRPC health),
        the plane runs the same cell count, and (scoped sidecars) every cell in scope is loaded."""
        return self.core.ready and self.scope_problem is None and not self._cells_pending()

    def not_ready_reason(self) -> str | None:
        """Why :attr:`ready` is False, for ``/ready`` and the status; None when ready."""
        if self.scope_problem is not None:
            return self.scope_problem
        if not self.core.ready:
            return "no verified bundle is active"
        pending = self._cells_pending()
        if pending:
            return f"relations of cells {', '.join(pending[:8])} not bootstrapped yet"
        return None

    def _cells_pending(self) -> list[str]:
        if self.relations.scope.unscoped and self.config.cells == 1:
            return []  # unscoped single-cell sidecars keep their behaviour: ready with a bundle
        return [c for c in self.relations.indexes if c not in self.cells_bootstrapped]

    def cell_bootstrapped(self, cell: str) -> None:
        """The feed loaded ``cell`` (snapshot, stream or persisted state)."""
        if cell not in self.cells_bootstrapped:
            self.cells_bootstrapped.add(cell)
            self.readiness_changed.set()

    @property
    def bundle_revision(self) -> str | None:
        return self.core.active.revision if self.core.active else None

    @property
    def decision_entrypoint(self) -> str:
        active = self.core.active
        return active.entrypoint if active else (self.config.decision or DEFAULT_DECISION_ENTRYPOINT)

    # -- decisions -----------------------------------------------------------------------

    def authenticate(self, authorization: str | None) -> Claims | None:
        """The verified claims of a ``Bearer`` token; None when absent and not required."""
        if not authorization:
            if self.config.require_token:
                raise TokenMissing("a context token is required (Authorization: Bearer ...)")
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise TokenMissing("Authorization must use the Bearer scheme")
        try:
            return self.verifier.verify(token.strip())
        except TokenError as exc:
            self.metrics.tokens_rejected.labels(exc.code).inc()
            raise

    def caller(self, authorization: str | None) -> Caller:
        """The AuthZEN doors' caller: a PEP key (bound to its tenant) or a context token.

        With ``--pep-keys`` a caller must present one or the other (401 otherwise): an
        operator who issues PEP keys expects every PEP to use one. A bearer value that is
        no PEP key is verified as a context token. ``--require-token`` still wants a token:
        a PEP key alone is then refused.
        """
        keys = self.pep_keys
        if keys is None:
            claims = self.authenticate(authorization)
            return Caller(claims, None if claims is not None else self.config.tenant)
        scheme, _, value = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise TokenMissing("a PEP key or a context token is required (Authorization: Bearer ...)")
        key = keys.match(value.strip())
        if key is None:
            return Caller(self.authenticate(authorization))
        if self.config.require_token:
            raise TokenMissing("a context token is required; a PEP key does not replace it (--require-token)")
        return Caller(None, key.tenant, key.name)

    def decide(self, wire: Mapping[str, Any], claims: Claims | None, *, door: str,
               tenant: str | None = None) -> Decision:
        """Shape-check the request (InvalidInput on a bad one), then decide and count.

        ``tenant`` is the caller's bound tenant (its PEP key's); without a token the
        question is asked in it, else in ``--tenant``. A body that names another tenant is
        denied ``tenant_mismatch``; with ``--tenant``, a token of another tenant is denied
        ``tenant_not_served``. Both denials are logged like any decision.
        """
        served = self.config.tenant
        bound = tenant if tenant is not None else served
        refusal: str | None = None
        if claims is not None:
            if served is not None and claims.tenant_id != served:
                refusal = "tenant_not_served"
        elif bound is not None:
            wire, agrees = bind_tenant(wire, bound)
            if not agrees:
                refusal = "tenant_mismatch"
        request = DecisionRequest.from_wire(wire, claims, door=door)
        start = time.perf_counter()
        decision = self.core.decide(request) if refusal is None else self._refuse(request, refusal, bound)
        self.metrics.record(door, decision.allow, time.perf_counter() - start)
        return decision

    def _refuse(self, request: DecisionRequest, reason: str, tenant: str | None) -> Decision:
        """A deny decided here, before the core (the caller's tenant is not the question's)."""
        claims = request.claims
        tenant = claims.tenant_id if claims is not None else tenant
        decision = Decision(allow=False, reasons=(reason,), decision_id=_new_id(), bundle_revision=self.bundle_revision,
                            relations_seq=tenant_seq(self.relations, tenant), tenant=tenant,
                            subject=claims.sub if claims is not None else request.subject.get("id"))
        self.decision_log.submit(DecisionRecord(
            decision_id=decision.decision_id, time=time.time(), service=self.config.service, tenant=decision.tenant,
            subject=decision.subject, action=str(request.action.get("name", "")),
            resource=f"{request.resource.get('type', '')}:{request.resource.get('id', '')}", allow=False,
            reasons=decision.reasons, bundle_revision=decision.bundle_revision, relations_seq=decision.relations_seq,
            actor_chain=tuple(claims.actor_chain) if claims is not None else (), request=request))
        return decision

    @property
    def public_url(self) -> str:
        """Base URL for discovery documents: ``--public-url``, else the bound address."""
        if self.config.public_url is not None:
            return self.config.public_url.rstrip("/")
        return self.bound_url or "http://localhost"

    @property
    def public_path(self) -> str:
        """The path of :attr:`public_url` (``/todo`` for ``https://pdp.example.com/todo/``; '' for none):
        discovery documents are also served at ``/.well-known/<name>`` + this path (RFC 8414 3.1,
        AuthZEN 1.0 "PDP Metadata": the well-known string is inserted between host and path)."""
        return urlsplit(self.public_url).path.rstrip("/")

    def stale_decision(self, wire: Mapping[str, Any], claims: Claims | None, door: str, wanted: int,
                       tenant: str | None = None) -> Decision:
        """The deny for a check whose ``at_least`` sequence has not arrived in time (``tenant``:
        the caller's bound one, as for :meth:`decide`)."""
        DecisionRequest.from_wire(wire, claims)  # still a 400 for a malformed request
        seq = self.relations.seq_of(question_tenant(wire, claims, tenant if tenant is not None else self.config.tenant))
        decision = Decision(allow=False, reasons=("relations_stale",), decision_id=_new_id(),
                            bundle_revision=self.bundle_revision, relations_seq=seq or 0)
        self.metrics.record(door, False, 0.0)
        log.info("check wanted relations seq %d, have %d: denied as stale", wanted, decision.relations_seq)
        return decision

    async def wait_for_seq(self, seq: int, tenant: str | None = None) -> bool:
        """Wait (bounded by ``max_wait_ms``) until the relations of ``tenant``'s cell reach ``seq``
        (a consistency token is a cell's sequence; no tenant known: every cell in scope). A tenant
        outside the scope does not wait: its decision is denied ``out_of_scope`` anyway."""
        def arrived() -> bool:
            have = self.relations.seq_of(tenant)
            return have is None or have >= seq

        if arrived():
            return True
        try:
            async with self._seq_changed:
                await asyncio.wait_for(self._seq_changed.wait_for(arrived), timeout=self.config.max_wait_ms / 1000)
        except TimeoutError:
            return False
        return True

    def replace_relations(self, index: RelationIndex, cell: str = DEFAULT_CELL) -> None:
        """Swap in a resynchronised index of ``cell`` (snapshot or cold start); the core reads the
        same composite, so this is one reference assignment: a decision in flight keeps the
        index it already read. Call :meth:`relations_advanced` afterwards to wake ``at_least`` waiters.
        """
        self.relations.replace(cell, index)
        self.last_update = time.time()
        if self.settle_heap_on_reload:
            settle_heap()

    def replace_trust(self, keys: Iterable[TrustedKey]) -> None:
        """Adopt the plane's token trust set and forget every cached verification.

        The plane's set is authoritative (module docstring): it replaces whatever the
        ``--trust`` file bootstrapped. The own exchange key is kept trusted unless the
        plane, having listed it before, no longer does (withdrawn at the plane).
        """
        plane_keys = list(keys)
        listed = any(k.kid == self.own_key.kid for k in plane_keys)
        if self._own_key_in_plane and not listed and not self._own_key_withdrawn:
            self._own_key_withdrawn = True
            log.warning("the plane withdrew this sidecar's exchange key %s; no longer trusting it", self.own_key.kid)
        if listed:
            self._own_key_withdrawn = False
        self._own_key_in_plane = listed
        if not listed and not self._own_key_withdrawn:
            plane_keys.append(self.own_key)
        self.trust.replace_all(plane_keys)
        self.trust_source = "plane"
        self.verifier.invalidate()
        self.last_update = time.time()

    async def relations_advanced(self) -> None:
        """Called by the feed after applying a batch: wakes checks waiting on ``at_least``."""
        self.last_update = time.time()
        async with self._seq_changed:
            self._seq_changed.notify_all()

    # -- status --------------------------------------------------------------------------

    def staleness(self) -> float:
        return max(0.0, time.time() - self.last_update)

    def status(self) -> dict[str, Any]:
        return {
            "service": self.config.service,
            "ready": self.core.ready,
            "bundle_revision": self.bundle_revision,
            "decision_entrypoint": self.decision_entrypoint,
            "relations_seq": self.relations.applied_seq,
            "relations_count": self.relations.count(),
            "relations": {**self.relations.scope.to_wire(), "cell_seqs": self.relations.seqs(),
                          "bootstrapped": sorted(self.cells_bootstrapped, key=lambda c: int(c[1:]))},
            "not_ready": self.not_ready_reason(),
            "staleness_seconds": round(self.staleness(), 3),
            "feed": self.feed_state,
            "feed_detail": self.feed_status() if self.feed_status is not None else None,
            "trusted_keys": len(self.trust),
            "trust": {"source": self.trust_source, "keys": len(self.trust), "issuers": self._trusted_issuers(),
                      "own_kid": self.own_key.kid, "own_key_trusted": self.own_key.kid in self.trust,
                      "own_key_in_plane_set": self._own_key_in_plane},
            "registration": self.registrar.status() if self.registrar is not None else None,
            "tenancy": {"tenant": self.config.tenant, "pep_keys": len(self.pep_keys.keys) if self.pep_keys else 0,
                        "require_token": self.config.require_token},
            "token_cache": {"hits": self.verifier.cache_hits, "misses": self.verifier.cache_misses},
            "decision_memo": self._memo_status(),
            "decision_log": self.decision_log.stats(),
            "shadow": self.shadow.stats(),
            "uptime_seconds": round(time.time() - self.started_at, 3),
        }

    def fleet_status(self) -> SidecarStatus:
        """What this instance reports on ``tg.status.<service>`` (``tenantguard.rollout.fleet``)."""
        active = self.bundles.active
        digest = None
        if active is not None:
            cached = self._bundle_sha
            if cached is None or cached[0] is not active:
                cached = self._bundle_sha = (active, hashlib.sha256(active.archive).hexdigest())
            digest = cached[1]
        return SidecarStatus(service=self.config.service, instance=self.instance, bundle_revision=self.bundle_revision,
                             bundle_serial=active.order if active is not None else None, bundle_sha256=digest,
                             relations_seq=self.relations.applied_seq, ready=self.core.ready, sent_at=time.time(),
                             shadow=self.shadow.stats(examples=REPORTED_EXAMPLES),
                             staleness_seconds=round(self.staleness(), 3), trust_seq=self.trust_seq,
                             revocations_seq=self.revocations_seq, decisions=self.metrics.decided)

    def _memo_status(self) -> dict[str, Any]:
        """Verdict memo counters, and whether the active policy may use it at all."""
        if self.memo is None:
            return {"enabled": False, "reason": "disabled (--decision-memo 0)"}
        active = self.core.active
        if active is not None and not getattr(active.policy, "pure", False):
            return {"enabled": False, "reason": "the policy reads the clock, chance or the network",
                    "impure_builtins": list(getattr(active.policy, "impure_builtins", ())), **self.memo.stats()}
        return {"enabled": True, **self.memo.stats()}

    def _trusted_issuers(self) -> dict[str, int]:
        """How many keys are trusted per issuer (kids stay out of the status: a set may hold hundreds)."""
        counts: dict[str, int] = {}
        for key in self.trust:
            counts[key.issuer] = counts.get(key.issuer, 0) + 1
        return dict(sorted(counts.items()))

    def _register_metric_callbacks(self) -> None:
        self.metrics.read_from(
            counters={
                "tg_token_cache_hits": ("Verified-token cache hits", lambda: self.verifier.cache_hits),
                "tg_token_cache_misses": ("Verified-token cache misses", lambda: self.verifier.cache_misses),
                "tg_decision_log_dropped": ("Decision log records dropped (queue full, NATS down, not acked)",
                                            lambda: self.decision_log.dropped),
                "tg_decision_log_sampled_out": ("Decisions not logged by sampling",
                                                lambda: self.decision_log.sampled_out),
                "tg_decision_memo_hits": ("Decisions that reused a memoized policy verdict",
                                          lambda: self.memo.hits if self.memo else 0),
                "tg_decision_memo_misses": ("Memoizable decisions that evaluated the policy",
                                            lambda: self.memo.misses if self.memo else 0),
            },
            gauges={
                "tg_staleness_seconds": ("Seconds since the last bundle or relations update", self.staleness),
                "tg_relations_seq": ("Applied relations sequence", lambda: self.relations.applied_seq),
                "tg_ready": ("1 when a verified bundle is active", lambda: 1.0 if self.core.ready else 0.0),
            },
        )

    # -- token exchange (RFC 8693) --------------------------------------------------------

    def _build_exchange(self, key: SigningKey | None, edge_config: EdgeConfig | None,
                        client_secret: bytes | None) -> TokenExchanger:
        """This sidecar's exchange service: its own key, its verifier, the active policy."""
        edge = EdgeVerifier(edge_config, revocations=self.revocations) if edge_config is not None else None
        return TokenExchanger(
            self.config.service, key or SigningKey.generate(), self.verifier, lambda: self.core.active,
            lifetime=self.config.exchange_lifetime, max_act_depth=self.config.exchange_max_act_depth,
            edge=edge, client_secret=client_secret, tenant=self.config.tenant,
            holds_tenant=self.relations.scope.holds_tenant,
        )

    def register_exchange_key(self, registrar: KeyRegistrar | None = None) -> None:
        """Hand the public key to the trust publisher; the plane's registrar plugs in here."""
        (registrar or LocalTrustOnly()).register(self.config.service, self.exchange.jwks()["keys"][0])

    def rotate_exchange_key_if_revoked(self) -> bool:
        """Replace the exchange key when its kid is revoked; True when it did.

        Every verifier refuses tokens signed by a revoked kid, so the sidecar would
        otherwise mint only refused tokens until an operator deleted its key file. The
        new key is persisted, trusted locally and registered with the plane (which
        refuses to register a revoked kid again).
        """
        if self.own_key.kid not in self.revocations.kids:
            return False
        self.rotate_exchange_key()
        return True

    def rotate_exchange_key(self) -> None:
        """A new exchange key: persisted, trusted locally instead of the old one, registered."""
        old = self.own_key
        key = replace_signing_key(self.config.state_dir, self.exchange.key.alg)
        self.exchange.key = key
        self.own_key = TrustedKey.of(key.public_key, sidecar_issuer(self.config.service))
        if old.kid in self.trust:
            self.trust.remove(old.kid)
        self.trust.add(self.own_key)
        self._own_key_in_plane = self._own_key_withdrawn = False
        self.verifier.invalidate()
        self.register_exchange_key(self.registrar)
        log.warning("exchange key %s replaced; now signing with %s", old.kid, key.kid)

    def propagation_mode(self, target: str) -> PropagationMode:
        """forward / exchange / deny for an outbound call from this service to ``target``."""
        return propagation_mode(self.core.active, self.config.service, target)


def settle_heap() -> None:
    """Take what is alive now out of the cyclic garbage collector's rounds (``gc.freeze``).

    Why: a relations index is millions of long-lived objects, and every full collection
    traverses all of them, stalling whichever decision triggered it (136 ms with
    1,000,000 tuples here, 2.8 ms once frozen; ``bench/bench_pauses.py``). Frozen objects
    are still freed by reference counting when dropped (the index holds no cycles); they
    are only no longer traversed. A full collection runs first, so no cyclic garbage is
    frozen for good. Called once before serving and after each wholesale relations load.
    """
    gc.collect()
    gc.freeze()


def bind_tenant(wire: Mapping[str, Any], tenant: str) -> tuple[Mapping[str, Any], bool]:
    """``wire`` with ``subject.properties.tenant_id`` set to the caller's bound ``tenant``,
    and whether the body agreed (named no tenant, or this one). Copies, never mutates."""
    subject = wire.get("subject")
    if not isinstance(subject, Mapping):
        return wire, True  # the shape check that follows answers 400
    props = subject.get("properties")
    if props is None:
        props = {}
    if not isinstance(props, Mapping):
        return wire, True
    stated = props.get("tenant_id")
    if stated is not None and stated != tenant:
        return wire, False
    return {**wire, "subject": {**subject, "properties": {**props, "tenant_id": tenant}}}, True


def _sidecar_id(config: SidecarConfig) -> str:
    """``<service>-<host>-<4 random bytes>``: tells replicas and restarts apart in decision records."""
    host = "".join(c for c in socket.gethostname()[:40] if c.isalnum() or c in "-_.") or "host"
    return f"{config.service}-{host}-{os.urandom(4).hex()}"


def _manifest_decision(bundle: Bundle) -> str | None:
    value = bundle.manifest.metadata.get("decision")
    return value if isinstance(value, str) and value else None


def _new_id() -> str:
    import uuid

    return uuid.uuid4().hex


def question_tenant(wire: Mapping[str, Any], claims: Claims | None, bound: str | None = None) -> str | None:
    """The tenant whose relations a decision on ``wire`` reads, as far as it can be told
    before deciding: the token's, else the caller's bound one (PEP key, ``--tenant``), else
    the subject's stated ``tenant_id`` (None: not stated; such a question is denied
    ``tenant_unknown``). Never the resource's: an act-as decision reads the subject's
    tenant's relations, so an ``at_least`` waited for in the resource's cell would promise
    a state the decision never read."""
    if claims is not None:
        return claims.tenant_id
    if bound is not None:
        return bound
    entity = wire.get("subject")
    props = entity.get("properties") if isinstance(entity, Mapping) else None
    tenant = props.get("tenant_id") if isinstance(props, Mapping) else None
    return tenant if isinstance(tenant, str) and tenant else None
