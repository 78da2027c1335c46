"""OPA's REST API beyond ``/v1/data``, as OPA documents it, against a real sidecar: the v0 Data API,
``POST /`` (the default decision), the custom health paths, and gzip request bodies.

Each was a 404 or a misleading 400 before: an outside team probing the OPA-compatible door
with OPA's own SDKs (which offer ``Content-Encoding: gzip`` and the default-policy call) or
with Kubernetes probes copied from OPA's docs (``/health/live``, ``/health/ready``) met them.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opa_client import OpaClient

from tests.harness.sidecar_doors import invoice
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World, token

GZIP = {"content-type": "application/json", "content-encoding": "gzip"}


@pytest.fixture(scope="module")
def empty(world: World) -> Iterator[SidecarProcess]:
    """A sidecar with no bundle: up, never ready."""
    running = start_sidecar(["--service", "billing", "--trust", str(world.trust_file), "--port", "0",
                             "--grpc-port", "-1"])
    yield running
    running.stop()


def bearer(world: World) -> dict[str, str]:
    return {"authorization": f"Bearer {token(world)}"}


# ------------------------------------------------------------------------------- v0 Data API


@pytest.mark.parametrize(("path", "tenant", "expected"), [
    ("/v0/data/tenantguard/decision", "acme", {"allow": True, "reasons": [], "high_risk": False}),
    ("/v0/data/tenantguard/decision/allow", "acme", True),
    ("/v0/data/tenantguard/decision/allow", "globex", False),
    ("/v0/data/tenantguard/decision/reasons", "globex", ["tenant_mismatch"]),
])
def test_v0_data_takes_the_input_as_the_body_and_answers_the_document(sidecar: SidecarProcess, world: World,
                                                                      path: str, tenant: str, expected: Any) -> None:
    response = httpx.post(sidecar.base_url + path, json=invoice(tenant), headers=bearer(world))
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    assert response.json() == expected  # no result wrapper, as OPA's v0 API


def test_v0_data_undefined_is_opas_404(sidecar: SidecarProcess, world: World) -> None:
    response = httpx.post(f"{sidecar.base_url}/v0/data/tenantguard/decision/nope", json=invoice("acme"),
                          headers=bearer(world))
    assert response.status_code == 404
    assert response.json()["code"] == "undefined_document"
    assert "data.tenantguard.decision.nope" in response.json()["message"]


@pytest.mark.parametrize(("path", "body", "status", "code"), [
    ("/v0/data/tenantguard/exchange", invoice("acme"), 404, "resource_not_found"),  # only the decision is served
    ("/v0/data/tenantguard/decision", [invoice("acme")], 400, "invalid_parameter"),  # the input is an object
    ("/v0/data/tenantguard/decision", {"input": invoice("acme")}, 400, "invalid_parameter"),  # v1's shape: no subject
])
def test_v0_data_refusals(sidecar: SidecarProcess, world: World, path: str, body: Any, status: int,
                          code: str) -> None:
    response = httpx.post(sidecar.base_url + path, json=body, headers=bearer(world))
    assert (response.status_code, response.json()["code"]) == (status, code), response.text


def test_v0_data_is_post_only_as_in_opa(sidecar: SidecarProcess, world: World) -> None:
    response = httpx.get(f"{sidecar.base_url}/v0/data/tenantguard/decision", headers=bearer(world))
    assert response.status_code == 405 and response.json()["code"] == "invalid_operation"


# ------------------------------------------------------------------------- default decision


def test_post_root_is_the_default_decision_named_by_v1_config(sidecar: SidecarProcess, world: World) -> None:
    default = httpx.get(f"{sidecar.base_url}/v1/config").json()["result"]["default_decision"]
    via_data = httpx.post(f"{sidecar.base_url}/v0/data{default}", json=invoice("globex"), headers=bearer(world))
    via_root = httpx.post(f"{sidecar.base_url}/", json=invoice("globex"), headers=bearer(world))
    assert via_root.status_code == 200 and via_root.json() == via_data.json()
    assert via_root.json()["allow"] is False
    allowed = httpx.post(f"{sidecar.base_url}/?pretty=true", json=invoice("acme"), headers=bearer(world))
    assert allowed.text.startswith("{\n  ") and allowed.json()["allow"] is True


def test_post_root_without_a_token_is_the_pep_stated_question(sidecar: SidecarProcess) -> None:
    """From loopback the local PEP may state the subject, as at every door; it cannot skip the tenant."""
    stated = {**invoice("acme"), "subject": {"type": "user", "id": "alice",
                                             "properties": {"tenant_id": "acme", "roles": ["editor"]}}}
    assert httpx.post(f"{sidecar.base_url}/", json=stated).json()["allow"] is True
    unnamed = {**invoice("acme"), "subject": {"type": "user", "id": "alice"}}
    assert httpx.post(f"{sidecar.base_url}/", json=unnamed).json() == {
        "allow": False, "reasons": ["tenant_unknown"], "high_risk": False}


# ---------------------------------------------------------------------------- health paths


def test_custom_health_paths(sidecar: SidecarProcess, empty: SidecarProcess) -> None:
    """OPA serves ``/health/<rule>`` (``data.system.health.<rule>``): 200 ``{}`` or 500 with ``error``."""
    for path in ("/health/live", "/health/ready"):
        response = httpx.get(sidecar.base_url + path)
        assert (response.status_code, response.json()) == (200, {}), path
    assert httpx.get(f"{empty.base_url}/health/live").status_code == 200  # up
    not_ready = httpx.get(f"{empty.base_url}/health/ready")
    assert not_ready.status_code == 500 and "error" in not_ready.json()
    assert httpx.get(f"{empty.base_url}/ready").status_code == 503  # the sidecar's own probe is unchanged


# ------------------------------------------------------------------------------- gzip bodies


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/data/tenantguard/decision", {"input": invoice("globex")}),
    ("/v0/data/tenantguard/decision", invoice("globex")),
    ("/", invoice("globex")),
    ("/v1/check", invoice("globex")),
])
def test_a_gzip_body_is_decided_like_the_plain_one(sidecar: SidecarProcess, world: World, path: str,
                                                   body: dict[str, Any]) -> None:
    """OPA decodes ``Content-Encoding: gzip`` on every endpoint; the sidecar read the compressed bytes
    as JSON text and answered 400 "JSON text is not UTF-8"."""
    plain = httpx.post(sidecar.base_url + path, json=body, headers=bearer(world))
    zipped = httpx.post(sidecar.base_url + path, content=gzip.compress(json.dumps(body).encode()),
                        headers={**bearer(world), **GZIP})
    assert plain.status_code == zipped.status_code == 200, zipped.text
    strip = {"decision_id"}
    assert {k: v for k, v in zipped.json().items() if k not in strip} == \
        {k: v for k, v in plain.json().items() if k not in strip}


@pytest.mark.parametrize(("content", "encoding", "status", "error"), [
    (gzip.compress(b'{"input": {"x": "' + b"a" * 200_000 + b'"}}'), "gzip", 413, "payload_too_large"),  # a bomb
    (gzip.compress(json.dumps({"input": invoice("acme")}).encode())[:-4], "gzip", 400, "invalid_request"),
    (gzip.compress(json.dumps({"input": invoice("acme")}).encode()) + b"junk", "gzip", 400, "invalid_request"),
    (b'{"input": {}}', "gzip", 400, "invalid_request"),  # said gzip, is not
    (b'{"input": {}}', "br", 415, "unsupported_media_type"),
    (b'{"input": {}}', "gzip, gzip", 415, "unsupported_media_type"),
])
def test_a_body_that_does_not_decode_is_refused(sidecar: SidecarProcess, world: World, content: bytes,
                                                encoding: str, status: int, error: str) -> None:
    response = httpx.post(f"{sidecar.base_url}/v1/data/tenantguard/decision", content=content,
                          headers={**bearer(world), "content-type": "application/json", "content-encoding": encoding})
    assert (response.status_code, response.json()["error"]) == (status, error), response.text
    assert "code" in response.json()  # OPA's error shape too


def test_opa_client_without_a_token_is_answered_as_the_local_pep(sidecar: SidecarProcess) -> None:
    host, port = sidecar.http.rsplit(":", 1)
    client = OpaClient(host=host, port=int(port), retries=0)
    try:
        stated = {**invoice("acme"), "subject": {"type": "user", "id": "alice",
                                                 "properties": {"tenant_id": "acme", "roles": ["editor"]}}}
        assert client.query_rule(stated, "tenantguard", "decision")["result"]["allow"] is True
        assert client.query_rule(stated, "tenantguard.decision", "allow")["result"] is True
    finally:
        client.close_connection()


# ------------------------------------------------------------------------------- 405 Allow


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("OPTIONS", "/v1/data/tenantguard/decision", {"DELETE", "GET", "PATCH", "POST", "PUT"}),
    ("GET", "/v0/data/tenantguard/decision", {"POST"}),
    ("GET", "/v1/check", {"POST"}),
    ("POST", "/health", {"GET"}),  # as OPA: no HEAD
    ("DELETE", "/v1/config", {"GET"}),
    ("POST", "/_docs-assets/favicon.png", {"GET", "HEAD"}),  # a static-files mount
])
def test_a_405_names_every_method_the_path_serves(sidecar: SidecarProcess, method: str, path: str,
                                                  allowed: set[str]) -> None:
    """RFC 9110 15.5.6: a 405 MUST carry ``Allow``. The error handlers dropped it, and the framework's
    own named only the first route's methods (``/v1/data/{path}`` is one route per method)."""
    response = httpx.request(method, sidecar.base_url + path)
    assert response.status_code == 405, response.text
    assert {m.strip() for m in response.headers["allow"].split(",")} == allowed
    assert response.json()["error"] == "method_not_allowed"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "OPTIONS"])
def test_the_token_endpoint_answers_another_method_as_oauth(sidecar: SidecarProcess, method: str) -> None:
    """Every answer of ``/oauth2/token`` is an RFC 6749 5.2 error its clients read (the guard's refusals
    already were); a wrong method was the sidecar's own 405 shape, uncacheable-unmarked."""
    response = httpx.request(method, f"{sidecar.base_url}/oauth2/token")
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.json()["error"] == "invalid_request" and "POST" in response.json()["error_description"]
    assert response.headers["cache-control"] == "no-store"
