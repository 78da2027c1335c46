"""The sidecar's NATS feed: the plane's signed events pushed into the local stores.

Layout: :mod:`.supervisor` (connection, sessions, persistence, status), :mod:`.relations`
(snapshot bootstrap, ordered apply, resync), :mod:`.control` (trust, revocations,
bundles, heartbeats), :mod:`.gate` (verification and rejection counters), :mod:`.store`
(cold-start files), :mod:`.confirm` (high-risk freshness check). The NATS names and
shapes are :mod:`tenantguard.feed.topology`.
"""

from .base import FeedOptions
from .confirm import FreshnessConfirmer
from .errors import FeedError, FeedStale, FeedStuck, FeedUnavailable
from .store import FeedStore
from .supervisor import Feed

__all__ = [
    "Feed",
    "FeedError",
    "FeedOptions",
    "FeedStale",
    "FeedStore",
    "FeedStuck",
    "FeedUnavailable",
    "FreshnessConfirmer",
]
