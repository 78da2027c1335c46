"""Clients for every door of a running sidecar, shared by the door tests (real clients only:
httpx for the native and AuthZEN doors, opa-python-client for the OPA Data API, Envoy-shaped
CheckRequests for ext_authz)."""

from __future__ import annotations

from typing import Any

import httpx
from envoy.service.auth.v3 import attribute_context_pb2 as ac
from envoy.service.auth.v3 import external_auth_pb2 as pb
from opa_client.opa import OpaClient
from tenantguard.identity.tokens import mint

from .conftest import World
from .process import SidecarProcess


def token(world: World, sub: str = "alice", tenant: str = "acme", roles: tuple[str, ...] = ("editor",),
          aud: str = "billing", **kw: Any) -> str:
    return mint(world.edge, issuer="edge", sub=sub, tenant_id=tenant, audience=aud, roles=list(roles), **kw)


def invoice(tenant: str, project: str = "p1", action: str = "invoices:read") -> dict[str, Any]:
    return {
        "action": {"name": action},
        "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": tenant, "project": project}},
    }


def native(sc: SidecarProcess, tok: str, q: dict[str, Any]) -> tuple[bool, list[str]]:
    r = httpx.post(f"{sc.base_url}/v1/check", json=q, headers={"Authorization": f"Bearer {tok}"})
    assert r.status_code == 200, r.text
    body = r.json()
    return body["allow"], body["reasons"]


def authzen(sc: SidecarProcess, tok: str, q: dict[str, Any]) -> tuple[bool, list[str]]:
    r = httpx.post(f"{sc.base_url}/access/v1/evaluation", json=q,
                   headers={"Authorization": f"Bearer {tok}", "X-Request-ID": "req-42"})
    assert r.status_code == 200, r.text
    assert r.headers["x-request-id"] == "req-42"
    body = r.json()
    return body["decision"], body.get("context", {}).get("reasons", [])


def opa(sc: SidecarProcess, tok: str, q: dict[str, Any]) -> tuple[bool, list[str]]:
    host, port = sc.http.rsplit(":", 1)
    client = OpaClient(host=host, port=int(port), token=tok)
    try:
        body = client.query_rule(input_data=q, package_path="tenantguard", rule_name="decision")
    finally:
        client.close_connection()
    assert body["decision_id"]
    return body["result"]["allow"], body["result"]["reasons"]


def envoy_request(method: str, path: str, headers: dict[str, str]) -> pb.CheckRequest:
    http = ac.AttributeContext.HttpRequest(method=method, path=path, host="billing.internal", headers=headers,
                                           protocol="HTTP/1.1", scheme="http")
    return pb.CheckRequest(attributes=ac.AttributeContext(request=ac.AttributeContext.Request(http=http)))
