"""Decision records as a sidecar publishes them to TG_DECISIONS (or as an attacker with NATS access
could): the wire form, and a raw JetStream publish on ``tg.decisions.<service>.<tenant>``."""

from __future__ import annotations

import json
from typing import Any

from tenantguard.feed import topology as topo

from .nats_raw import publish_js
from .plane_world import World


def record(i: int, *, tenant: str | None = "acme", service: str = "billing", allow: bool = True,
           **extra: Any) -> dict[str, Any]:
    return {"v": 2, "decision_id": f"d{i:04d}", "time": 1_700_000_000.0 + i, "service": service, "tenant": tenant,
            "subject": "user:alice", "action": "invoices:read", "resource": f"invoice:i{i}", "allow": allow,
            "reasons": [] if allow else ["not_project_member"], "bundle_revision": "r1", "relations_seq": 0,
            "path": "data.tenantguard.decision", "latency_us": 12, "door": "native", "sidecar": "billing-a",
            "actor_chain": [], "act_as": False, "high_risk": False,
            "token": {"jti": f"j{i}", "iss": "edge", "kid": "k1"},
            "input": {"subject": {"type": "user", "id": "alice", "properties": {"tenant_id": tenant}},
                      "action": {"name": "invoices:read"}, "resource": {"type": "invoice", "id": f"i{i}"},
                      "context": {"service": service}, "token": {"jti": f"j{i}", "iss": "edge", "kid": "k1"},
                      "actor_chain": []}} | extra


def publish(world: World, records: list[dict[str, Any]], *, service: str = "billing",
            tenant: str | None = "acme") -> None:
    publish_js(world.nats.url, topo.decisions_subject(service, tenant), json.dumps({"decisions": records}).encode())
