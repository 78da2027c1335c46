"""Every door of a running sidecar answers the same question the same way.

Real clients only: httpx for the native and AuthZEN doors, opa-python-client for the
OPA Data API, a grpc stub sending Envoy-shaped CheckRequests for ext_authz.
"""

from __future__ import annotations

from typing import Any

import grpc
import httpx
import pytest
from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from authz_sidecar.grpc_ext_authz import question_for
from tests.harness.sidecar_doors import authzen, envoy_request, invoice, native, opa
from tests.harness.sidecar_process import SidecarProcess
from tests.harness.sidecar_world import World, token

# (name, token kwargs, question, expected allow, expected reason when denied)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool, str | None]] = [
    ("editor reads own tenant's invoice in her project", {}, invoice("acme"), True, None),
    ("editor writes own tenant's invoice", {}, invoice("acme", action="invoices:write"), True, None),
    ("viewer may not write", {"roles": ("viewer",)}, invoice("acme", action="invoices:write"), False, "missing_role"),
    ("not a member of project p2", {}, invoice("acme", project="p2"), False, "not_project_member"),
    ("bob reaches p2 through group eng", {"sub": "bob"}, invoice("acme", project="p2"), True, None),
    ("colliding id in another tenant", {}, invoice("globex"), False, "tenant_mismatch"),
    ("high-risk action without confirmation", {"roles": ("admin",)}, invoice("acme", action="export_all"),
     False, "high_risk_unconfirmed"),
    ("scope narrower than the action", {"scope": "invoices:read"}, invoice("acme", action="invoices:write"),
     False, "scope_exceeded"),
]


@pytest.mark.parametrize("door", [native, authzen, opa], ids=["native", "authzen", "opa"])
@pytest.mark.parametrize(("name", "tok_kw", "question", "allow", "reason"), CASES, ids=[c[0] for c in CASES])
def test_same_decision_through_every_http_door(
    sidecar: SidecarProcess, world: World, door: Any, name: str, tok_kw: dict[str, Any],
    question: dict[str, Any], allow: bool, reason: str | None,
) -> None:
    got_allow, reasons = door(sidecar, token(world, **tok_kw), question)
    assert got_allow is allow, (name, reasons)
    if reason is not None:
        assert reason in reasons


@pytest.fixture(scope="module")
def authz_stub(sidecar: SidecarProcess) -> Any:
    channel = grpc.insecure_channel(sidecar.grpc)
    yield pb_grpc.AuthorizationStub(channel)
    channel.close()


ENVOY_CASES = [
    ("GET", "/tenants/acme/invoices/inv-1", {}, ("editor",), True),
    ("POST", "/tenants/acme/invoices", {}, ("viewer",), False),
    ("GET", "/tenants/globex/invoices/inv-1", {}, ("editor",), False),
    ("GET", "/invoices/inv-1", {"x-tenant-id": "globex"}, ("editor",), False),
    ("GET", "/tenants/acme/invoices/inv-1", {"x-tenant-id": "globex"}, ("editor",), False),
    ("GET", "/invoices/inv-1", {}, ("editor",), True),
]


@pytest.mark.parametrize(("method", "path", "extra", "roles", "allow"), ENVOY_CASES)
def test_envoy_check_agrees_with_the_native_door(
    sidecar: SidecarProcess, world: World, authz_stub: Any,
    method: str, path: str, extra: dict[str, str], roles: tuple[str, ...], allow: bool,
) -> None:
    tok = token(world, roles=roles)
    request = envoy_request(method, path, {"authorization": f"Bearer {tok}", **extra})
    response = authz_stub.Check(request, timeout=5)
    assert (response.status.code == 0) is allow
    native_allow, _ = native(sidecar, tok, question_for(request.attributes.request.http))
    assert native_allow is allow
    if allow:
        headers = {h.header.key: h.header.value for h in response.ok_response.headers}
        assert headers["x-tenant-id"] == "acme" and headers["x-tenant-subject"] == "alice"
    else:
        assert response.denied_response.status.code == 403


def test_envoy_missing_and_invalid_tokens_get_401(authz_stub: Any) -> None:
    for headers in ({}, {"authorization": "Bearer not-a-token"}):
        response = authz_stub.Check(envoy_request("GET", "/tenants/acme/x", headers), timeout=5)
        assert response.denied_response.status.code == 401
        assert response.status.code == 16  # UNAUTHENTICATED


def test_envoy_allow_overwrites_a_client_supplied_tenant_header(
    sidecar: SidecarProcess, world: World, authz_stub: Any
) -> None:
    """The upstream sees x-tenant-id from the verified token, never the client's copy."""
    tok = token(world)
    response = authz_stub.Check(envoy_request("GET", "/invoices/inv-1", {"authorization": f"Bearer {tok}",
                                                                          "x-tenant-subject": "root"}), timeout=5)
    assert response.status.code == 0
    options = {h.header.key: h for h in response.ok_response.headers}
    assert options["x-tenant-subject"].header.value == "alice"
    assert options["x-tenant-subject"].append_action == options["x-tenant-subject"].OVERWRITE_IF_EXISTS_OR_ADD


def test_grpc_health_service_reports_serving(sidecar: SidecarProcess) -> None:
    with grpc.insecure_channel(sidecar.grpc) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "envoy.service.auth.v3.Authorization"):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_authzen_evaluations_semantics(sidecar: SidecarProcess, world: World) -> None:
    tok = token(world)
    resources = [invoice("acme")["resource"], invoice("globex")["resource"], invoice("acme", project="p1")["resource"]]
    body: dict[str, Any] = {"action": {"name": "invoices:read"}, "evaluations": [{"resource": r} for r in resources]}
    expected = {"execute_all": [True, False, True], "deny_on_first_deny": [True, False],
                "permit_on_first_permit": [True]}
    for semantic, decisions in expected.items():
        r = httpx.post(f"{sidecar.base_url}/access/v1/evaluations", headers={"Authorization": f"Bearer {tok}"},
                       json={**body, "options": {"evaluations_semantic": semantic}})
        assert r.status_code == 200, r.text
        assert [e["decision"] for e in r.json()["evaluations"]] == decisions, semantic


def test_authzen_evaluation_entry_missing_a_required_member_is_that_entrys_deny(sidecar: SidecarProcess,
                                                                                world: World) -> None:
    """AuthZEN 1.0 "Errors" and the certification scenario's c-3-4-1: an entry missing a required
    member (in it and in the defaults) is a deny with the error in its context; the others are decided."""
    tok = token(world)
    r = httpx.post(f"{sidecar.base_url}/access/v1/evaluations", headers={"Authorization": f"Bearer {tok}"},
                   json={"evaluations": [invoice("acme"), {"resource": {"type": "invoice", "id": "x"}}]})
    assert r.status_code == 200, r.text
    first, second = r.json()["evaluations"]
    assert first["decision"] is True and second["decision"] is False
    assert "evaluations[1]" in second["context"]["error"]["message"]


def test_authzen_configuration(sidecar: SidecarProcess) -> None:
    meta = httpx.get(f"{sidecar.base_url}/.well-known/authzen-configuration").json()
    assert meta["access_evaluation_endpoint"].endswith("/access/v1/evaluation")
    assert meta["access_evaluations_endpoint"].endswith("/access/v1/evaluations")


def test_pep_stated_subject_without_a_token(sidecar: SidecarProcess) -> None:
    """A local PEP may state the subject and tenant; the tenant check still compares them."""
    subject = {"type": "user", "id": "alice", "properties": {"tenant_id": "acme", "roles": ["editor"]}}
    own = httpx.post(f"{sidecar.base_url}/access/v1/evaluation", json={"subject": subject, **invoice("acme")})
    other = httpx.post(f"{sidecar.base_url}/access/v1/evaluation", json={"subject": subject, **invoice("globex")})
    assert own.json()["decision"] is True
    assert other.json()["decision"] is False
