"""The world one sidecar starts from: keys, the example bundle signed, a trust file, and relations
for two tenants whose object ids collide (acme and globex both have project p1 and invoice inv-1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tenantguard.bundle import build_bundle
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import mint

from .paths import BUNDLE_DIR

RELATIONSHIPS = [
    "acme/project:p1#member@user:alice",
    "acme/group:eng#member@user:bob",
    "acme/project:p2#member@group:eng#member",
    "globex/project:p1#member@user:mallory",
    "globex/project:p1#member@user:alice",  # a different alice, in another tenant
    "acme/project:p8#member@group:carol",  # a group whose id is also a user's sub
]


class World:
    """Keys and files one sidecar needs, and the edge key that mints user tokens."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.plane = SigningKey.generate()
        self.edge = SigningKey.generate()
        self.plane_pub = self.plane.save(root / "plane.pem")
        trust = TrustSet()
        trust.add_public_key(self.edge.public_key, "edge")
        self.trust_file = root / "trust.json"
        trust.save(self.trust_file)
        self.bundle_file = root / "bundle.tar.gz"
        self.bundle_file.write_bytes(build_bundle(BUNDLE_DIR, "1", signing_key=self.plane))
        self.relations_file = root / "relations.json"
        self.relations_file.write_text(json.dumps({"seq": 7, "relationships": RELATIONSHIPS}))

    def args(self, service: str = "billing", *extra: str) -> list[str]:
        return ["--service", service, "--bundle", str(self.bundle_file), "--bundle-key", str(self.plane_pub),
                "--trust", str(self.trust_file), "--relations", str(self.relations_file),
                "--port", "0", "--grpc-port", "0", *extra]


def token(world: World, sub: str = "alice", tenant: str = "acme", roles: tuple[str, ...] = ("editor",),
          aud: str = "billing", **kw: Any) -> str:
    """An edge context token of ``world`` (alice, acme, editor, for billing unless told otherwise)."""
    return mint(world.edge, issuer="edge", sub=sub, tenant_id=tenant, audience=aud, roles=list(roles), **kw)
