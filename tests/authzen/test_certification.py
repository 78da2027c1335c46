"""The AuthZEN 1.0 certification scenario (Basic, Batch, Search, Discovery), every request it
shows, against a real sidecar serving its fixture (``bundles/authzen-cert``) over HTTP.

The requests and expectations are the working group's (``interop/certification-authorization-
api-1_0.json``, see ``interop/SOURCE.md``); the checks the document words in prose are below.
The PEP sends no token; the sidecar runs ``--tenant acme`` as for the Todo table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.bundle import build_bundle
from tenantguard.identity.keys import SigningKey

from tests.harness.sidecar_process import SidecarProcess, drain, start_sidecar

from .conftest import TENANT, TodoWorld

REPO = Path(__file__).resolve().parents[2]
CERT_BUNDLE = REPO / "bundles" / "authzen-cert"
TABLE = json.loads((Path(__file__).parent / "interop" / "certification-authorization-api-1_0.json").read_text())
CASES: list[dict[str, Any]] = TABLE["cases"]
# Who may see which record (the search candidates); decisions themselves come from the policy.
RELATIONSHIPS = [f"{TENANT}/record:{r}#viewer@user:{u}" for r in ("record-1", "record-2") for u in ("alice", "bob")]


@pytest.fixture(scope="module")
def pdp(todo_world: TodoWorld) -> Iterator[SidecarProcess]:
    root = todo_world.root / "cert"
    root.mkdir(exist_ok=True)
    plane = SigningKey.generate()  # the fixture bundle is signed like any other
    bundle = root / "cert.tar.gz"
    bundle.write_bytes(build_bundle(CERT_BUNDLE, "1", signing_key=plane))
    relations = root / "relations.json"
    relations.write_text(json.dumps({"seq": 1, "relationships": RELATIONSHIPS}))
    proc = start_sidecar(["--service", "records", "--bundle", str(bundle), "--bundle-key",
                          str(plane.save(root / "plane.pem")), "--trust", str(todo_world.trust_file),
                          "--relations", str(relations), "--tenant", TENANT, "--port", "0", "--grpc-port", "-1"])
    drain(proc)
    yield proc
    proc.stop()


def _case_id(case: dict[str, Any]) -> str:
    return f"{case['id']}-{case['label'].split('(')[-1].rstrip(')').replace(' ', '_')[:40]}"


def post(pdp: SidecarProcess, path: str, body: Any, **headers: str) -> httpx.Response:
    return httpx.post(pdp.base_url + path, json=body, headers=headers, timeout=10)


def result_set(response: httpx.Response) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in response.json()["results"])


def test_the_table_covers_every_level() -> None:
    levels = {case["id"].split("-")[1] for case in CASES}
    assert levels == {"2", "3", "4"} and len(CASES) == 50


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_certification_request(pdp: SidecarProcess, case: dict[str, Any]) -> None:
    request = case["request"]
    if str((request.get("page") or {}).get("token", "")).startswith("<"):  # c-4-5-2: a token from a first page
        first = post(pdp, case["endpoint"], {**request, "page": {"limit": 1}}).json()["page"]["next_token"]
        assert first, "a one-result page of alice and bob must have a next page"
        request = {**request, "page": {"limit": 1, "token": first}}
    response = post(pdp, case["endpoint"], request)
    assert response.status_code == case["status"], response.text
    assert response.headers["content-type"] == "application/json"  # c-5: every answer, errors included
    body = response.json()
    expect = case["expect"]
    if case["status"] != 200:
        assert isinstance(body.get("message", body.get("error")), str)  # an error message string
        return
    if "decision" in expect:
        assert body["decision"] is expect["decision"], body
        assert set(body) <= {"decision", "context"} and isinstance(body.get("context", {}), dict)
    if "decisions" in expect or "count" in expect:
        entries = body["evaluations"]
        assert all(isinstance(e["decision"], bool) for e in entries)
        if "decisions" in expect:
            assert [e["decision"] for e in entries] == expect["decisions"], body
        else:
            assert len(entries) == expect["count"], body
    if case["endpoint"].startswith("/access/v1/search/"):
        assert isinstance(body["results"], list)
        page = body.get("page")
        assert page is None or (isinstance(page, dict) and isinstance(page.get("next_token", ""), str))
    if "results_include" in expect:
        got = {json.dumps(r, sort_keys=True) for r in body["results"]}
        assert {json.dumps(r, sort_keys=True) for r in expect["results_include"]} <= got, body
    if "results" in expect:
        assert body["results"] == expect["results"], body
    if "same_results_as" in expect:
        (base,) = [c for c in CASES if c["id"] == expect["same_results_as"]]
        assert result_set(response) == result_set(post(pdp, base["endpoint"], base["request"]))


# -- what the document states in prose --------------------------------------------------------

PERMIT = {"subject": {"type": "user", "id": "alice"}, "action": {"name": "read"},
          "resource": {"type": "record", "id": "record-1"}}
SEARCHES = {
    "/access/v1/search/subject": {"subject": {"type": "user"}, "action": {"name": "read"},
                                  "resource": {"type": "record", "id": "record-1"}},
    "/access/v1/search/resource": {"subject": {"type": "user", "id": "alice"}, "action": {"name": "read"},
                                   "resource": {"type": "record"}},
    "/access/v1/search/action": {"subject": {"type": "user", "id": "alice"},
                                 "resource": {"type": "record", "id": "record-1"}},
}
BODIES = {"/access/v1/evaluation": PERMIT, "/access/v1/evaluations": {**PERMIT, "evaluations": [{}]}, **SEARCHES}


@pytest.mark.parametrize("path", sorted(BODIES))
@pytest.mark.parametrize(("content", "content_type"), [
    (None, "text/plain"),  # c-2-4-3: a Content-Type other than application/json
    (b'{"subject": ', "application/json"),  # c-2-4-4: malformed JSON
    (b"", "application/json"),  # c-2-4-5: empty body
])
def test_bodies_that_are_not_json_requests_are_400(pdp: SidecarProcess, path: str, content: bytes | None,
                                                   content_type: str) -> None:
    data = json.dumps(BODIES[path]).encode() if content is None else content
    response = httpx.post(pdp.base_url + path, content=data, headers={"content-type": content_type})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"


@pytest.mark.parametrize("path", sorted(BODIES))
def test_x_request_id_is_echoed_and_optional(pdp: SidecarProcess, path: str) -> None:
    """c-2-5-1 and c-2-5-2, on every endpoint (errors too)."""
    assert post(pdp, path, BODIES[path], **{"X-Request-ID": "cert-1"}).headers["x-request-id"] == "cert-1"
    assert post(pdp, path, BODIES[path]).status_code == 200
    refused = post(pdp, path, {}, **{"X-Request-ID": "cert-2"})
    assert refused.status_code == 400 and refused.headers["x-request-id"] == "cert-2"


def test_the_same_request_gets_the_same_decision(pdp: SidecarProcess) -> None:
    """c-2-6: idempotency."""
    assert {post(pdp, "/access/v1/evaluation", PERMIT).json()["decision"] for _ in range(5)} == {True}


@pytest.mark.parametrize("path", sorted(SEARCHES))
def test_pagination_with_a_limit_and_the_token_it_returns(pdp: SidecarProcess, path: str) -> None:
    """c-4-5: ``page.limit`` accepted; every ``next_token`` is a string; following it yields the rest
    (the token is sent with the request otherwise identical, as the spec requires)."""
    body = {**SEARCHES[path], "page": {"limit": 1}}
    seen: list[str] = []
    for _ in range(10):
        response = post(pdp, path, body)
        assert response.status_code == 200, response.text
        page = response.json()["page"]
        assert isinstance(page, dict) and isinstance(page["next_token"], str)
        seen += result_set(response)
        if page["next_token"] == "":
            break
        body = {**SEARCHES[path], "page": {"limit": 1, "token": page["next_token"]}}
    else:
        pytest.fail("pagination never ended")
    assert sorted(seen) == result_set(post(pdp, path, SEARCHES[path]))


def test_discovery_metadata(pdp: SidecarProcess) -> None:
    """c-6: 200 JSON; policy_decision_point is the base URL used for discovery; every endpoint it
    names answers a valid request (HTTPS comes from --public-url behind a TLS front)."""
    response = httpx.get(f"{pdp.base_url}/.well-known/authzen-configuration")
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    meta = response.json()
    assert meta["policy_decision_point"] == pdp.base_url
    paths = {"access_evaluation_endpoint": "/access/v1/evaluation", "access_evaluations_endpoint":
             "/access/v1/evaluations", "search_subject_endpoint": "/access/v1/search/subject",
             "search_resource_endpoint": "/access/v1/search/resource", "search_action_endpoint":
             "/access/v1/search/action"}
    for name, path in paths.items():
        assert meta[name] == pdp.base_url + path
        assert httpx.post(meta[name], json=BODIES[path]).status_code == 200, name
    assert "capabilities" not in meta or all(isinstance(c, str) for c in meta["capabilities"])
