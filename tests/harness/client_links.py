"""Every client's path to every NATS node, and every route between nodes, through its own proxy, so
a test can cut any one of them.

A proxied :class:`~tests.harness.r3_cluster.Deployment` gives each plane replica and each sidecar
its own :class:`~tests.harness.netproxy.NetProxy` per node and hands the client those proxies'
URLs as its ``--nats`` list; the nodes run with ``no_advertise`` so that no client learns a node's
real address from INFO and dials around the proxies. Cutting "sidecar orders from n1" is then
blackholing one proxy; cutting a replica off from all NATS is blackholing its three.

:class:`RouteLinks` does the same for the cluster's routes: node ``i`` dials node ``j`` through its
own proxy ``i->j`` (both directions of a pair are dialled, by each side), and each node advertises
the address of one of the proxies into it, so the address gossiped to the third node leads through
a proxy too and never around them to a node's own route listener. Isolating node ``k`` (a minority
of one) is blackholing every proxy into and out of it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from tenantguard.dev.natscluster import NatsCluster

from .netproxy import NetProxy, Network


@dataclass
class ClientLinks:
    """The proxies of every client (``plane0``, ``orders``, ...), one per node, made on first use."""

    nats: NatsCluster
    network: Network
    links: dict[str, list[NetProxy]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # replicas start in parallel

    def of(self, client: str) -> list[NetProxy]:
        """``client``'s proxies, index = node; kept across the client's restarts (same URLs)."""
        with self._lock:
            if client not in self.links:
                self.links[client] = [
                    self.network.proxy(node.host, node.port, name=f"{client}->n{i}")
                    for i, node in enumerate(self.nats.nodes)]
            return self.links[client]

    def urls(self, client: str) -> str:
        """The ``--nats`` list of ``client``: its proxies, in node order."""
        return ",".join(p.url for p in self.of(client))

    def node_of(self, url: str) -> int | None:
        """The node behind a proxy URL a client reports being attached to (None: not a proxy of ours)."""
        url = url.rstrip("/")
        for proxies in self.links.values():
            for i, proxy in enumerate(proxies):
                if url == proxy.url:
                    return i
        return None

    def cut_off(self, client: str, *nodes: int) -> None:
        """Blackhole ``client``'s paths to ``nodes`` (all nodes when none is named), both ways."""
        for i, proxy in enumerate(self.of(client)):
            if not nodes or i in nodes:
                proxy.blackhole()

    def heal(self, client: str | None = None) -> None:
        """Every path of ``client`` (of every client when None) back to pass."""
        for name, proxies in self.links.items():
            if client is None or name == client:
                for proxy in proxies:
                    proxy.heal()



@dataclass
class RouteLinks:
    """One proxy per ordered pair of nodes, made before the nodes start (their configs name them)."""

    nats: NatsCluster
    network: Network
    pairs: dict[tuple[int, int], NetProxy] = field(default_factory=dict)

    def __post_init__(self) -> None:
        size = len(self.nats.nodes)
        for i in range(size):
            for j in range(size):
                if i != j:
                    self.pairs[i, j] = self.network.proxy("127.0.0.1", self.nats.route_ports[j],
                                                          name=f"route n{i}->n{j}")
        # node j is advertised at the proxy its successor dials it through: any node told of j dials
        # a proxy into j, which an isolation of j cuts like the others
        self.nats.route_through(lambda i, j: self.pairs[i, j].address,
                                lambda j: self.pairs[(j + 1) % size, j].address)

    def isolate(self, node: int) -> None:
        """Cut every route into and out of ``node``, both ways: it is alone, the others keep quorum."""
        for (i, j), proxy in self.pairs.items():
            if node in (i, j):
                proxy.blackhole()

    def heal(self) -> None:
        for proxy in self.pairs.values():
            proxy.heal()
