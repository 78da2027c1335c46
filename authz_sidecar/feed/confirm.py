"""High-risk confirmation for a fed sidecar: fail closed unless the local stores are fresh.

DESIGN.md wants a high-risk allow confirmed "against the authoritative store". This first
step confirms against *freshness*: the feed must be live and the sidecar must have been
in step with the plane (a batch applied, or a heartbeat showing nothing newer) within
``max_staleness_seconds``; the plane's last signed heartbeat must still be unexpired (a
sidecar fed nothing new, or only replays, cannot tell it is frozen otherwise); and no
stream may lag behind what that heartbeat declares for longer than a short grace. A stale,
frozen, lagging or disconnected sidecar therefore refuses high-risk actions while still
answering everything else. A confirmer that asks the plane directly
(one request per high-risk allow, bounded by a timeout) can replace this one later
behind the same :class:`tenantguard.decision.core.HighRiskConfirmer` protocol.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Protocol

from tenantguard.decision.core import DecisionRequest

from .errors import FeedStale

if TYPE_CHECKING:
    from ..runtime import Sidecar


class PlaneHeartbeat(Protocol):
    """What the confirmer reads of the plane's signed heartbeat (``control.PlaneView``)."""

    def believable(self, now: float) -> bool: ...


class FeedProgress(Protocol):
    """What the confirmer reads of the feed (``supervisor.Feed``), named here so that this module
    does not import the supervisor that builds it (the two imported each other for types)."""

    @property
    def plane(self) -> PlaneHeartbeat: ...

    def lagging(self, now: float) -> Collection[str]: ...


class FreshnessConfirmer:
    """Raises :class:`FeedStale` (the core turns it into ``high_risk_unconfirmed``) or returns True."""

    def __init__(self, sidecar: Sidecar, max_staleness_seconds: float, feed: FeedProgress | None = None) -> None:
        self._sidecar = sidecar
        self.max_staleness = max_staleness_seconds
        self._feed = feed

    def confirm(self, request: DecisionRequest, tenant: str) -> bool:
        state = self._sidecar.feed_state
        if state != "live":
            raise FeedStale(f"feed is {state}, not live", feed=state)
        staleness = self._sidecar.staleness()
        if staleness > self.max_staleness:
            raise FeedStale(f"local stores are {staleness:.1f} s old, bound {self.max_staleness:.1f} s",
                            staleness=round(staleness, 3))
        feed = self._feed
        if feed is not None:
            now = time.time()
            if not feed.plane.believable(now):
                raise FeedStale("no unexpired signed heartbeat from the plane: cannot tell fresh from frozen")
            lagging = feed.lagging(now)
            if lagging:
                raise FeedStale(f"behind the plane's heartbeat on {', '.join(sorted(lagging))}",
                                lagging=sorted(lagging))
        return True
