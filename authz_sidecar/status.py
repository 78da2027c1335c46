"""What a sidecar reports about itself: ``/v1/status``, ``tg.status.<service>`` and the
metrics read at scrape time.

Reports only read; nothing here changes a sidecar. They read it through :class:`Reported`,
so this module does not import the runtime that calls it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from tenantguard.decision.core import DecisionCore, PolicyRevision
from tenantguard.decision.verdicts import VerdictMemo
from tenantguard.identity.keys import TrustSet
from tenantguard.identity.tokens import TokenVerifier
from tenantguard.relations import CellRelations
from tenantguard.rollout import SidecarStatus
from tenantguard.rollout.shadow import REPORTED_EXAMPLES

from .config import SidecarConfig
from .decision_log import DecisionLog
from .exchange_keys import ExchangeKeys
from .metrics import SidecarMetrics
from .pep import PepKeys
from .policy_slot import PolicySlot
from .readiness import Readiness


class Reported(Protocol):
    """What the reports read of a sidecar (:class:`authz_sidecar.runtime.Sidecar`)."""

    config: SidecarConfig
    core: DecisionCore
    relations: CellRelations
    policy: PolicySlot
    readiness: Readiness
    exchange_keys: ExchangeKeys
    trust: TrustSet
    pep_keys: PepKeys | None
    verifier: TokenVerifier
    memo: VerdictMemo | None
    decision_log: DecisionLog
    metrics: SidecarMetrics
    feed_state: str
    feed_status: Callable[[], dict[str, Any]] | None
    trust_seq: int
    revocations_seq: int
    started_at: float
    instance: str

    def staleness(self) -> float: ...


def report(sidecar: Reported) -> dict[str, Any]:
    """The body of ``GET /v1/status``."""
    config, relations, keys = sidecar.config, sidecar.relations, sidecar.exchange_keys
    return {
        "service": config.service,
        "ready": sidecar.readiness.ready,  # as /ready: a held core (revocations not replayed) is not ready
        "bundle_revision": sidecar.policy.bundle_revision,
        "decision_entrypoint": sidecar.policy.decision_entrypoint,
        "relations_seq": relations.applied_seq,
        "relations_count": relations.count(),
        "relations": {**relations.scope.to_wire(), "cell_seqs": relations.seqs(),
                      "bootstrapped": sorted(sidecar.readiness.cells_bootstrapped, key=lambda c: int(c[1:]))},
        "not_ready": sidecar.readiness.reason(),
        "staleness_seconds": round(sidecar.staleness(), 3),
        "feed": sidecar.feed_state,
        "feed_detail": sidecar.feed_status() if sidecar.feed_status is not None else None,
        "trusted_keys": len(sidecar.trust),
        "trust": keys.status(),
        "registration": keys.registrar.status() if keys.registrar is not None else None,
        "tenancy": {"tenant": config.tenant, "pep_keys": len(sidecar.pep_keys.keys) if sidecar.pep_keys else 0,
                    "require_token": config.require_token},
        "token_cache": {"hits": sidecar.verifier.cache_hits, "misses": sidecar.verifier.cache_misses},
        "decision_memo": memo_status(sidecar.memo, sidecar.core.active),
        "decision_log": sidecar.decision_log.stats(),
        "shadow": sidecar.policy.shadow.stats(),
        "uptime_seconds": round(time.time() - sidecar.started_at, 3),
    }


def fleet_report(sidecar: Reported) -> SidecarStatus:
    """What this instance reports on ``tg.status.<service>`` (``tenantguard.rollout.fleet``)."""
    active = sidecar.policy.bundles.active
    return SidecarStatus(service=sidecar.config.service, instance=sidecar.instance,
                         bundle_revision=sidecar.policy.bundle_revision,
                         bundle_serial=active.order if active is not None else None,
                         bundle_sha256=sidecar.policy.active_sha256(),
                         relations_seq=sidecar.relations.applied_seq, ready=sidecar.readiness.ready,
                         sent_at=time.time(),
                         shadow=sidecar.policy.shadow.stats(examples=REPORTED_EXAMPLES),
                         staleness_seconds=round(sidecar.staleness(), 3), trust_seq=sidecar.trust_seq,
                         revocations_seq=sidecar.revocations_seq, decisions=sidecar.metrics.decided)


def memo_status(memo: VerdictMemo | None, active: PolicyRevision | None) -> dict[str, Any]:
    """Verdict memo counters, and whether the active policy may use it at all."""
    if memo is None:
        return {"enabled": False, "reason": "disabled (--decision-memo 0)"}
    if active is not None and not getattr(active.policy, "pure", False):
        return {"enabled": False, "reason": "the policy reads the clock, chance or the network",
                "impure_builtins": list(getattr(active.policy, "impure_builtins", ())), **memo.stats()}
    return {"enabled": True, **memo.stats()}


def read_metrics(sidecar: Reported) -> None:
    """Register the metrics read from the sidecar's parts at scrape time (nothing counts twice)."""
    sidecar.metrics.read_from(
        counters={
            "tg_token_cache_hits": ("Verified-token cache hits", lambda: sidecar.verifier.cache_hits),
            "tg_token_cache_misses": ("Verified-token cache misses", lambda: sidecar.verifier.cache_misses),
            "tg_decision_log_dropped": ("Decision log records dropped (queue full, NATS down, not acked)",
                                        lambda: sidecar.decision_log.dropped),
            "tg_decision_log_sampled_out": ("Decisions not logged by sampling",
                                            lambda: sidecar.decision_log.sampled_out),
            "tg_decision_memo_hits": ("Decisions that reused a memoized policy verdict",
                                      lambda: sidecar.memo.hits if sidecar.memo else 0),
            "tg_decision_memo_misses": ("Memoizable decisions that evaluated the policy",
                                        lambda: sidecar.memo.misses if sidecar.memo else 0),
        },
        gauges={
            "tg_staleness_seconds": ("Seconds since the last bundle or relations update", sidecar.staleness),
            "tg_relations_seq": ("Applied relations sequence", lambda: sidecar.relations.applied_seq),
            "tg_ready": ("1 when this sidecar can decide, as /ready (a verified bundle is active, its cells are "
                         "loaded and nothing holds decisions)", lambda: 1.0 if sidecar.readiness.ready else 0.0),
        },
    )
