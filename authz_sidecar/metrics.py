"""Prometheus metrics of one sidecar, on a registry of its own (several can share a process)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from tenantguard.server.serving import WireCounts

# Decisions take tens of microseconds; the HTTP stack around them, hundreds.
LATENCY_BUCKETS = (1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 5e-2, 0.25, 1.0)


class _Callbacks(Collector):
    """Values owned elsewhere (verifier cache counters, decision-log drops), read at scrape."""

    def __init__(self, counters: dict[str, tuple[str, Callable[[], float]]],
                 gauges: dict[str, tuple[str, Callable[[], float]]]) -> None:
        self._counters = counters
        self._gauges = gauges

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        for name, (doc, read) in self._counters.items():
            yield CounterMetricFamily(name, doc, value=read())
        for name, (doc, read) in self._gauges.items():
            yield GaugeMetricFamily(name, doc, value=read())


class SidecarMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.decisions = Counter("tg_decisions", "Decisions made, by door and result",
                                 ["door", "result"], registry=self.registry)
        self.latency = Histogram("tg_decision_duration_seconds", "Time to decide, by door (handler only)",
                                 ["door"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.bundles_rejected = Counter("tg_bundles_rejected", "Bundles refused, by error code",
                                        ["code"], registry=self.registry)
        self.bundles_activated = Counter("tg_bundles_activated", "Bundles activated", registry=self.registry)
        self.tokens_rejected = Counter("tg_tokens_rejected", "Context tokens refused, by error code",
                                       ["code"], registry=self.registry)
        self.searches = Counter("tg_search_requests", "Search and lookup requests, by kind and outcome (ok or a code)",
                                ["kind", "outcome"], registry=self.registry)
        self.search_latency = Histogram("tg_search_duration_seconds", "Time to answer one search page, by kind",
                                        ["kind"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.search_decisions = Counter("tg_search_decisions", "Candidates decided by searches, by kind",
                                        ["kind"], registry=self.registry)
        self.search_in_flight = Gauge("tg_search_in_flight", "Search pages running or queued on the search workers",
                                      registry=self.registry)
        self._children: dict[tuple[str, bool], tuple[Any, Any]] = {}
        self.decided = 0  # every door: reported on tg.status.<service> for the console's decision rate
        self.wire = WireCounts()  # connections the HTTP doors and the ops port cut (tenantguard.server.serving)
        self.registry.register(self.wire)
        self.bundle_revision = Gauge("tg_bundle_info", "Active bundle revision (value is always 1)",
                                     ["revision"], registry=self.registry)

    def read_from(self, counters: dict[str, tuple[str, Callable[[], float]]],
                  gauges: dict[str, tuple[str, Callable[[], float]]]) -> None:
        self.registry.register(_Callbacks(counters, gauges))

    def record(self, door: str, allow: bool, seconds: float) -> None:
        """Count one decision; label children are looked up once per (door, result), not per call."""
        children = self._children.get((door, allow))
        if children is None:
            children = (self.decisions.labels(door, "allow" if allow else "deny"), self.latency.labels(door))
            self._children[(door, allow)] = children
        children[0].inc()
        children[1].observe(seconds)
        self.decided += 1

    def set_revision(self, revision: str) -> None:
        self.bundle_revision.clear()
        self.bundle_revision.labels(revision).set(1)
