"""Prometheus metrics of one plane replica, on its own registry (tests run several per process)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from tenantguard.server.serving import WireCounts


class _Read(Collector):
    """Values owned by the state and the followers, read at scrape time."""

    def __init__(self, gauges: dict[str, tuple[str, Callable[[], float]]],
                 counters: dict[str, tuple[str, Callable[[], float]]]) -> None:
        self._gauges = gauges
        self._counters = counters

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        for name, (doc, read) in self._gauges.items():
            yield GaugeMetricFamily(name, doc, value=read())
        for name, (doc, read) in self._counters.items():
            yield CounterMetricFamily(name, doc, value=read())


class PlaneMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.relation_changes = Counter("tg_plane_relation_changes", "Relation changes committed by this replica",
                                        registry=self.registry)
        self.writes_refused = Counter(
            "tg_plane_relation_writes_refused", "Relation write batches the active schema refused (422 "
            "tuple_not_allowed; nothing applied), by the rule the first refused tuple broke", ["rule"],
            registry=self.registry)
        self.admin_changes = Counter("tg_plane_admin_changes", "Admin changes, by action", ["action"],
                                     registry=self.registry)
        self.auth_failures = Counter("tg_plane_auth_failures", "Refused credentials, by kind", ["kind"],
                                     registry=self.registry)
        self.snapshots = Counter("tg_plane_snapshots", "Relation snapshots written by this replica",
                                 registry=self.registry)
        self.wire = WireCounts()  # connections the HTTP listener cut (tenantguard.server.serving)
        self.registry.register(self.wire)
        self.rollout_reconciled = Counter(
            "tg_plane_rollout_reconciled", "Scopes of a staged rollout's reached stages that the reconciler of this "
            "replica found without the rollout's bundle, by outcome: announced, superseded (a newer bundle holds "
            "the scope: left alone) or failed (tried again)", ["outcome"], registry=self.registry)

    def read_from(self, gauges: dict[str, tuple[str, Callable[[], float]]],
                  counters: dict[str, tuple[str, Callable[[], float]]]) -> None:
        self.registry.register(_Read(gauges, counters))
