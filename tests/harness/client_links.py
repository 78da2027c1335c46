"""Every client's path to every NATS node through its own proxy, so a test can cut any one of them.

A proxied :class:`~tests.harness.r3_cluster.Deployment` gives each plane replica and each sidecar
its own :class:`~tests.harness.netproxy.NetProxy` per node and hands the client those proxies'
URLs as its ``--nats`` list; the nodes run with ``no_advertise`` so that no client learns a node's
real address from INFO and dials around the proxies. Cutting "sidecar orders from n1" is then
blackholing one proxy; cutting a replica off from all NATS is blackholing its three.
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
    network: Network = field(default_factory=Network)
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

    def close(self) -> None:
        self.network.close()
