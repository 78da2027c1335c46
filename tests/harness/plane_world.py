"""The world plane replicas start from: event and bundle keys, the admin token and a join secret
(files as an operator writes them), on a given nats-server; ``start()`` runs a replica."""

from __future__ import annotations

from pathlib import Path

from tenantguard.dev.natsserver import NatsServer
from tenantguard.identity.keys import SigningKey, TrustSet, write_private

from .plane_process import PlaneProcess, start_plane

ADMIN_TOKEN = "admin-token-" + "a1" * 16
JOIN_SECRET = "billing-join-" + "b2" * 16


class World:
    """Keys, secret files and one NATS server; ``start()`` runs a plane replica on it."""

    def __init__(self, root: Path, nats_server: NatsServer) -> None:
        self.root = root
        self.nats = nats_server
        self.event_key = SigningKey.generate()
        self.bundle_key = SigningKey.generate()
        self.event_key_file = root / "event.pem"
        self.bundle_key_file = root / "bundle.pem"
        self.event_key.save(self.event_key_file)
        self.bundle_key.save(self.bundle_key_file)
        self.token_file = root / "admin.token"
        write_private(self.token_file, (ADMIN_TOKEN + "\n").encode())
        self.join_file = root / "billing.secret"
        write_private(self.join_file, JOIN_SECRET.encode())
        self.planes: list[PlaneProcess] = []

    def args(self, *extra: str) -> list[str]:
        return ["--nats", self.nats.url, "--event-key", str(self.event_key_file),
                "--bundle-key", str(self.bundle_key_file), "--admin-token-file", str(self.token_file),
                "--join-secret", f"billing={self.join_file}", "--port", "0", "--heartbeat-seconds", "0.5", *extra]

    def start(self, *extra: str) -> PlaneProcess:
        plane = start_plane(self.args(*extra), ADMIN_TOKEN)
        self.planes.append(plane)
        return plane

    def event_trust(self) -> TrustSet:
        trust = TrustSet()
        trust.add_public_key(self.event_key.public_key, "plane")
        return trust
