"""The framework-free front for the decision doors answers exactly as the FastAPI routes do.

Each question is asked twice in-process: through ``SidecarApp`` (guard -> hot doors)
and through ``SidecarApp.api`` (the documented FastAPI routes behind it). Status,
body (minus the per-decision id) and headers must match, for allows, denies, bad
input, missing tokens and unexpected failures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.types import Scope

from authz_sidecar.app import SidecarApp
from authz_sidecar.config import SidecarConfig
from authz_sidecar.http.wire import Reply
from authz_sidecar.runtime import Sidecar
from tests.harness.sidecar_doors import ask, invoice
from tests.harness.sidecar_process import SidecarProcess
from tests.harness.sidecar_world import World, token


@pytest.fixture(scope="module")
def app(world: World) -> Iterator[SidecarApp]:
    async def broken(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
        raise RuntimeError("a bug that must not reach the caller: secret-detail")

    config = SidecarConfig(service="billing", bundle_file=world.bundle_file, bundle_keys=(world.plane_pub,),
                           trust_file=world.trust_file, relations_file=world.relations_file)
    yield SidecarApp(Sidecar.from_config(config), extra_doors={"/test/broken": broken})


def comparable(response: httpx.Response) -> tuple[int, Any, dict[str, str]]:
    """Status, JSON body without per-decision ids, and the headers a caller relies on."""
    wanted = {k: v for k, v in response.headers.items()
              if k in ("content-type", "www-authenticate", "x-request-id", "retry-after")}
    return response.status_code, without_ids(response.json()), wanted


def without_ids(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: without_ids(v) for k, v in data.items() if k != "decision_id"}
    if isinstance(data, list):
        return [without_ids(v) for v in data]
    return data


def cases(world: World) -> list[tuple[str, str, bytes, dict[str, str]]]:
    editor = {"Authorization": f"Bearer {token(world, roles=('editor',))}", "X-Request-ID": "req-7"}
    viewer = {"Authorization": f"Bearer {token(world, roles=('viewer',))}"}
    write = json.dumps(invoice("acme", action="invoices:write")).encode()
    read = json.dumps(invoice("acme")).encode()
    return [
        ("allow", "/v1/check", read, editor),
        ("deny", "/v1/check", write, viewer),
        ("cross-tenant deny", "/v1/check", json.dumps(invoice("globex")).encode(), editor),
        ("bad json", "/v1/check", b"{not json", editor),
        ("schema problems", "/v1/check", b'{"action": {"name": ""}, "resource": 5}', editor),
        ("forged token", "/v1/check", read, {"Authorization": "Bearer eyJhbGciOiJub25lIn0.e30."}),
        ("no token, no subject", "/v1/check", read, {}),
        ("authzen allow", "/access/v1/evaluation", read, editor),
        ("authzen deny", "/access/v1/evaluation", write, viewer),
        ("authzen boxcar", "/access/v1/evaluations",
         json.dumps({**invoice("acme"), "evaluations": [{}, {"action": {"name": "invoices:write"}}],
                     "options": {"evaluations_semantic": "deny_on_first_deny"}}).encode(), viewer),
        ("opa decision", "/v1/data/tenantguard/decision", json.dumps({"input": invoice("acme")}).encode(), editor),
        ("opa member", "/v1/data/tenantguard/decision/allow", json.dumps({"input": invoice("acme")}).encode(),
         editor),
        ("opa other document", "/v1/data/tenantguard/config", json.dumps({"input": {}}).encode(), editor),
        ("opa no input", "/v1/data/tenantguard/decision", b"{}", editor),
        ("not announced as JSON", "/v1/check", read, {**editor, "content-type": "text/plain"}),
        ("too deep", "/access/v1/evaluation", b"[" * 5000 + b"]" * 5000, editor),
        ("duplicate keys", "/v1/data/tenantguard/decision", b'{"input": {}, "input": {}}', editor),
    ]


def test_front_and_framework_routes_answer_identically(app: SidecarApp, world: World) -> None:
    for label, path, body, headers in cases(world):
        front = ask(app, path, body, {"content-type": "application/json", **headers})
        framework = ask(app.api, path, body, {"content-type": "application/json", **headers})
        assert comparable(front) == comparable(framework), label
        assert front.headers["content-length"] == str(len(front.content)), label


def test_front_answers_the_expected_outcomes(app: SidecarApp, world: World) -> None:
    """Guard against both paths being wrong the same way: pin a few outcomes."""
    outcome = {label: ask(app, path, body, {"content-type": "application/json", **headers})
               for label, path, body, headers in cases(world)}
    assert outcome["allow"].json()["allow"] is True
    assert outcome["deny"].json()["allow"] is False
    assert outcome["cross-tenant deny"].json()["reasons"] == ["tenant_mismatch"]
    assert outcome["bad json"].status_code == 400
    assert outcome["bad json"].json()["error"] == "invalid_request"
    assert outcome["schema problems"].json()["detail"]["problems"]
    assert outcome["forged token"].status_code == 401
    assert outcome["forged token"].headers["www-authenticate"].startswith('Bearer realm="tenantguard"')
    assert outcome["authzen allow"].headers["x-request-id"] == "req-7"
    assert [e["decision"] for e in outcome["authzen boxcar"].json()["evaluations"]] == [True, False]
    assert outcome["opa member"].json()["result"] is True
    assert outcome["opa other document"].status_code == 404
    assert outcome["not announced as JSON"].json()["error"] == "unsupported_media_type"
    assert outcome["too deep"].json()["error"] == "json_too_deep"
    assert outcome["duplicate keys"].json()["error"] == "json_not_interoperable"


def test_unexpected_failure_is_a_bare_json_500(app: SidecarApp, caplog: pytest.LogCaptureFixture) -> None:
    response = ask(app, "/test/broken", b"{}", {"X-Request-ID": "r1"})
    assert response.status_code == 500
    assert response.json() == {"error": "internal_error", "message": "internal error"}
    assert "secret-detail" not in response.text and "Traceback" not in response.text
    assert "secret-detail" in caplog.text  # the operator still sees what went wrong


def test_other_methods_and_paths_fall_through_to_the_framework(app: SidecarApp) -> None:
    assert ask(app, "/v1/check", b"", {}, method="GET").json()["error"] == "method_not_allowed"
    assert ask(app, "/v1/checks", b"{}", {}).json()["error"] == "not_found"
    assert ask(app, "/health", b"", {}, method="GET").status_code == 200


def test_guard_still_stands_in_front_of_the_hot_doors(app: SidecarApp, world: World) -> None:
    body = json.dumps(invoice("acme")).encode()
    remote = ask(app, "/v1/check", body, {}, client=("203.0.113.9", 5000))
    assert (remote.status_code, remote.json()["error"]) == (403, "caller_not_local")
    oversized = ask(app, "/v1/check", b" " * (app.sidecar.config.max_body_bytes + 1), {})
    assert (oversized.status_code, oversized.json()["error"]) == (413, "payload_too_large")


def test_the_framework_app_is_guarded_on_its_own(app: SidecarApp, world: World) -> None:
    """Serving ``create_api`` directly must not open the sidecar to other hosts."""
    body = json.dumps(invoice("acme")).encode()
    for path, method in (("/v1/check", "POST"), ("/v1/status", "GET")):
        remote = ask(app.api, path, body, {}, method=method, client=("203.0.113.9", 5000))
        assert (remote.status_code, remote.json()["error"]) == (403, "caller_not_local"), path
    # the token endpoint answers in RFC 6749's shape, tenantguard's code beside it
    remote = ask(app.api, "/oauth2/token", body, {}, method="POST", client=("203.0.113.9", 5000))
    assert (remote.status_code, remote.json()["error"], remote.json()["reason"]) == \
        (403, "invalid_request", "caller_not_local")
    assert ask(app.api, "/health", b"", {}, method="GET", client=("203.0.113.9", 5000)).status_code == 200
    oversized = ask(app.api, "/oauth2/token", b" " * (app.sidecar.config.max_body_bytes + 1), {})
    assert (oversized.status_code, oversized.json()["reason"]) == (413, "payload_too_large")


def test_hot_doors_bound_the_body_even_without_the_guard(app: SidecarApp) -> None:
    from authz_sidecar.app import HOT_DOORS
    from authz_sidecar.http.hot import HotDoors

    bare = HotDoors(app.api, app.sidecar, HOT_DOORS, realm="tenantguard")
    response = ask(bare, "/v1/check", b" " * (app.sidecar.config.max_body_bytes + 1), {})
    assert (response.status_code, response.json()["error"]) == (413, "payload_too_large")


def test_forwarded_for_cannot_change_who_the_guard_sees(sidecar: SidecarProcess, world: World) -> None:
    """uvicorn's proxy-header rewriting is off: the guard judges the real (loopback) peer."""
    headers = {"Authorization": f"Bearer {token(world, roles=('editor',))}",
               "X-Forwarded-For": "203.0.113.9", "Forwarded": "for=203.0.113.9"}
    response = httpx.post(f"{sidecar.base_url}/v1/check", json=invoice("acme"), headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["allow"] is True
