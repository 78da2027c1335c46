"""Clients for every door of a sidecar, shared by the door tests (real clients only: httpx for the
native and AuthZEN doors, opa-python-client for the OPA Data API, Envoy-shaped CheckRequests for
ext_authz over gRPC, and an in-process ASGI client for the served app)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from envoy.config.core.v3 import base_pb2
from envoy.service.auth.v3 import attribute_context_pb2 as ac
from envoy.service.auth.v3 import external_auth_pb2 as pb
from opa_client.opa import OpaClient

from .sidecar_process import SidecarProcess

LOOPBACK = ("127.0.0.1", 40000)


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


def check(stub: Any, path: str, headers: dict[str, str] | None = None, *,
          raw_headers: list[tuple[str, bytes]] | None = None, method: str = "GET") -> pb.CheckResponse:
    """One Envoy ``Authorization/Check`` through ``stub``: the headers map, or ``raw_headers`` as
    Envoy's ``header_map`` (``encode_raw_headers``)."""
    http = ac.AttributeContext.HttpRequest(method=method, path=path, host="billing.internal", headers=headers or {},
                                           protocol="HTTP/1.1", scheme="http")
    for key, value in raw_headers or ():
        http.header_map.headers.append(base_pb2.HeaderValue(key=key, raw_value=value))
    request = pb.CheckRequest(attributes=ac.AttributeContext(request=ac.AttributeContext.Request(http=http)))
    response: pb.CheckResponse = stub.Check(request, timeout=5)
    return response


def ask(app: Any, path: str, body: bytes, headers: dict[str, str], method: str = "POST",
        client: tuple[str, int] = LOOPBACK) -> httpx.Response:
    """One request to an ASGI app in process (the served ``SidecarApp`` or its FastAPI app)."""
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            return await http.request(method, path, content=body, headers=headers)

    return asyncio.run(go())
