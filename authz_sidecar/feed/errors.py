"""Typed errors of the sidecar's NATS feed; each says whether waiting can help."""

from __future__ import annotations

from tenantguard.errors import GRPC_FAILED_PRECONDITION, GRPC_UNAVAILABLE, TenantGuardError


class FeedError(TenantGuardError):
    """The feed cannot do what was asked right now; decisions go on from the local stores."""

    code = "feed_error"
    http_status = 503
    grpc_status = GRPC_UNAVAILABLE
    retryable = True


class FeedUnavailable(FeedError):
    """No connection to NATS at the moment (the feed reconnects in the background)."""

    code = "feed_unavailable"


class FeedStuck(FeedError):
    """The next relations sequence is no longer in the stream and no newer snapshot exists.

    Replaying cannot help; the plane has to publish a snapshot. The feed keeps retrying
    with backoff and reports ``resyncing`` meanwhile.
    """

    code = "feed_stuck"
    grpc_status = GRPC_FAILED_PRECONDITION


class FeedStale(FeedError):
    """The local stores are older than the configured bound (or not live): high risk fails closed."""

    code = "feed_stale"
    grpc_status = GRPC_FAILED_PRECONDITION
