"""The sidecar's state: verifier, decision core, policy slot, relations, log, metrics.

Every door holds one :class:`Sidecar` and calls :meth:`Sidecar.authenticate` then
:meth:`Sidecar.decide`; both stay here, on the one object the doors hold, so a decision
pays for no extra layer of calls. The other concerns live in modules of their own, which
:class:`Sidecar` composes:

* :mod:`.policy_slot`: which verified bundle revision decides, activation (sync and on
  the serving loop), shadows;
* :mod:`.readiness`: whether the sidecar can decide, and why not;
* :mod:`.exchange_keys`: the own exchange key and the token trust merge rules;
* :mod:`.status`: ``/v1/status``, the fleet report, metrics read at scrape time;
* :mod:`.tenancy`: who asks, and in which tenant.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from tenantguard.decision.core import (
    Decision,
    DecisionCore,
    DecisionRecord,
    DecisionRequest,
    PolicyRevision,
    tenant_seq,
)
from tenantguard.decision.verdicts import VerdictMemo
from tenantguard.decisionlog import LogPolicy
from tenantguard.errors import BundleRejected, ConfigError, TokenError, TokenMissing
from tenantguard.exchange import TokenExchanger
from tenantguard.feed.topology import DEFAULT_CELL
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet, load_public_key_file
from tenantguard.identity.oidc import EdgeConfig, EdgeVerifier
from tenantguard.identity.revocations import RevocationList
from tenantguard.identity.tokens import Claims, TokenVerifier, VerifyOptions
from tenantguard.relations import CellRelations, RelationIndex
from tenantguard.rollout import SidecarStatus
from tenantguard.search import Searcher, SearchRunner

from .config import SidecarConfig
from .decision_log import DecisionLog, DecisionSink, MemorySink
from .exchange_keys import ExchangeKeys
from .loaders import exchange_settings, load_relations_file, read_bundle_file
from .metrics import SidecarMetrics
from .pep import PepKeys
from .policy_slot import PolicySlot
from .readiness import Readiness
from .registration import PlaneRegistrar
from .status import fleet_report, read_metrics, report
from .tenancy import Caller, bind_tenant, question_tenant

log = logging.getLogger(__name__)

BUNDLE_ISSUER = "plane"


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
        self.readiness = Readiness(self.core, self.relations, config.cells, fed=config.nats_url is not None)
        # Set on every bundle swap, shadow change and hold change: the feed reports it on
        # tg.status.<service> at once (the fleet's "ready" is /ready's).
        self.status_changed = asyncio.Event()
        self.core.hold.on_change = self._hold_changed
        self.policy = PolicySlot(config, self.core, self.metrics,
                                 bundle_trust if bundle_trust is not None else TrustSet(),
                                 on_swap=self._policy_swapped, on_shadow=self.status_changed.set)
        self.search_runner = SearchRunner()  # search pages run on its workers, never on the serving loop
        # reads core.relations and core.active live; pins per search
        self.searcher = Searcher(self.core, between=self.search_runner.breathe)
        self.metrics.search_in_flight.set_function(lambda: self.search_runner.in_flight)
        self.exchange = self._build_exchange(exchange_key, edge_config, client_secret)
        self.exchange_keys = ExchangeKeys(config.service, config.state_dir, self.exchange, self.trust,
                                          self.verifier, self.revocations)
        self.trust_seq = 0  # the plane's trust set sequence applied (set by the feed)
        self.revocations_seq = 0  # the last revocation applied (set by the feed)
        self.started_at = time.time()
        self.last_update = self.started_at
        self.feed_state = "file" if config.nats_url is None else "connecting"
        self.feed_status: Callable[[], dict[str, Any]] | None = None  # set by authz_sidecar.feed
        self._seq_changed = asyncio.Condition()
        self.instance = f"{socket.gethostname()[:64]}-{os.getpid()}"
        self.settle_heap_on_reload = False  # set when serving: see settle_heap()
        read_metrics(self)

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
        keys = sidecar.exchange_keys
        if config.plane_url is not None and config.join_secret_file is not None:
            keys.registrar = PlaneRegistrar.from_files(config.plane_url, config.join_secret_file,
                                                       tls=config.plane_tls)
            keys.registrar.on_revoked = keys.rotate  # the plane knew before our feed did
        keys.register(keys.registrar)
        if config.state_dir is not None:
            sidecar.policy.load_persisted()
        if config.bundle_file is not None:
            try:
                sidecar.activate_bundle(read_bundle_file(config.bundle_file))
            except BundleRejected:
                if not sidecar.core.ready and config.nats_url is None:
                    raise  # nothing to serve and nothing coming: refuse to start, loudly
                log.error("bundle file %s rejected; serving revision %s", config.bundle_file,
                          sidecar.bundle_revision)
        return sidecar

    def _build_exchange(self, key: SigningKey | None, edge_config: EdgeConfig | None,
                        client_secret: bytes | None) -> TokenExchanger:
        """This sidecar's exchange service: its own key, its verifier, the active policy."""
        edge = EdgeVerifier(edge_config, revocations=self.revocations) if edge_config is not None else None
        return TokenExchanger(
            self.config.service, key or SigningKey.generate(), self.verifier, lambda: self.core.active,
            lifetime=self.config.exchange_lifetime, max_act_depth=self.config.exchange_max_act_depth,
            edge=edge, client_secret=client_secret, tenant=self.config.tenant,
            holds_tenant=self.relations.scope.holds_tenant, hold=self.core.hold,
        )

    # -- bundles (the policy slot's entry points) -------------------------------------------

    def activate_bundle(self, archive: bytes, *, force: bool = False) -> PolicyRevision:
        """Verify, compile and swap in a bundle; a rejected one leaves the active one serving."""
        return self.policy.activate(archive, force=force)

    async def activate_bundle_async(self, archive: bytes, *, force: bool = False) -> PolicyRevision:
        """:meth:`activate_bundle` for the serving event loop (bundles from NATS): no stall
        (:meth:`PolicySlot.activate_async`)."""
        return await self.policy.activate_async(archive, force=force)

    @property
    def bundle_revision(self) -> str | None:
        return self.policy.bundle_revision

    @property
    def ready(self) -> bool:
        """Whether this sidecar can decide (:attr:`Readiness.ready`)."""
        return self.readiness.ready

    def _hold_changed(self) -> None:
        """Decisions held or released: readiness and the fleet report follow at once."""
        self.readiness.changed.set()
        self.status_changed.set()

    def _policy_swapped(self) -> None:
        """A new revision decides: readiness and the fleet report follow it, and the local state is fresh."""
        self.readiness.changed.set()
        self.status_changed.set()
        self.last_update = time.time()

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

    # -- what the feed hands over ----------------------------------------------------------

    def replace_relations(self, index: RelationIndex, cell: str = DEFAULT_CELL) -> None:
        """Swap in a resynchronised index of ``cell`` (snapshot or cold start); the core reads the
        same composite, so this is one reference assignment: a decision in flight keeps the
        index it already read. Call :meth:`relations_advanced` afterwards to wake ``at_least`` waiters.
        """
        self.relations.replace(cell, index)
        self.last_update = time.time()
        if self.settle_heap_on_reload:
            settle_heap()

    async def relations_advanced(self) -> None:
        """Called by the feed after applying a batch: wakes checks waiting on ``at_least``."""
        self.last_update = time.time()
        async with self._seq_changed:
            self._seq_changed.notify_all()

    def replace_trust(self, keys: Iterable[TrustedKey]) -> None:
        """Adopt the plane's token trust set (merged around the own key: :meth:`ExchangeKeys.replace_trust`)
        and forget every cached verification."""
        self.exchange_keys.replace_trust(keys)
        self.last_update = time.time()

    # -- status --------------------------------------------------------------------------

    def staleness(self) -> float:
        return max(0.0, time.time() - self.last_update)

    def status(self) -> dict[str, Any]:
        """``GET /v1/status`` (:func:`authz_sidecar.status.report`)."""
        return report(self)

    def fleet_status(self) -> SidecarStatus:
        """What this instance reports on ``tg.status.<service>`` (:func:`authz_sidecar.status.fleet_report`)."""
        return fleet_report(self)


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


def _sidecar_id(config: SidecarConfig) -> str:
    """``<service>-<host>-<4 random bytes>``: tells replicas and restarts apart in decision records."""
    host = "".join(c for c in socket.gethostname()[:40] if c.isalnum() or c in "-_.") or "host"
    return f"{config.service}-{host}-{os.urandom(4).hex()}"


def _new_id() -> str:
    import uuid

    return uuid.uuid4().hex
