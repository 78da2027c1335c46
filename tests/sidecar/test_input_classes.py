"""Attack classes against a running sidecar, at every door that takes them.

1. a body naming another subject (type, id or tenant) next to a verified token;
2. JSON nested deeper than the bound, and JSON that parsers read differently
   (duplicate keys, NaN/Infinity, out-of-range numbers, lone surrogates);
3. bodies not announced as JSON.
Each must be a deny with a reason (1) or a 4xx with the machine-readable error body
(2, 3): never a 500, never a traceback.
"""

from __future__ import annotations

import json
from typing import Any

import grpc
import httpx
import pytest
from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc
from opa_client.opa import OpaClient
from tenantguard.util.jsonlimits import MAX_DEPTH

from authz_sidecar.grpc_ext_authz import question_for
from tests.harness.sidecar_doors import envoy_request, invoice
from tests.harness.sidecar_process import SidecarProcess
from tests.harness.sidecar_world import World, token

JSON = {"content-type": "application/json"}
BODY_DOORS = ["/v1/check", "/access/v1/evaluation", "/access/v1/evaluations", "/v1/data/tenantguard/decision"]


def bearer(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


def allowed_and_reasons(path: str, data: dict[str, Any]) -> tuple[bool, list[str]]:
    """Every door's answer as (allow, reasons)."""
    if path.startswith("/v1/data"):
        return data["result"]["allow"], data["result"]["reasons"]
    if path == "/v1/check":
        return data["allow"], data["reasons"]
    if "evaluations" in data:
        (only,) = data["evaluations"]
        data = only
    return data["decision"], data.get("context", {}).get("reasons", [])


def wrap(path: str, question: dict[str, Any]) -> dict[str, Any]:
    if path.startswith("/v1/data"):
        return {"input": question}
    if path.endswith("/evaluations"):
        return {"evaluations": [question], "options": {"tenantguard_context": True}}
    return question


# -------------------------------------------------------------------- 1. the token is the subject

P8 = invoice("acme", project="p8")  # acme/project:p8#member@group:carol
IMPERSONATIONS: list[tuple[str, dict[str, Any], str]] = [
    ("group with the token's id", {"type": "group", "id": "carol"}, "subject_mismatch"),
    ("group, id left out", {"type": "group"}, "subject_mismatch"),
    ("service", {"type": "service", "id": "svc:orders"}, "subject_mismatch"),
    ("another user", {"type": "user", "id": "alice"}, "subject_mismatch"),
    ("another tenant", {"type": "user", "id": "carol", "properties": {"tenant_id": "globex"}}, "tenant_mismatch"),
]


@pytest.mark.parametrize(("label", "subject", "reason"), IMPERSONATIONS, ids=[i[0] for i in IMPERSONATIONS])
@pytest.mark.parametrize("path", BODY_DOORS)
def test_a_body_cannot_change_who_the_token_names(sidecar: SidecarProcess, world: World, path: str,
                                                   label: str, subject: dict[str, Any], reason: str) -> None:
    tok = token(world, sub="carol", roles=("viewer",))
    plain = httpx.post(f"{sidecar.base_url}{path}", json=wrap(path, P8), headers=bearer(tok))
    assert allowed_and_reasons(path, plain.json()) == (False, ["not_project_member"])  # as user:carol
    r = httpx.post(f"{sidecar.base_url}{path}", json=wrap(path, {**P8, "subject": subject}), headers=bearer(tok))
    assert r.status_code == 200, r.text
    assert allowed_and_reasons(path, r.json()) == (False, [reason]), label


def test_boxcar_defaults_and_entries_cannot_change_the_subject(sidecar: SidecarProcess, world: World) -> None:
    tok = token(world, sub="carol", roles=("viewer",))
    body = {**P8, "subject": {"type": "group", "id": "carol"},
            "evaluations": [{}, {"subject": {"type": "user", "id": "carol"}}, {"subject": {"type": "group"}}],
            "options": {"tenantguard_context": True}}
    r = httpx.post(f"{sidecar.base_url}/access/v1/evaluations", json=body, headers=bearer(tok))
    reasons = [e["context"]["reasons"] for e in r.json()["evaluations"]]
    assert reasons == [["subject_mismatch"], ["not_project_member"], ["subject_mismatch"]]


def test_opa_get_input_cannot_change_the_subject(sidecar: SidecarProcess, world: World) -> None:
    tok = token(world, sub="carol", roles=("viewer",))
    question = json.dumps({**P8, "subject": {"type": "group", "id": "carol"}})
    r = httpx.get(f"{sidecar.base_url}/v1/data/tenantguard/decision", params={"input": question},
                  headers=bearer(tok))
    assert r.json()["result"] == {"allow": False, "reasons": ["subject_mismatch"], "high_risk": False}


def test_envoy_takes_no_subject_from_the_request(sidecar: SidecarProcess, world: World) -> None:
    """Headers naming a subject never become one: the question has none, the token is it."""
    spoof = {"x-tenant-subject": "group:carol", "x-subject-type": "group", "x-user": "alice"}
    assert "subject" not in question_for(envoy_request("GET", "/projects/p8", spoof).attributes.request.http)
    with grpc.insecure_channel(sidecar.grpc) as channel:
        stub = pb_grpc.AuthorizationStub(channel)
        tok = token(world, sub="carol", roles=("viewer",))
        response = stub.Check(envoy_request("GET", "/projects/p8", {"authorization": f"Bearer {tok}", **spoof}),
                              timeout=5)
    if response.status.code == 0:  # allowed or not, the subject sent upstream is the token's
        sent = {h.header.key: h.header.value for h in response.ok_response.headers}
        assert sent["x-tenant-subject"] == "carol"


# -------------------------------------------------------------------- 2. bounded, interoperable JSON

def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


HOSTILE_JSON: list[tuple[str, bytes, str]] = [
    ("5,000 nested arrays", ('{"input": ' + deep(5000) + "}").encode(), "json_too_deep"),
    ("nesting one past the bound", ('{"context": {"x": ' + deep(MAX_DEPTH - 1) + "}}").encode(), "json_too_deep"),
    ("duplicate key", b'{"action": {"name": "invoices:read"}, "action": {"name": "invoices:write"}}',
     "json_not_interoperable"),
    ("NaN", b'{"context": {"x": NaN}}', "json_not_interoperable"),
    ("Infinity", b'{"context": {"x": -Infinity}}', "json_not_interoperable"),
    ("overflowing float", b'{"context": {"x": 1e400}}', "json_not_interoperable"),
    ("integer beyond 2**53", b'{"at_least": 9007199254740993}', "json_not_interoperable"),
    ("5,000-digit integer", b'{"at_least": ' + b"9" * 5000 + b"}", "json_not_interoperable"),
    ("lone surrogate", b'{"context": {"x": "\\ud800"}}', "json_not_interoperable"),
    ("not UTF-8", b'{"context": {"x": "\xff"}}', "invalid_request"),
    ("an array", b"[]", "invalid_request"),
    ("a string", b'"x"', "invalid_request"),
    ("null", b"null", "invalid_request"),
    ("wrong types", b'{"action": {"name": 5}, "resource": {"type": ["invoice"]}, "at_least": "soon"}',
     "invalid_request"),
]


@pytest.mark.parametrize(("label", "body", "code"), HOSTILE_JSON, ids=[h[0] for h in HOSTILE_JSON])
@pytest.mark.parametrize("path", BODY_DOORS)
def test_hostile_json_bodies_are_typed_400s(sidecar: SidecarProcess, world: World, path: str, label: str,
                                            body: bytes, code: str) -> None:
    if path.startswith("/v1/data/") and label == "wrong types":
        body = b'{"input": ' + body + b"}"  # OPA ignores members beside "input": the question goes inside
    r = httpx.post(f"{sidecar.base_url}{path}", content=body, headers={**JSON, **bearer(token(world))})
    assert (r.status_code, r.json()["error"]) == (400, code), (label, r.text)
    assert "Traceback" not in r.text and r.json()["message"]


@pytest.mark.parametrize(("label", "text", "code"), [
    ("5,000 nested arrays", deep(5000), "json_too_deep"),
    ("nesting one past the bound", '{"context": {"x": ' + deep(MAX_DEPTH - 1) + "}}", "json_too_deep"),
    ("duplicate key", '{"action": {"name": "a"}, "action": {"name": "b"}}', "json_not_interoperable"),
    ("NaN", '{"context": {"x": NaN}}', "json_not_interoperable"),
    ("5,000-digit integer", '{"x": ' + "9" * 5000 + "}", "json_not_interoperable"),
    ("lone surrogate", '{"x": "\\udc00"}', "json_not_interoperable"),
    ("not an object", "[1]", "invalid_request"),
    ("not JSON", "{", "invalid_request"),
])
def test_hostile_opa_query_inputs_are_typed_400s(sidecar: SidecarProcess, world: World, label: str, text: str,
                                                 code: str) -> None:
    r = httpx.get(f"{sidecar.base_url}/v1/data/tenantguard/decision", params={"input": text},
                  headers=bearer(token(world)))
    assert (r.status_code, r.json()["error"]) == (400, code), (label, r.text)


def test_nesting_up_to_the_bound_is_answered(sidecar: SidecarProcess, world: World) -> None:
    wrapping = {"/v1/check": 0, "/access/v1/evaluation": 0, "/access/v1/evaluations": 2,
                "/v1/data/tenantguard/decision": 1}
    for path, extra in wrapping.items():
        for levels, fits in ((MAX_DEPTH - 2 - extra, True), (MAX_DEPTH - 1 - extra, False)):
            question = {**invoice("acme"), "context": {"x": json.loads(deep(levels))}}  # top, context, x
            r = httpx.post(f"{sidecar.base_url}{path}", json=wrap(path, question), headers=bearer(token(world)))
            if fits:
                assert r.status_code == 200 and allowed_and_reasons(path, r.json())[0] is True, (path, r.text)
            else:
                assert (r.status_code, r.json()["error"]) == (400, "json_too_deep"), (path, r.text)


# -------------------------------------------------------------------- 3. bodies announced as JSON

@pytest.mark.parametrize("content_type", [None, "text/plain", "text/plain; charset=utf-8",
                                          "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                                          "application/jsonx", "application/+json", "text/json"])
@pytest.mark.parametrize("path", BODY_DOORS)
def test_bodies_not_announced_as_json_are_refused(sidecar: SidecarProcess, world: World, path: str,
                                                  content_type: str | None) -> None:
    """415, except on the AuthZEN doors: AuthZEN 1.0's error table has no 415 (400 there)."""
    headers = bearer(token(world))
    if content_type is not None:
        headers["content-type"] = content_type
    r = httpx.post(f"{sidecar.base_url}{path}", content=json.dumps(wrap(path, invoice("acme"))).encode(),
                   headers=headers)
    status = 400 if path.startswith("/access/") else 415
    assert (r.status_code, r.json()["error"]) == (status, "unsupported_media_type"), r.text


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8",
                                          "APPLICATION/JSON;charset=UTF-8", "application/problem+json"])
@pytest.mark.parametrize("path", BODY_DOORS)
def test_json_media_types_are_answered(sidecar: SidecarProcess, world: World, path: str, content_type: str) -> None:
    r = httpx.post(f"{sidecar.base_url}{path}", content=json.dumps(wrap(path, invoice("acme"))).encode(),
                   headers={**bearer(token(world)), "content-type": content_type})
    assert r.status_code == 200 and allowed_and_reasons(path, r.json())[0] is True, r.text


def test_opa_python_client_still_works(sidecar: SidecarProcess, world: World) -> None:
    """It sends ``json=`` through requests: ``Content-Type: application/json``."""
    host, port = sidecar.http.rsplit(":", 1)
    client = OpaClient(host=host, port=int(port), token=token(world))
    try:
        body = client.query_rule(input_data=invoice("acme"), package_path="tenantguard", rule_name="decision")
    finally:
        client.close_connection()
    assert body["result"]["allow"] is True


def test_token_exchange_stays_form_encoded(sidecar: SidecarProcess, world: World) -> None:
    """RFC 8693 is form-encoded: the JSON rules do not apply to /oauth2/token."""
    r = httpx.post(f"{sidecar.base_url}/oauth2/token", data={"grant_type": "nope"})
    assert r.status_code == 400 and r.json()["error"] != "unsupported_media_type", r.text
