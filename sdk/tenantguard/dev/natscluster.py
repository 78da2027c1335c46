"""A local JetStream cluster of real nats-server processes, for fault tests and benchmarks.

:class:`NatsCluster` runs N :class:`~tenantguard.dev.natsserver.NatsServer` nodes on loopback:
each with a unique ``server_name`` (``n0``, ``n1``, ...), its own store directory, and a
``cluster {}`` block naming every node's route port. Route ports must be known before
any node starts (every config lists all of them), so they are picked up front, together with
every node's client and monitoring port (all distinct: were those left to the servers, one
node could take a port another node's route is about to listen on), by binding and closing
the socket. They are drawn at random below the kernel's ephemeral range, where no ``bind(0)``
and no outgoing connection's source port ever lands, so busy neighbours (parallel test
workers) take none of them between the pick and the node's bind, nor while a killed node is
down. What is left (another process picking the same port in that window) shows as a start
failure with the node's log. Ports are kept across restarts, so clients with the cluster's
server list (:attr:`NatsCluster.urls`) find a restarted node at the same URL.

Faults are addressed by node index and delivered by PID: :meth:`stop` (SIGTERM),
:meth:`kill` (SIGKILL), :meth:`restart`, :meth:`pause` / :meth:`resume` (SIGSTOP /
SIGCONT: a node that is alive to the kernel, so its TCP connections stay open, but
answers nothing). :meth:`wait_healthy` returns once JetStream has a meta leader that
every running node agrees on and every running node's ``/healthz`` answers 200.

Where things live: :meth:`stream_leader` and :meth:`consumer_leaders` read the
monitoring endpoint ``/jsz`` (the leader's own view wins: a node that was paused may
still believe it leads), :meth:`connections` reads ``/connz`` with subscriptions, so a
test can find which node holds a given client's consumer (its deliver subject).
The methods block (subprocesses and HTTP probes); call them from async code through
``asyncio.to_thread``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

from tenantguard.dev.natsserver import NatsServer, NatsServerStartFailed
from tenantguard.feed.natsconfig import NatsRoutes, NatsServerError

DEFAULT_CLUSTER_NAME: Final = "tenantguard"
_PROBE_TIMEOUT: Final = 1.0
_POLL: Final = 0.05


@dataclass(frozen=True, slots=True)
class ConsumerPlace:
    """One JetStream consumer as the monitoring endpoint reports it."""

    stream: str
    name: str
    leader: str | None  # server_name of the node holding it
    deliver_subject: str | None
    replicas: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Connection:
    """One client connection of a node (``/connz``): its name and subscribed subjects."""

    node: str
    cid: int
    name: str
    subjects: tuple[str, ...]


class NatsCluster:
    """N local nats-server processes forming one JetStream cluster; see the module docstring."""

    def __init__(self, root: str | os.PathLike[str], size: int = 3, *, name: str = DEFAULT_CLUSTER_NAME,
                 host: str = "127.0.0.1", no_advertise: bool = False, **server_options: Any) -> None:
        if size < 1:
            raise NatsServerError("a cluster needs at least one node")
        self.root = Path(root).resolve()
        self.name = name
        self.host = host
        # every port of every node at once: distinct, so no node's port can be another's route
        ports = _free_ports(host, 3 * size)
        route_ports, client_ports, monitor_ports = ports[:size], ports[size:2 * size], ports[2 * size:]
        self.route_ports = tuple(route_ports)
        routes = tuple(f"nats-route://{host}:{p}" for p in route_ports)
        self.nodes = [
            NatsServer(self.root / f"n{i}", host=host, port=client_ports[i], monitor_port=monitor_ports[i],
                       server_name=f"n{i}", cluster=NatsRoutes(name, route_ports[i], routes, no_advertise=no_advertise),
                       **server_options)
            for i in range(size)
        ]
        self._paused: set[int] = set()

    # ------------------------------------------------------------------ addresses

    @property
    def urls(self) -> str:
        """Every node's client URL, comma-separated: what ``--nats`` takes."""
        return ",".join(node.url for node in self.nodes)

    def server_name(self, i: int) -> str:
        return f"n{i}"

    def index_of(self, server: str) -> int:
        """The node index of a server_name (``n1``) or a client URL (``nats://127.0.0.1:PORT``)."""
        for i, node in enumerate(self.nodes):
            if server == self.server_name(i) or (node.port and server.rstrip("/") == node.url):
                return i
        raise NatsServerError(f"{server!r} is no node of this cluster")

    def route_through(self, dial: Callable[[int, int], str], advertise: Callable[[int], str]) -> None:
        """Before the nodes start: node ``i`` dials node ``j``'s route at ``dial(i, j)`` (``host:port``)
        and tells its peers to find it at ``advertise(i)``: each route can then run through its own
        proxy (a partition test), and the address gossiped to the others leads where the test says,
        never around the proxies to the node's own listener."""
        for i, node in enumerate(self.nodes):
            assert node.cluster is not None
            routes = tuple(f"nats-route://{dial(i, j)}" for j in range(len(self.nodes)) if j != i)
            node.cluster = replace(node.cluster, routes=routes, advertise=advertise(i))

    def pid(self, i: int) -> int | None:
        return self.nodes[i].pid

    def running(self) -> list[int]:
        """Indexes of nodes that are up and not paused."""
        return [i for i, n in enumerate(self.nodes) if n.running and i not in self._paused]

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 30.0) -> Self:
        """Launch every node together, then wait until the cluster is healthy."""
        for node in self.nodes:
            node.spawn()
        try:
            for node in self.nodes:
                node.wait_ready(max(1.0, timeout))
            self.wait_healthy(timeout)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop every node (a paused one is resumed first so that SIGTERM reaches it)."""
        for i in list(self._paused):
            self.resume(i)
        for node in self.nodes:
            node.stop(timeout=5.0)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def stop(self, i: int, timeout: float = 5.0) -> None:
        self.resume(i)
        self.nodes[i].stop(timeout)

    def kill(self, i: int) -> None:
        """SIGKILL node ``i``: no goodbye to peers or clients."""
        self._paused.discard(i)
        self.nodes[i].kill()

    def start_node(self, i: int, timeout: float = 30.0) -> None:
        """Start a stopped or killed node on its ports and store, and wait until it is healthy
        (``/healthz`` 200: it has caught up with the meta leader and its streams)."""
        self.nodes[i].start(timeout)

    def lame_duck(self, i: int) -> None:
        """Lame-duck mode for node ``i`` (``nats-server --signal ldm=PID``); it exits by itself at
        the end of its ``lame_duck_duration`` (see :meth:`NatsServer.lame_duck`)."""
        self.nodes[i].lame_duck()

    def wait_exited(self, i: int, timeout: float = 60.0) -> None:
        self._paused.discard(i)
        self.nodes[i].wait_exited(timeout)

    def restart(self, i: int, timeout: float = 30.0) -> None:
        self.stop(i)
        self.start_node(i, timeout)

    def pause(self, i: int) -> None:
        """SIGSTOP node ``i``: its sockets stay open, it answers nothing (a hung node)."""
        pid = self.nodes[i].pid
        if pid is None or not self.nodes[i].running:
            raise NatsServerError(f"node n{i} is not running")
        os.kill(pid, signal.SIGSTOP)
        self._paused.add(i)

    def resume(self, i: int) -> None:
        """SIGCONT a paused node."""
        pid = self.nodes[i].pid
        if i in self._paused and pid is not None:
            os.kill(pid, signal.SIGCONT)
        self._paused.discard(i)

    # ------------------------------------------------------------------ health

    def wait_healthy(self, timeout: float = 30.0, *, streams: Iterable[str] = ()) -> str:
        """Return the meta leader once every running node is healthy and agrees on it, and every
        stream of ``streams`` has a leader with all its replicas current; bounded by ``timeout``."""
        wanted = tuple(streams)
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            try:
                leader = self._healthy_leader()
                if leader is not None and all(self._stream_settled(s) for s in wanted):
                    return leader
                last = leader
            except NatsServerError as exc:
                last = exc
            if time.monotonic() > deadline:
                tails = "\n".join(f"--- n{i}:\n{n.log_tail(1500)}" for i, n in enumerate(self.nodes) if n.pid)
                raise NatsServerStartFailed(f"cluster not healthy within {timeout:g}s (last: {last}):\n{tails}")
            time.sleep(_POLL)

    def _healthy_leader(self) -> str | None:
        leaders = set()
        running = self.running()
        if not running:
            return None
        for i in running:
            if _get_status(f"{self.nodes[i].monitor_url}/healthz") != 200:
                return None
            meta = (self.jsz(i).get("meta_cluster") or {})
            leaders.add(meta.get("leader"))
        if len(leaders) != 1:
            return None
        (leader,) = leaders
        return leader if leader else None

    def _stream_settled(self, stream: str) -> bool:
        info = self.stream_cluster(stream)
        if not info or not info.get("leader"):
            return False
        return all(r.get("current") for r in info.get("replicas") or [])

    # ------------------------------------------------------------------ where things are

    def jsz(self, i: int, **query: str) -> dict[str, Any]:
        """``/jsz`` of node ``i`` (``streams``, ``consumers``, ``config`` query flags)."""
        q = "&".join(f"{k}={v}" for k, v in query.items())
        return _get_json(f"{self.nodes[i].monitor_url}/jsz{'?' + q if q else ''}")

    def _stream_details(self) -> list[tuple[int, dict[str, Any]]]:
        out = []
        for i in self.running():
            try:
                body = self.jsz(i, streams="true", consumers="true", config="true")
            except NatsServerError:
                continue
            for account in body.get("account_details") or []:
                for stream in account.get("stream_detail") or []:
                    out.append((i, stream))
        return out

    def stream_cluster(self, stream: str) -> dict[str, Any] | None:
        """The ``cluster`` section of ``stream`` as its leader reports it (None: no leader seen)."""
        fallback = None
        for i, detail in self._stream_details():
            if detail.get("name") != stream:
                continue
            cluster: dict[str, Any] = detail.get("cluster") or {}
            if cluster.get("leader") == self.server_name(i):
                return cluster
            fallback = fallback or cluster
        return fallback

    def stream_last_seq(self, stream: str) -> int | None:
        """The last sequence stored in ``stream``, as its leader reports it (None: no leader seen)."""
        for i, detail in self._stream_details():
            if detail.get("name") == stream and (detail.get("cluster") or {}).get("leader") == self.server_name(i):
                return int((detail.get("state") or {}).get("last_seq") or 0)
        return None

    def stream_leader(self, stream: str) -> int | None:
        """Index of the node leading ``stream`` (None while it has no leader)."""
        cluster = self.stream_cluster(stream)
        leader = cluster.get("leader") if cluster else None
        return self.index_of(leader) if leader else None

    def consumer_leaders(self, stream: str) -> list[ConsumerPlace]:
        """Every consumer of ``stream``, with the node holding it, as each leader reports it."""
        found: dict[str, ConsumerPlace] = {}
        for i, detail in self._stream_details():
            if detail.get("name") != stream:
                continue
            for consumer in detail.get("consumer_detail") or []:
                cluster = consumer.get("cluster") or {}
                leader = cluster.get("leader")
                place = ConsumerPlace(stream, consumer.get("name", ""), leader,
                                      (consumer.get("config") or {}).get("deliver_subject"),
                                      tuple(r.get("name", "") for r in cluster.get("replicas") or []))
                if leader == self.server_name(i) or place.name not in found:
                    found[place.name] = place
        return list(found.values())

    def connections(self, name: str | None = None) -> list[Connection]:
        """Client connections of every running node (optionally only those called ``name``)."""
        out = []
        for i in self.running():
            try:
                body = _get_json(f"{self.nodes[i].monitor_url}/connz?subs=true&limit=1024")
            except NatsServerError:
                continue
            for conn in body.get("connections") or []:
                if name is not None and conn.get("name") != name:
                    continue
                out.append(Connection(self.server_name(i), int(conn.get("cid", 0)), conn.get("name", ""),
                                      tuple(conn.get("subscriptions_list") or ())))
        return out

    def consumer_holder(self, stream: str, client_name: str) -> int | None:
        """Index of the node holding a consumer of ``stream`` that delivers to the client
        connection called ``client_name`` (None when none is found right now)."""
        subjects = {s for c in self.connections(client_name) for s in c.subjects}
        for place in self.consumer_leaders(stream):
            if place.deliver_subject in subjects and place.leader:
                return self.index_of(place.leader)
        return None

    def __repr__(self) -> str:
        return f"NatsCluster(name={self.name!r}, nodes={[n.pid for n in self.nodes]}, root={str(self.root)!r})"


def _free_ports(host: str, count: int) -> list[int]:
    """``count`` distinct ports free right now, at random from :func:`_fixed_port_range`
    (bound and released together, so none repeats)."""
    low, high = _fixed_port_range()
    rng = random.SystemRandom()
    sockets: list[socket.socket] = []
    try:
        for _ in range(20 * count):
            if len(sockets) == count:
                break
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((host, rng.randrange(low, high)))
            except OSError:  # taken (or one of ours already): draw again
                s.close()
                continue
            sockets.append(s)
        if len(sockets) < count:
            raise NatsServerError(f"found only {len(sockets)} of {count} free ports in {low}-{high - 1} on {host}")
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _fixed_port_range() -> tuple[int, int]:
    """``[low, high)``: ports below the kernel's ephemeral range (Linux: 32768 and up by default),
    which only an explicit bind ever takes; starting at 20000 keeps clear of well-known services."""
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    if ephemeral_low < 21000:  # an unusual setting: fall back to the top of the port space
        return 61000, 65536
    return 20000, ephemeral_low


def _get_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=_PROBE_TIMEOUT) as resp:  # noqa: S310 - loopback monitor URL
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)
    except OSError:
        return 0


def _get_json(url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=_PROBE_TIMEOUT) as resp:  # noqa: S310 - loopback monitor URL
            body: dict[str, Any] = json.loads(resp.read())
            return body
    except (OSError, ValueError) as exc:
        raise NatsServerError(f"monitoring endpoint {url} did not answer ({type(exc).__name__})") from None
