"""A whole deployment on a real 3-node JetStream cluster: R3 streams, plane replicas, sidecars.

Everything is a real process started through the CLI (``tenantguard plane init``, ``plane
serve --nats a,b,c --stream-replicas 3``, ``bundle publish``, ``sidecar serve --nats a,b,c``),
tracked and signalled by PID; output goes to log files under the deployment's root.
Used by the replica tests and by the chaos run (``python -m tests.cluster.chaos``);
:mod:`tests.harness.cluster` runs the same processes on a single nats-server.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nats
import nats.errors
import nats.js.errors
from tenantguard.dev.natscluster import NatsCluster
from tenantguard.feed import topology as topo
from tenantguard.feed.events import verify_batch
from tenantguard.identity.keys import SigningKey, TrustSet, load_public_key_file
from tenantguard.identity.tokens import mint
from tenantguard.relations import ChangeBatch

from .client_links import ClientLinks, RouteLinks
from .cluster import rel
from .launch import Proc, launch, pid_alive, signal_proc
from .netproxy import Network
from .paths import BUNDLE_DIR, TENANTGUARD
from .waiting import eventually

SERVICES = ("orders", "billing", "reports")
PLANE_CLIENT = "tenantguard-plane/"  # + replica id: the plane's NATS client name
# a process start bounds a hang only: on two cores shared with other work (load 13) a plane
# restarted in a chaos run took 43 s to import and connect, and was killed at the old 60 s
START_TIMEOUT = 180.0
# lame-duck mode at nats-server's shortest (30 s, not its default 2 minutes): a node asked to
# leave (``--signal ldm``) closes its clients between 1 and 30 s after, then exits
LAME_DUCK = {"lame_duck_grace_period": 1.0, "lame_duck_duration": 30.0}


@dataclass
class Deployment:
    root: Path
    planes_wanted: int = 2
    services: tuple[str, ...] = SERVICES
    nodes: int = 3
    nats: NatsCluster = field(init=False)
    planes: list[Proc] = field(default_factory=list)
    sidecars: dict[str, Proc] = field(default_factory=dict)
    started: list[Proc] = field(default_factory=list)
    edge: SigningKey = field(default_factory=SigningKey.generate)
    launches: int = 0
    nats_options: dict[str, Any] = field(default_factory=lambda: dict(LAME_DUCK))
    # every plane replica and sidecar reaches each node through its own proxy (client_links.py)
    proxied: bool = False
    # every route between two nodes through its own proxy too (client_links.RouteLinks)
    routes_proxied: bool = False
    links: ClientLinks | None = field(init=False, default=None)
    routes: RouteLinks | None = field(init=False, default=None)
    network: Network | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        options = {**self.nats_options, **({"no_advertise": True} if self.proxied else {})}
        self.nats = NatsCluster(self.root / "nats", self.nodes, **options)
        if self.proxied or self.routes_proxied:
            self.network = Network()
        if self.proxied:
            assert self.network is not None
            self.links = ClientLinks(self.nats, self.network)
        if self.routes_proxied:
            assert self.network is not None
            self.routes = RouteLinks(self.nats, self.network)

    def nats_urls(self, client: str) -> str:
        """The ``--nats`` list ``client`` (``plane0``, ``orders``) is started with."""
        return self.links.urls(client) if self.links is not None else self.nats.urls

    def node_of(self, server: str) -> int:
        """The node behind a server URL a client reports (its proxy's, when proxied) or a server name."""
        node = self.links.node_of(server) if self.links is not None else None
        return node if node is not None else self.nats.index_of(server)

    # ------------------------------------------------------------------ paths and material

    @property
    def keys(self) -> Path:
        return self.root / "plane"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def admin_token(self) -> str:
        return (self.keys / "admin.token").read_text().strip()

    def event_trust(self) -> TrustSet:
        trust = TrustSet()
        trust.add_public_key(load_public_key_file(self.keys / "event.pem.pub"), "plane")
        return trust

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Deployment:
        self.nats.start()
        args = [TENANTGUARD, "plane", "init", str(self.keys)]
        for service in self.services:
            args += ["--service", service]
        subprocess.run(args, capture_output=True, text=True, timeout=60, check=True)
        self.planes.append(self._launch_plane(0))  # the first creates the R3 topology
        with ThreadPoolExecutor(4) as pool:
            self.planes += list(pool.map(self._launch_plane, range(1, self.planes_wanted)))
        self.nats.wait_healthy(streams=[topo.STREAM_RELATIONS, topo.STREAM_REVOCATIONS])
        self._admin("POST", "/v1/trust/issuers", json={"jwk": {**self.edge.public_jwk(), "iss": "edge"}})
        done = subprocess.run([TENANTGUARD, "bundle", "publish", str(BUNDLE_DIR), "--plane", self.planes[0].url,
                               "--token-file", str(self.keys / "admin.token")],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        if self.services:
            with ThreadPoolExecutor(len(self.services)) as pool:
                list(pool.map(self.start_sidecar, self.services))
            for service in self.services:
                eventually(lambda s=service: self.sidecar_ready(s), f"sidecar {service} ready", timeout=60)
        return self

    def close(self) -> list[int]:
        """Stop every process by PID (SIGCONT first for stopped ones); the PIDs still alive after."""
        for proc in reversed(self.started):
            try:
                signal_proc(proc, signal.SIGCONT)
                proc.stop(timeout=10)
            except Exception:  # keep going: the others must still be stopped
                if proc.alive():
                    os.kill(proc.pid, signal.SIGKILL)
        pids = [p.pid for p in self.started] + [self.nats.pid(i) or 0 for i in range(self.nodes)]
        self.nats.close()
        if self.network is not None:
            self.network.close()
        return [pid for pid in pids if pid and pid_alive(pid)]

    def __enter__(self) -> Deployment:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ planes

    def plane_args(self, i: int = 0) -> list[str]:
        args = ["plane", "serve", "--nats", self.nats_urls(f"plane{i}"), "--stream-replicas", "3",
                "--event-key", str(self.keys / "event.pem"), "--bundle-key", str(self.keys / "bundle.pem"),
                "--admin-token-file", str(self.keys / "admin.token"), "--port", "0",
                "--heartbeat-seconds", "0.5", "--connect-timeout", "2"]
        for service in self.services:
            args += ["--join-secret", f"{service}={self.keys / 'join-secrets' / f'{service}.secret'}"]
        return args

    def _launch_plane(self, i: int) -> Proc:
        self.launches += 1
        proc = launch(f"plane{i}-{self.launches}", self.plane_args(i), self.logs, timeout=START_TIMEOUT)
        self.started.append(proc)
        return proc

    def restart_plane(self, i: int) -> Proc:
        """Start plane ``i`` again (after it was stopped or killed) on a new port."""
        proc = self._launch_plane(i)
        self.planes[i] = proc
        return proc

    def plane_status(self, i: int) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{self.planes[i].url}/v1/status", timeout=5).json()
        return body

    def plane_ready(self, i: int) -> bool:
        try:
            return httpx.get(f"{self.planes[i].url}/ready", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def plane_client_name(self, i: int) -> str:
        return PLANE_CLIENT + str(self.plane_status(i)["replica"])

    def plane_node(self, i: int) -> int | None:
        """The NATS node plane ``i`` is attached to (None while it is not connected)."""
        server = self.plane_status(i)["nats"]["server"]
        return self.node_of(server) if server else None

    def plane_node_or_none(self, i: int) -> int | None:
        """:meth:`plane_node`, or None while the replica does not answer (cut off, restarting)."""
        try:
            return self.plane_node(i)
        except httpx.HTTPError:
            return None

    def sidecar_node(self, service: str) -> int | None:
        """The NATS node a sidecar's feed is attached to (None between sessions)."""
        detail = self.sidecar_status(service)["feed_detail"]
        return self.node_of(detail["server"]) if detail["connected"] and detail["server"] else None

    def relations_consumer_node(self, i: int) -> int | None:
        return self.nats.consumer_holder(topo.STREAM_RELATIONS, self.plane_client_name(i))

    def _admin(self, method: str, path: str, plane: int = 0, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.admin_token}", **kwargs.pop("headers", {})}
        r = httpx.request(method, f"{self.planes[plane].url}{path}", headers=headers, timeout=30, **kwargs)
        assert r.status_code == 200, r.text
        return r

    def write(self, plane: int, *tuples: str, key: str | None = None, timeout: float = 30.0) -> httpx.Response:
        """POST /v1/relations (one batch of writes) with an Idempotency-Key; the raw response."""
        headers = {"Authorization": f"Bearer {self.admin_token}", "Idempotency-Key": key or uuid.uuid4().hex}
        return httpx.post(f"{self.planes[plane].url}/v1/relations", headers=headers, timeout=timeout,
                          json={"changes": [{"op": "write", "rel": rel(t)} for t in tuples]})

    def revoke(self, plane: int, key: str, **revocation: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.admin_token}", "Idempotency-Key": key}
        return httpx.post(f"{self.planes[plane].url}/v1/revocations", headers=headers, json=revocation, timeout=30)

    def plane_digest(self, i: int) -> dict[str, Any]:
        body: dict[str, Any] = self._admin("GET", "/v1/relations/digest", plane=i).json()
        return body

    # ------------------------------------------------------------------ sidecars

    def sidecar_args(self, service: str) -> list[str]:
        return ["sidecar", "serve", "--service", service, "--nats", self.nats_urls(service),
                "--plane-key", str(self.keys / "event.pem.pub"), "--bundle-key", str(self.keys / "bundle.pem.pub"),
                "--plane-url", self.planes[0].url,
                "--join-secret-file", str(self.keys / "join-secrets" / f"{service}.secret"),
                "--state-dir", str(self.root / "state" / service), "--port", "0", "--grpc-port", "0"]

    def start_sidecar(self, service: str) -> Proc:
        self.launches += 1
        proc = launch(f"sidecar-{service}-{self.launches}", self.sidecar_args(service), self.logs,
                      timeout=START_TIMEOUT)
        self.started.append(proc)
        self.sidecars[service] = proc
        return proc

    def sidecar_status(self, service: str) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{self.sidecars[service].url}/v1/status", timeout=5).json()
        return body

    def sidecar_ready(self, service: str) -> bool:
        status = self.sidecar_status(service)
        return bool(status["ready"]) and "edge" in status["trust"]["issuers"]

    def sidecar_digest(self, service: str) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{self.sidecars[service].url}/v1/relations/digest", timeout=5).json()
        return body

    def token(self, sub: str, service: str, tenant: str = "acme", roles: tuple[str, ...] = ("editor",)) -> str:
        return mint(self.edge, issuer="edge", sub=sub, tenant_id=tenant, audience=service, roles=list(roles),
                    now=time.time() - 10)

    def check(self, service: str, sub: str, *, tenant: str = "acme", project: str = "p1",
              timeout: float = 5.0, action: str = "invoices:read", roles: tuple[str, ...] = ("editor",),
              at_least: int | None = None) -> httpx.Response:
        body: dict[str, Any] = {
            "action": {"name": action},
            "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": tenant, "project": project}}}
        if at_least is not None:
            body["at_least"] = at_least
        return httpx.post(f"{self.sidecars[service].url}/v1/check", json=body, timeout=timeout,
                          headers={"Authorization": f"Bearer {self.token(sub, service, tenant, roles)}"})

    def high_risk(self, service: str) -> httpx.Response:
        """A high-risk action (``export_all``) by an admin member of p1: allowed only on a live, fresh feed."""
        return self.check(service, "alice", action="export_all", roles=("admin",))

    # ------------------------------------------------------------------ convergence

    def digests(self, planes: Iterable[int] | None = None, services: Iterable[str] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i in range(len(self.planes)) if planes is None else planes:
            out[f"plane{i}"] = self.plane_digest(i)
        for service in self.sidecars if services is None else services:
            out[service] = self.sidecar_digest(service)
        return out

    def converged(self) -> dict[str, Any] | None:
        """The common digest when every plane and sidecar holds the same relations, else None."""
        try:
            digests = self.digests()
        except (httpx.HTTPError, AssertionError, KeyError, ValueError):
            return None
        values = list(digests.values())
        return values[0] if all(v == values[0] for v in values) else None

    def stored_batches(self) -> list[tuple[int, ChangeBatch]]:
        """Every relations batch in the stream, verified: (stream seq, batch). Read once the
        cluster is healthy; a read refused while JetStream settles (10008) is read again."""
        deadline = time.monotonic() + 60
        while True:
            self.nats.wait_healthy(timeout=60, streams=[topo.STREAM_RELATIONS])
            try:
                return asyncio.run(asyncio.wait_for(_read_batches(self.nats.urls, self.event_trust()), 120))
            except (nats.js.errors.ServiceUnavailableError, nats.errors.TimeoutError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)


async def _read_batches(urls: str, trust: TrustSet) -> list[tuple[int, ChangeBatch]]:
    async def quiet(_exc: Exception) -> None:
        pass

    nc = await nats.connect(urls.split(","), connect_timeout=2, error_cb=quiet)
    try:
        js = nc.jetstream(timeout=10)
        info = await js.stream_info(topo.STREAM_RELATIONS)
        out = []
        for seq in range(info.state.first_seq or 1, (info.state.last_seq or 0) + 1):
            try:
                msg = await js.get_msg(topo.STREAM_RELATIONS, seq)
            except nats.js.errors.NotFoundError:
                continue
            out.append((seq, verify_batch(msg.data or b"", trust)))
        return out
    finally:
        await nc.close()
