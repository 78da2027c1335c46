"""Tenant spoofing through every door, bad input, and the operational endpoints."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tenantguard.identity.tokens import mint

from tests.harness.sidecar_doors import envoy_request, invoice
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import RELATIONSHIPS, World, token


def bearer(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


SPOOFED_BODIES: list[tuple[str, dict[str, Any]]] = [
    ("resource names globex", invoice("globex")),
    ("subject claims globex", {"subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "globex"}},
                               **invoice("globex")}),
    ("subject claims another user", {"subject": {"type": "user", "id": "mallory"}, **invoice("acme")}),
    ("body roles try to escalate", {"subject": {"type": "user", "id": "alice",
                                                "properties": {"tenant_id": "acme", "roles": ["admin"]}},
                                    **invoice("acme", action="invoices:write")}),
]


@pytest.mark.parametrize(("label", "body"), SPOOFED_BODIES, ids=[b[0] for b in SPOOFED_BODIES])
@pytest.mark.parametrize("path", ["/v1/check", "/access/v1/evaluation", "/v1/data/tenantguard/decision"])
def test_body_cannot_override_the_token(sidecar: SidecarProcess, world: World, path: str,
                                        label: str, body: dict[str, Any]) -> None:
    tok = token(world, roles=("viewer",))  # a viewer of acme
    payload = {"input": body} if path.startswith("/v1/data") else body
    r = httpx.post(f"{sidecar.base_url}{path}", json=payload,
                   headers={**bearer(tok), "X-Tenant-Id": "globex", "X-User": "mallory"})
    assert r.status_code == 200, r.text
    data = r.json()
    allowed = data.get("allow", data.get("decision", (data.get("result") or {}).get("allow")))
    assert allowed is False, (label, data)


def test_tenant_in_path_or_header_never_reaches_another_tenant_via_envoy(
    sidecar: SidecarProcess, world: World
) -> None:
    import grpc
    from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc

    tok = token(world)
    with grpc.insecure_channel(sidecar.grpc) as channel:
        stub = pb_grpc.AuthorizationStub(channel)
        for path, headers in [("/tenants/globex/invoices", {}), ("/invoices", {"x-tenant-id": "globex"}),
                              ("/tenants/globex/../acme/invoices", {}), ("/tenants/GLOBEX/invoices", {})]:
            response = stub.Check(envoy_request("GET", path, {"authorization": f"Bearer {tok}", **headers}),
                                  timeout=5)
            assert response.status.code != 0, path


def test_token_for_another_service_is_refused(sidecar: SidecarProcess, world: World) -> None:
    orders_token = token(world, aud="orders")
    r = httpx.post(f"{sidecar.base_url}/v1/check", json=invoice("acme"), headers=bearer(orders_token))
    assert r.status_code == 401
    assert r.json()["error"] == "audience_invalid"
    assert 'error="invalid_token"' in r.headers["www-authenticate"]


def test_forged_token_from_an_untrusted_key_is_401(sidecar: SidecarProcess, world: World) -> None:
    from tenantguard.identity.keys import SigningKey

    forged = mint(SigningKey.generate(), issuer="edge", sub="alice", tenant_id="acme", audience="billing",
                  roles=["admin"])
    r = httpx.post(f"{sidecar.base_url}/access/v1/evaluation", json=invoice("acme"), headers=bearer(forged))
    assert r.status_code == 401 and r.json()["error"] == "unknown_kid"


@pytest.mark.parametrize(("content", "status", "code"), [
    (b"{not json", 400, "invalid_request"),
    (b"[]", 400, "invalid_request"),
    (b'{"action": {"name": ""}, "resource": {"type": "invoice"}}', 400, "invalid_request"),
    (b"x" * 70_000, 413, "payload_too_large"),
])
def test_bad_bodies_get_machine_readable_4xx(sidecar: SidecarProcess, content: bytes, status: int, code: str) -> None:
    for path in ("/v1/check", "/access/v1/evaluation"):
        r = httpx.post(f"{sidecar.base_url}{path}", content=content, headers={"content-type": "application/json"})
        assert r.status_code == status, (path, r.text)
        assert r.json()["error"] == code
        assert "Traceback" not in r.text


def test_chunked_oversized_body_is_cut_at_the_bound(sidecar: SidecarProcess) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(100):
            yield b"x" * 4096

    r = httpx.post(f"{sidecar.base_url}/v1/check", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_opa_door_serves_only_the_decision_document(sidecar: SidecarProcess, world: World) -> None:
    tok = token(world)
    data_doc = httpx.post(f"{sidecar.base_url}/v1/data/tenantguard/config", json={"input": invoice("acme")},
                          headers=bearer(tok))
    assert data_doc.status_code == 404 and data_doc.json()["error"] == "path_not_exposed"
    allow = httpx.post(f"{sidecar.base_url}/v1/data/tenantguard/decision/allow", json={"input": invoice("acme")},
                       headers=bearer(tok)).json()
    assert allow["result"] is True and allow["decision_id"]
    import json as _json

    got = httpx.get(f"{sidecar.base_url}/v1/data/tenantguard/decision",
                    params={"input": _json.dumps(invoice("acme"))}, headers=bearer(tok)).json()
    assert got["result"]["allow"] is True


def test_unknown_route_is_json_404(sidecar: SidecarProcess) -> None:
    r = httpx.get(f"{sidecar.base_url}/nope")
    assert r.status_code == 404 and r.json()["error"] == "not_found"


def test_status_ready_health_and_metrics(sidecar: SidecarProcess, world: World) -> None:
    httpx.post(f"{sidecar.base_url}/v1/check", json=invoice("acme"), headers=bearer(token(world)))
    assert httpx.get(f"{sidecar.base_url}/health").json() == {"status": "ok"}
    ready = httpx.get(f"{sidecar.base_url}/ready")
    assert ready.status_code == 200 and ready.json()["bundle_revision"] == "1"
    status = httpx.get(f"{sidecar.base_url}/v1/status").json()
    assert status["relations_seq"] == 7 and status["relations_count"] == len(RELATIONSHIPS)
    assert status["bundle_revision"] == "1" and status["feed"] == "file"
    assert status["staleness_seconds"] >= 0 and status["decision_log"]["submitted"] >= 1
    metrics = httpx.get(f"{sidecar.base_url}/metrics").text
    for name in ("tg_decisions_total", "tg_decision_duration_seconds_bucket", "tg_token_cache_hits_total",
                 "tg_bundles_rejected_total", "tg_staleness_seconds", "tg_decision_log_dropped_total"):
        assert name in metrics, name
    assert 'tg_decisions_total{door="native",result="allow"}' in metrics


@pytest.fixture(scope="module")
def strict_sidecar(world: World) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args("billing", "--require-token"))
    yield running
    running.stop()


def test_require_token_gives_401_with_www_authenticate(strict_sidecar: SidecarProcess) -> None:
    body = {"subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme"}}, **invoice("acme")}
    r = httpx.post(f"{strict_sidecar.base_url}/access/v1/evaluation", json=body)
    assert r.status_code == 401
    assert r.json()["error"] == "token_missing"
    assert r.headers["www-authenticate"].startswith("Bearer")


@pytest.fixture(scope="module")
def empty_sidecar(world: World) -> Iterator[SidecarProcess]:
    args = ["--service", "billing", "--trust", str(world.trust_file), "--port", "0", "--grpc-port", "0"]
    running = start_sidecar(args)
    yield running
    running.stop()


def test_without_a_bundle_not_ready_and_every_decision_denies(empty_sidecar: SidecarProcess, world: World) -> None:
    assert httpx.get(f"{empty_sidecar.base_url}/ready").status_code == 503
    r = httpx.post(f"{empty_sidecar.base_url}/v1/check", json=invoice("acme"), headers=bearer(token(world)))
    assert r.status_code == 200
    assert r.json()["allow"] is False and r.json()["reasons"] == ["no_active_bundle"]


def test_tampered_bundle_file_stops_the_sidecar_from_starting(world: World, tmp_path: Any) -> None:
    data = bytearray(world.bundle_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(bytes(data))
    args = world.args()
    args[args.index(str(world.bundle_file))] = str(bad)
    with pytest.raises(RuntimeError) as info:
        start_sidecar(args, timeout=15)
    assert "bundle" in str(info.value) and "Traceback" not in str(info.value)


def test_a_check_naming_nobody_without_a_token_says_the_token_is_missing(sidecar: SidecarProcess) -> None:
    """The native door: no token and no subject is a forgotten token (401 ``token_missing``),
    not a malformed body; a local caller stating the subject is still answered. The AuthZEN
    door keeps its 400: its PEPs always state the subject (interop scenario c-2-4-1)."""
    r = httpx.post(f"{sidecar.base_url}/v1/check", json=invoice("acme"))
    assert (r.status_code, r.json()["error"]) == (401, "token_missing"), r.text
    assert "token" in r.json()["message"] and r.headers["www-authenticate"].startswith("Bearer")
    stated = {"subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme"}}, **invoice("acme")}
    assert httpx.post(f"{sidecar.base_url}/v1/check", json=stated).status_code == 200
    r = httpx.post(f"{sidecar.base_url}/access/v1/evaluation", json=invoice("acme"))
    assert r.status_code == 400, r.text
