"""Several real sidecar processes that trust each other's exchange keys.

Each sidecar has its own signing key under its state dir; the mesh writes one trust
file per sidecar listing the edge issuer and every other sidecar's public key.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from tenantguard.exchange import load_or_create_signing_key
from tenantguard.feed.topology import sidecar_issuer
from tenantguard.identity.keys import SigningKey, TrustSet

from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World

TOKEN_URL = "/oauth2/token"
GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT = "urn:ietf:params:oauth:token-type:jwt"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"


def drain(proc: SidecarProcess) -> None:
    """Keep reading the sidecar's stderr so its log can never fill the pipe and block it."""
    stream = proc.proc.stderr
    if stream is not None:
        threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()


class Mesh:
    """Sidecars by service name, built from a :class:`World` (bundle, relations, edge key)."""

    def __init__(self, world: World, services: dict[str, list[str]]) -> None:
        self.world = world
        self.services = services  # service -> extra CLI args
        self.running: dict[str, SidecarProcess] = {}
        self.jwks: dict[str, dict[str, Any]] = {}

    def state_dir(self, service: str) -> Path:
        return self.world.root / "state" / service

    def trust_file(self, service: str) -> Path:
        return self.world.root / f"trust-{service}.json"

    def exchange_key(self, service: str) -> SigningKey:
        """The sidecar's private key, read from its state dir: what an attacker who stole it holds."""
        return SigningKey.load(self.state_dir(service) / "exchange" / "signing-key.pem")

    def args(self, service: str) -> list[str]:
        trust = self.trust_file(service) if self.trust_file(service).exists() else self.world.trust_file
        base = self.world.args(service, "--state-dir", str(self.state_dir(service)))
        base[base.index("--trust") + 1] = str(trust)
        return [*base, *self.services[service]]

    def start_all(self) -> None:
        with ThreadPoolExecutor(len(self.services)) as pool:
            started = dict(zip(self.services, pool.map(lambda s: start_sidecar(self.args(s)), self.services),
                               strict=True))
        for proc in started.values():
            drain(proc)
        self.running = started

    def stop_all(self) -> None:
        with ThreadPoolExecutor(max(1, len(self.running))) as pool:
            list(pool.map(SidecarProcess.stop, self.running.values()))
        self.running = {}

    def build_trust(self) -> None:
        """Create each sidecar's key where it keeps it (the sidecar's own function, run before
        its first start, which then loads it); each sidecar trusts the edge and every other one.
        (test_sidecar_keys covers a sidecar generating its key itself and keeping it.)"""
        for service in self.services:
            key = load_or_create_signing_key(self.state_dir(service))
            self.jwks[service] = {"keys": [{**key.public_jwk(), "iss": sidecar_issuer(service)}]}
        base = json.loads(self.world.trust_file.read_text())
        for service in self.services:
            peers = [k for other, doc in self.jwks.items() if other != service for k in doc["keys"]]
            TrustSet.from_jwks({"keys": [*base["keys"], *peers]}).save(self.trust_file(service))
        self.start_all()

    def url(self, service: str) -> str:
        return self.running[service].base_url

    def exchange(self, service: str, subject_token: str, audience: str | None = None, *,
                 token_type: str = JWT, auth: tuple[str, str] | None = None, **params: str) -> httpx.Response:
        form = {"grant_type": GRANT, "subject_token": subject_token, "subject_token_type": token_type, **params}
        if audience is not None:
            form["audience"] = audience
        return httpx.post(self.url(service) + TOKEN_URL, data=form, auth=auth)

    def check(self, service: str, token: str, action: str, resource: dict[str, Any],
              **body: Any) -> httpx.Response:
        return httpx.post(f"{self.url(service)}/v1/check", headers={"Authorization": f"Bearer {token}"},
                          json={"action": {"name": action}, "resource": resource, **body})
