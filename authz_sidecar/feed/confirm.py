"""High-risk confirmation for a fed sidecar: fail closed unless the local stores are fresh.

DESIGN.md wants a high-risk allow confirmed "against the authoritative store". This first
step confirms against *freshness*: the feed must be live and the sidecar must have been
in step with the plane (a batch applied, or a heartbeat showing nothing newer) within
``max_staleness_seconds``. A stale or disconnected sidecar therefore refuses high-risk
actions while still answering everything else. A confirmer that asks the plane directly
(one request per high-risk allow, bounded by a timeout) can replace this one later
behind the same :class:`tenantguard.decision.HighRiskConfirmer` protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tenantguard.decision import DecisionRequest

from .errors import FeedStale

if TYPE_CHECKING:
    from ..runtime import Sidecar


class FreshnessConfirmer:
    """Raises :class:`FeedStale` (the core turns it into ``high_risk_unconfirmed``) or returns True."""

    def __init__(self, sidecar: Sidecar, max_staleness_seconds: float) -> None:
        self._sidecar = sidecar
        self.max_staleness = max_staleness_seconds

    def confirm(self, request: DecisionRequest, tenant: str) -> bool:
        state = self._sidecar.feed_state
        if state != "live":
            raise FeedStale(f"feed is {state}, not live", feed=state)
        staleness = self._sidecar.staleness()
        if staleness > self.max_staleness:
            raise FeedStale(f"local stores are {staleness:.1f} s old, bound {self.max_staleness:.1f} s",
                            staleness=round(staleness, 3))
        return True
