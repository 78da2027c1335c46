"""The world a search sidecar starts from: a policy with viewer/editor relations, admins and documents
read through their project, relationships across two tenants with colliding ids; and a POST helper."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from tenantguard.bundle import build_bundle
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import mint

from .sidecar_process import SidecarProcess

POLICY = """package tenantguard
import rego.v1

default decision := false

object := concat(":", [input.resource.type, input.resource.id])
subject := concat(":", [input.subject.type, input.subject.id])

decision if {
	input.action.name == "read"
	tg.related(object, "viewer", subject)
}

decision if {
	input.action.name in {"read", "write"}
	tg.related(object, "editor", subject)
}

decision if "admin" in input.subject.properties.roles

# documents are read through their project, a property the relations index does not hold
decision if {
	input.resource.type == "document"
	input.action.name == "read"
	"member" in input.relations[concat(":", ["project", input.resource.properties.project])]
}

search_actions := ["read", "write", "delete"]
"""
RELATIONSHIPS = [
    *(f"acme/doc:d{i}#viewer@user:alice" for i in range(1, 6)),
    "acme/doc:d6#viewer@group:eng#member",
    "acme/group:eng#member@user:alice",
    "acme/group:eng#member@user:bob",
    "acme/doc:d7#editor@user:bob",
    "acme/project:p1#member@user:alice",
    "acme/project:p2#member@group:eng#member",
    "globex/doc:d1#viewer@user:alice",  # another alice, another tenant, a colliding id
    "globex/doc:g1#viewer@user:alice",
]


class SearchWorld:
    def __init__(self, root: Path) -> None:
        self.plane, self.edge = SigningKey.generate(), SigningKey.generate()
        self.plane_pub = self.plane.save(root / "plane.pem")
        trust = TrustSet()
        trust.add_public_key(self.edge.public_key, "edge")
        self.trust_file = root / "trust.json"
        trust.save(self.trust_file)
        source = root / "bundle"
        source.mkdir()
        (source / "policy.rego").write_text(POLICY)
        (source / "data.json").write_text("{}")
        self.bundle_file = root / "bundle.tar.gz"
        self.bundle_file.write_bytes(build_bundle(source, "s1", signing_key=self.plane))
        self.relations_file = root / "relations.json"
        self.relations_file.write_text(json.dumps({"seq": 7, "relationships": RELATIONSHIPS}))

    def args(self, *extra: str) -> list[str]:
        return ["--service", "docs", "--bundle", str(self.bundle_file), "--bundle-key", str(self.plane_pub),
                "--trust", str(self.trust_file), "--relations", str(self.relations_file), "--port", "0",
                "--grpc-port", "0", *extra]

    def token(self, sub: str = "alice", tenant: str = "acme", roles: tuple[str, ...] = ()) -> str:
        return mint(self.edge, issuer="edge", sub=sub, tenant_id=tenant, audience="docs", roles=list(roles))


def post(sc: SidecarProcess, path: str, body: dict[str, Any], token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(sc.base_url + path, json=body, headers=headers, timeout=10)
