"""The sidecar's request guard settings (the middleware itself is ``tenantguard.server.asgi.RequestGuard``).

The sidecar answers its own service only: callers off loopback are refused, except on
the paths a kubelet or a metrics scraper must reach.
"""

from __future__ import annotations

OPEN_PATHS = frozenset({"/health", "/health/live", "/health/ready", "/ready", "/metrics"})
# The token endpoint's clients read RFC 6749 errors, including the guard's refusals.
OAUTH_PATHS = frozenset({"/oauth2/token"})
