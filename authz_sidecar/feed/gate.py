"""The one door every NATS message goes through: verify against the plane key, or drop and alarm.

Nothing read from NATS is believed before :func:`tenantguard.feed.events.verify_event` accepts
it with the type expected on that subject. A rejection is logged and counted by code in
``tg_events_rejected_total``; it never stops the feed, because a forger who can publish
must not be able to halt the genuine events behind the forgery.
"""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge
from tenantguard.feed.events import PLANE_ISSUER, Event, EventRejected, verify_event
from tenantguard.identity.keys import TrustSet

log = logging.getLogger(__name__)


class FeedMetrics:
    """The feed's own counters, registered on the sidecar's registry (one feed per sidecar)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.events_rejected = Counter("tg_events_rejected", "NATS events refused, by error code",
                                       ["code"], registry=registry)
        self.events_applied = Counter("tg_events_applied", "Verified events applied, by kind",
                                      ["kind"], registry=registry)
        self.events_duplicate = Counter("tg_events_duplicate", "Verified events skipped as already applied",
                                        ["kind"], registry=registry)
        self.resyncs = Counter("tg_feed_resyncs", "Relations snapshots loaded from the plane",
                               registry=registry)
        self.connects = Counter("tg_feed_connects", "NATS connections established", registry=registry)
        self.gaps = Counter("tg_feed_sequence_gaps", "Sequence gaps seen, by kind", ["kind"], registry=registry)
        self.revocations_caught_up = Gauge("tg_revocations_caught_up", "1 once the revocations stream is replayed "
                                           "to the end JetStream reported at the last (re)subscribe (decisions are "
                                           "held while 0)", registry=registry)
        self.slow_consumer = Counter("tg_feed_slow_consumer", "Messages the NATS client dropped (slow consumer), "
                                     "by follower kind", ["kind"], registry=registry)


class EventGate:
    """Verifies with the plane's event key(s) only; the token trust set never signs events."""

    def __init__(self, plane_keys: TrustSet, metrics: FeedMetrics, *, max_bytes: int) -> None:
        self._keys = plane_keys
        self._metrics = metrics
        self._max_bytes = max_bytes
        self.rejected = 0

    @property
    def keys(self) -> TrustSet:
        return self._keys

    def peek(self, data: bytes, expected_type: str) -> Event | None:
        """Verify without alarming: for probing stored messages the consumer will judge (and
        count) itself when they are delivered."""
        try:
            return verify_event(data, self._keys, issuer=PLANE_ISSUER, expected_type=expected_type,
                                max_bytes=self._max_bytes)
        except EventRejected:
            return None

    def verify(self, data: bytes, expected_type: str, *, where: str) -> Event | None:
        """The verified event, or None after logging and counting why it was refused."""
        try:
            return verify_event(data, self._keys, issuer=PLANE_ISSUER, expected_type=expected_type,
                                max_bytes=self._max_bytes)
        except EventRejected as exc:
            self.reject(exc.code, where, exc.message)
            return None

    def reject(self, code: str, where: str, message: str, **detail: Any) -> None:
        """Alarm for one refused message; also used for signed payloads that do not parse."""
        self.rejected += 1
        self._metrics.events_rejected.labels(code).inc()
        log.warning("dropped a message on %s: %s: %s %s", where, code, message[:200], detail or "")
