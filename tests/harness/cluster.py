"""A whole tenantguard deployment of real processes on one nats-server: the plane, sidecars.

Everything is started through the CLI exactly as an operator would: ``tenantguard plane
init`` for keys and secrets, ``tenantguard plane serve``, ``tenantguard bundle publish``,
``tenantguard sidecar serve --nats ... --plane-key ... --plane-url ... --join-secret-file``.
Process output goes to log files under the cluster's directory (no pipe can fill up and
block a process); every process is tracked by PID and killed by PID when the cluster closes.

:mod:`tests.harness.r3_cluster` runs the same processes on a 3-node JetStream cluster with
plane replicas, for the replica and fault tests; this one is for everything a single
server shows (distribution, rollouts, faults of one process, decision records).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from tenantguard.dev.natsserver import NatsServer
from tenantguard.identity.keys import SigningKey
from tenantguard.identity.tokens import mint

from .launch import Proc, launch
from .paths import BUNDLE_DIR, TENANTGUARD

SERVICES = ("orders", "billing", "reports")
GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT = "urn:ietf:params:oauth:token-type:jwt"


def metric(text: str, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` (e.g. ``tg_events_rejected_total``) matching ``labels``."""
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


@dataclass
class Cluster:
    """NATS, one plane replica and the sidecars of :data:`SERVICES`, all real processes."""

    root: Path
    nats: NatsServer
    plane: Proc | None = None
    sidecars: dict[str, Proc] = field(default_factory=dict)
    started: list[Proc] = field(default_factory=list)
    edge: SigningKey = field(default_factory=SigningKey.generate)
    stray: SigningKey = field(default_factory=SigningKey.generate)  # trusted by a local file only
    restarts: int = 0

    # ------------------------------------------------------------------ material

    @property
    def keys(self) -> Path:
        return self.root / "plane"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def admin_token(self) -> str:
        return (self.keys / "admin.token").read_text().strip()

    def join_secret_file(self, service: str) -> Path:
        return self.keys / "join-secrets" / f"{service}.secret"

    def state_dir(self, service: str) -> Path:
        return self.root / "state" / service

    def init_plane_material(self, services: tuple[str, ...]) -> dict[str, Any]:
        """``tenantguard plane init``: event and bundle keys, admin token, one join secret per service."""
        args = [TENANTGUARD, "plane", "init", str(self.keys)]
        for service in services:
            args += ["--service", service]
        done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=True)
        summary: dict[str, Any] = json.loads(done.stdout)
        return summary

    # ------------------------------------------------------------------ processes

    def track(self, proc: Proc) -> Proc:
        self.started.append(proc)
        return proc

    def start_plane(self, services: tuple[str, ...]) -> Proc:
        args = ["plane", "serve", "--nats", self.nats.url, "--event-key", str(self.keys / "event.pem"),
                "--bundle-key", str(self.keys / "bundle.pem"),
                "--admin-token-file", str(self.keys / "admin.token"), "--port", "0", "--heartbeat-seconds", "0.5",
                "--connect-timeout", "2"]
        for service in services:
            args += ["--join-secret", f"{service}={self.join_secret_file(service)}"]
        self.plane = self.track(launch("plane", args, self.logs))
        return self.plane

    def sidecar_args(self, service: str, *extra: str, join_secret_file: Path | None = None) -> list[str]:
        assert self.plane is not None
        return ["sidecar", "serve", "--service", service, "--nats", self.nats.url,
                "--plane-key", str(self.keys / "event.pem.pub"), "--bundle-key", str(self.keys / "bundle.pem.pub"),
                "--plane-url", self.plane.url,
                "--join-secret-file", str(join_secret_file or self.join_secret_file(service)),
                "--state-dir", str(self.state_dir(service)), "--port", "0", "--grpc-port", "0", *extra]

    def start_sidecar(self, service: str, *extra: str, join_secret_file: Path | None = None,
                      name: str | None = None) -> Proc:
        self.restarts += 1
        proc = launch(name or f"sidecar-{service}-{self.restarts}",
                      self.sidecar_args(service, *extra, join_secret_file=join_secret_file), self.logs)
        self.track(proc)
        if name is None:
            self.sidecars[service] = proc
        return proc

    def close(self) -> None:
        """Stop every process this cluster started, by PID; SIGKILL whatever does not exit."""
        for proc in reversed(self.started):
            try:
                proc.stop(timeout=10)
            except Exception:  # keep going: the others must still be stopped
                if proc.alive():
                    os.kill(proc.pid, signal.SIGKILL)
        self.nats.stop()

    def pids(self) -> list[int]:
        pids = [p.pid for p in self.started]
        if self.nats.pid is not None:
            pids.append(self.nats.pid)
        return pids

    # ------------------------------------------------------------------ the plane's API

    def plane_http(self, token: str | None = "admin", timeout: float = 20.0) -> httpx.Client:  # noqa: S107
        assert self.plane is not None
        headers = {"Authorization": f"Bearer {self.admin_token if token == 'admin' else token}"} if token else {}
        return httpx.Client(base_url=self.plane.url, headers=headers, timeout=timeout)

    def write(self, *tuples: str, op: str = "write") -> int:
        """Write tuples (``tenant/object#relation@subject``) as one batch; the consistency token."""
        changes = [{"op": op, "rel": rel(t)} for t in tuples]
        with self.plane_http() as client:
            r = client.post("/v1/relations", json={"changes": changes})
        assert r.status_code == 200, r.text
        return int(r.json()["consistency_token"])

    def try_write(self, *tuples: str) -> httpx.Response:
        with self.plane_http(timeout=30) as client:
            return client.post("/v1/relations", json={"changes": [{"op": "write", "rel": rel(t)} for t in tuples]})

    def plane_digest(self) -> dict[str, Any]:
        with self.plane_http() as client:
            r = client.get("/v1/relations/digest")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def revoke(self, **revocation: Any) -> int:
        with self.plane_http() as client:
            r = client.post("/v1/revocations", json=revocation)
        assert r.status_code == 200, r.text
        return int(r.json()["seq"])

    def jwks(self) -> dict[str, Any]:
        assert self.plane is not None
        body: dict[str, Any] = httpx.get(f"{self.plane.url}/.well-known/jwks.json", timeout=10).json()
        return body

    def plane_status(self) -> dict[str, Any]:
        assert self.plane is not None
        body: dict[str, Any] = httpx.get(f"{self.plane.url}/v1/status", timeout=10).json()
        return body

    def trust_edge_issuer(self) -> None:
        with self.plane_http() as client:
            r = client.post("/v1/trust/issuers", json={"jwk": {**self.edge.public_jwk(), "iss": "edge"}})
        assert r.status_code == 200, r.text

    def publish_bundle_cli(self, revision: str | None = None) -> dict[str, Any]:
        """``tenantguard bundle publish bundles/tenantguard --plane ... --token-file ... [--revision R]``."""
        assert self.plane is not None
        extra = ["--revision", revision] if revision else []
        done = subprocess.run([TENANTGUARD, "bundle", "publish", str(BUNDLE_DIR), "--plane", self.plane.url,
                               "--token-file", str(self.keys / "admin.token"), *extra],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    # ------------------------------------------------------------------ the sidecars

    def url(self, service: str) -> str:
        return self.sidecars[service].url

    def status(self, service: str) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{self.url(service)}/v1/status", timeout=10).json()
        return body

    def digest(self, service: str) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{self.url(service)}/v1/relations/digest", timeout=10).json()
        return body

    def metrics(self, service: str) -> str:
        return httpx.get(f"{self.url(service)}/metrics", timeout=10).text

    def token(self, sub: str, service: str, *, tenant: str = "acme", roles: tuple[str, ...] = ("editor",),
              key: SigningKey | None = None, issuer: str = "edge", age: float = 10.0) -> str:
        """An edge context token for ``service`` issued ``age`` seconds ago (so a revocation cut-off at
        the plane's "now" covers it, whatever the clock's sub-second position)."""
        return mint(key or self.edge, issuer=issuer, sub=sub, tenant_id=tenant, audience=service,
                    roles=list(roles), now=time.time() - age)

    def check(self, service: str, token: str, *, project: str = "p1", tenant: str = "acme",
              action: str = "invoices:read", at_least: int | None = None) -> httpx.Response:
        body: dict[str, Any] = {
            "action": {"name": action},
            "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": tenant, "project": project}},
        }
        if at_least is not None:
            body["at_least"] = at_least
        return httpx.post(f"{self.url(service)}/v1/check", json=body, headers={"Authorization": f"Bearer {token}"},
                          timeout=10)

    def allowed(self, service: str, sub: str, *, project: str = "p1", tenant: str = "acme",
                at_least: int | None = None) -> bool:
        """Does ``service``'s sidecar allow ``sub`` (fresh edge token) to read an invoice of ``project``?"""
        r = self.check(service, self.token(sub, service, tenant=tenant), project=project, tenant=tenant,
                       at_least=at_least)
        if r.status_code == 401:
            return False
        assert r.status_code == 200, r.text
        return bool(r.json()["allow"])

    def exchange(self, service: str, subject_token: str, audience: str, **form: str) -> httpx.Response:
        data = {"grant_type": GRANT, "subject_token": subject_token, "subject_token_type": JWT,
                "audience": audience, **form}
        return httpx.post(f"{self.url(service)}/oauth2/token", data=data, timeout=10)

    def converged(self, services: tuple[str, ...] = SERVICES) -> dict[str, Any] | None:
        """The plane's digest when every sidecar holds exactly it, else None."""
        want = self.plane_digest()
        for service in services:
            if self.digest(service) != want:
                return None
        return want


def tamper(archive: bytes, name: str, old: bytes, new: bytes) -> bytes:
    """The same bundle archive (same ``.signatures.json``) with ``old`` replaced by ``new`` in file ``name``."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as source, \
            tarfile.open(fileobj=out, mode="w:gz") as target:
        for member in source.getmembers():
            handle = source.extractfile(member) if member.isfile() else None
            data = handle.read() if handle is not None else b""
            if member.name.lstrip("/") == name:
                assert old in data, f"{old!r} is not in {name}"
                data = data.replace(old, new)
            member.size = len(data)
            target.addfile(member, io.BytesIO(data))
    return out.getvalue()


def rel(text: str) -> dict[str, str]:
    """The wire form of a tuple written ``tenant/object#relation@subject``."""
    tenant, _, rest = text.partition("/")
    obj_rel, _, subject = rest.partition("@")
    obj, _, relation = obj_rel.partition("#")
    return {"tenant": tenant, "object": obj, "relation": relation, "subject": subject}
