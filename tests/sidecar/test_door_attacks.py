"""Attacks on the decision doors from the network: whose tenant a question is asked in,
and which credential it carries.

Every door is asked twice in-process, through ``SidecarApp`` (guard -> hot doors) and
through ``SidecarApp.api`` (the documented FastAPI routes), with real keys and tokens;
duplicate headers are also sent to a real sidecar process over loopback.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest
from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc

from authz_sidecar.app import SidecarApp
from authz_sidecar.config import SidecarConfig
from authz_sidecar.envoy_authz import MAX_HEADER_VALUES
from authz_sidecar.pep import secret_digest
from authz_sidecar.runtime import Sidecar
from tests.harness import rawhttp
from tests.harness.sidecar_doors import ask, check, invoice
from tests.harness.sidecar_process import SidecarProcess
from tests.harness.sidecar_world import World, token

REMOTE = ("203.0.113.9", 5000)
LOCAL = ("127.0.0.1", 5000)
PEP_SECRET = "pep-" + "k" * 40
JSON = {"content-type": "application/json"}
# mallory is a member of globex's project p1: a question a remote stranger states for her
MALLORY = {"type": "user", "id": "mallory", "properties": {"tenant_id": "globex", "roles": ["editor"]}}


def stated(tenant: str = "globex") -> dict[str, Any]:
    return {**invoice(tenant), "subject": {**MALLORY, "properties": {**MALLORY["properties"], "tenant_id": tenant}}}


def door_bodies(question: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every door that reads a tokenless question's tenant from its body, and that question."""
    subject, action = question["subject"], question["action"]
    return [
        ("/v1/check", question),
        ("/access/v1/evaluation", question),
        ("/access/v1/evaluations", {**question, "evaluations": [{}]}),
        ("/v1/data/tenantguard/decision", {"input": question}),
        ("/v1/data/tenantguard/decision/allow", {"input": question}),
        ("/v1/lookup/resources", {"subject": subject, "action": action, "resource": {"type": "project"}}),
        ("/v1/lookup/subjects", {"subject": {"type": "user"}, "action": action, "resource": question["resource"]}),
        ("/access/v1/search/resource", {"subject": subject, "action": action, "resource": {"type": "invoice"}}),
        ("/access/v1/search/subject", {"subject": {"type": "user", "properties": subject["properties"]},
                                       "action": action, "resource": question["resource"]}),
        ("/access/v1/search/action", {"subject": subject, "resource": question["resource"]}),
    ]


def _app(world: World, **settings: Any) -> SidecarApp:
    config = SidecarConfig(service="billing", bundle_file=world.bundle_file, bundle_keys=(world.plane_pub,),
                           trust_file=world.trust_file, relations_file=world.relations_file,
                           loopback_only=False, **settings)
    return SidecarApp(Sidecar.from_config(config))


@pytest.fixture(scope="module")
def open_app(world: World) -> SidecarApp:
    """``--allow-remote`` without ``--tenant`` or PEP keys."""
    return _app(world)


@pytest.fixture(scope="module")
def pep_app(world: World) -> SidecarApp:
    """``--allow-remote --pep-keys``: a remote gateway holds a PEP key for globex."""
    path = world.root / "pep-keys.json"
    path.write_text(json.dumps({"keys": [{"name": "gw", "tenant": "globex",
                                          "secret_sha256": secret_digest(PEP_SECRET)}]}))
    return _app(world, pep_keys_file=path)


def _both(app: SidecarApp) -> Iterator[tuple[str, Any]]:
    yield "front", app
    yield "framework", app.api


@pytest.mark.parametrize("fixture", ["open_app", "pep_app"])
def test_a_remote_caller_without_a_token_cannot_state_its_tenant(fixture: str, request: pytest.FixtureRequest) -> None:
    """Off loopback (``--allow-remote``), a tokenless question naming its own tenant, subject
    and roles is refused 401 on every door that would believe them, hot or framework."""
    app: SidecarApp = request.getfixturevalue(fixture)
    for path, body in door_bodies(stated()):
        for via, target in _both(app):
            response = ask(target, path, json.dumps(body).encode(), JSON, client=REMOTE)
            assert response.status_code == 401, (via, path, response.text)
            assert response.json()["error"] == "token_missing", (via, path)
            assert response.headers["www-authenticate"].startswith('Bearer realm="tenantguard"'), (via, path)


def test_the_local_service_still_states_its_tenant(open_app: SidecarApp) -> None:
    """The one trust domain (loopback) keeps its documented behaviour: the pin that the
    refusal above is about the peer, not about the question."""
    for path, body in door_bodies(stated()):
        response = ask(open_app, path, json.dumps(body).encode(), JSON, client=LOCAL)
        assert response.status_code == 200, (path, response.text)
    check = ask(open_app, "/v1/check", json.dumps(stated()).encode(), JSON, client=LOCAL).json()
    assert check["allow"] is True


def test_a_remote_caller_with_a_token_is_answered_in_the_tokens_tenant(open_app: SidecarApp, world: World) -> None:
    headers = {**JSON, "authorization": f"Bearer {token(world)}"}
    own = ask(open_app, "/v1/check", json.dumps(invoice("acme")).encode(), headers, client=REMOTE).json()
    assert own["allow"] is True
    other = ask(open_app, "/v1/check", json.dumps(stated()).encode(), headers, client=REMOTE).json()
    assert other["allow"] is False and other["reasons"] in (["subject_mismatch"], ["tenant_mismatch"])


def test_a_remote_pep_key_binds_its_tenant(pep_app: SidecarApp) -> None:
    headers = {**JSON, "authorization": f"Bearer {PEP_SECRET}"}
    own = ask(pep_app, "/access/v1/evaluation", json.dumps(stated()).encode(), headers, client=REMOTE).json()
    assert own["decision"] is True
    other = ask(pep_app, "/access/v1/evaluation", json.dumps(stated("acme")).encode(), headers, client=REMOTE).json()
    assert other["decision"] is False and other["context"]["reasons"] == ["tenant_mismatch"]


def test_a_bound_tenant_authenticates_nobody(world: World) -> None:
    """``--tenant acme --allow-remote``: ``--tenant`` binds the tenant but says nothing about who
    asks, so a remote tokenless caller (stating any subject and roles) is refused on every door;
    the local service is still answered in acme, and one naming globex is denied."""
    app = _app(world, tenant="acme")
    for path, body in door_bodies(stated("acme")):
        for via, target in _both(app):
            response = ask(target, path, json.dumps(body).encode(), JSON, client=REMOTE)
            assert (response.status_code, response.json()["error"]) == (401, "token_missing"), (via, path)
    alice = {**invoice("acme"), "subject": {"type": "user", "id": "alice", "properties": {"roles": ["editor"]}}}
    assert ask(app, "/v1/check", json.dumps(alice).encode(), JSON, client=LOCAL).json()["allow"] is True
    other = ask(app, "/v1/check", json.dumps(stated()).encode(), JSON, client=LOCAL).json()
    assert other["allow"] is False and other["reasons"] == ["tenant_mismatch"]


# -- duplicate credentials ----------------------------------------------------------------------


def _question_for(path: str) -> bytes:
    if path.startswith("/v1/data/"):
        return json.dumps({"input": invoice("acme")}).encode()
    return json.dumps(invoice("acme")).encode()


DOORS = ["/v1/check", "/access/v1/evaluation", "/access/v1/evaluations", "/v1/data/tenantguard/decision",
         "/v1/lookup/resources", "/access/v1/search/resource"]


@pytest.mark.parametrize("path", DOORS)
def test_two_different_authorization_headers_are_refused(sidecar: SidecarProcess, world: World, path: str) -> None:
    """A valid token beside another credential, in either order: 400 ``duplicate_header``,
    never a decision for whichever one a reader happens to take."""
    valid, other = f"Bearer {token(world)}", f"Bearer {token(world, sub='bob')}"
    for first, second in ((valid, other), (other, valid), (valid, "Bearer garbage")):
        headers = [("content-type", "application/json"), ("authorization", first), ("authorization", second)]
        response = httpx.post(sidecar.base_url + path, content=_question_for(path), headers=headers)
        assert response.status_code == 400, (path, response.text)
        assert response.json()["error"] == "duplicate_header", path
    same = [("content-type", "application/json"), ("authorization", valid), ("authorization", valid)]
    assert httpx.post(sidecar.base_url + path, content=_question_for(path), headers=same).status_code == 200


def test_duplicate_authorization_is_refused_alike_by_front_and_framework(world: World) -> None:
    app = SidecarApp(Sidecar.from_config(SidecarConfig(
        service="billing", bundle_file=world.bundle_file, bundle_keys=(world.plane_pub,),
        trust_file=world.trust_file, relations_file=world.relations_file)))
    headers = httpx.Headers([("content-type", "application/json"), ("authorization", f"Bearer {token(world)}"),
                             ("authorization", "Bearer x")])
    for path in DOORS:
        front = ask(app, path, _question_for(path), headers)
        framework = ask(app.api, path, _question_for(path), headers)
        assert front.status_code == framework.status_code == 400, path
        assert front.json()["error"] == framework.json()["error"] == "duplicate_header", path



# -- Envoy doors: a header flood hides a second value ----------------------------------------------


@pytest.fixture(scope="module")
def grpc_stub(sidecar: SidecarProcess) -> Iterator[Any]:
    assert sidecar.grpc is not None
    channel = grpc.insecure_channel(sidecar.grpc)
    yield pb_grpc.AuthorizationStub(channel)
    channel.close()


def test_grpc_door_refuses_a_flood_that_would_hide_a_second_credential(grpc_stub: Any, world: World) -> None:
    """33 copies of one header: refused whole, never decided on the first 32 (the 33rd, another
    tenant's token or tenant claim, would have been dropped unseen and reached the upstream)."""
    acme, globex = f"Bearer {token(world)}".encode(), f"Bearer {token(world, tenant='globex')}".encode()
    flood = [("authorization", acme)] * MAX_HEADER_VALUES + [("authorization", globex)]
    response = check(grpc_stub, "/orders", raw_headers=flood)
    assert response.status.code != 0 and response.denied_response.status.code == 400
    assert json.loads(response.denied_response.body)["error"] == "too_many_header_values"
    claims = [("authorization", acme)] + [("x-tenant-id", b"acme")] * MAX_HEADER_VALUES + [("x-tenant-id", b"globex")]
    response = check(grpc_stub, "/orders", raw_headers=claims)
    assert response.status.code != 0 and response.denied_response.status.code == 400
    fine = check(grpc_stub, "/orders", raw_headers=[("authorization", acme)] * MAX_HEADER_VALUES)
    assert fine.status.code == 0, fine.denied_response.body


def test_http_door_refuses_a_header_flood(sidecar: SidecarProcess, world: World) -> None:
    bearer = f"Bearer {token(world)}"
    flood = [("authorization", bearer)] + [("x-tenant-id", "acme")] * MAX_HEADER_VALUES + [("x-tenant-id", "globex")]
    response = httpx.get(f"{sidecar.base_url}/envoy/ext_authz/orders", headers=flood)
    assert response.status_code == 400 and response.json()["error"] == "too_many_header_values"
    fine = [("authorization", bearer)] + [("x-tenant-id", "acme")] * MAX_HEADER_VALUES
    assert httpx.get(f"{sidecar.base_url}/envoy/ext_authz/orders", headers=fine).status_code == 200


# -- path variants --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/check/", "/access/v1/evaluation/", "/access/v1/evaluations/",
                                  "/v1/lookup/resources/", "/access/v1/search/subject/", "/oauth2/token/"])
def test_a_trailing_slash_is_a_typed_404_never_a_redirect(sidecar: SidecarProcess, world: World, path: str) -> None:
    """The framework used to answer 307 with a Location built from the caller's Host header."""
    headers = {"Authorization": f"Bearer {token(world)}", "Host": "attacker.example"}
    response = httpx.post(sidecar.base_url + path, json=invoice("acme"), headers=headers)
    assert response.status_code == 404, response.text
    assert response.json()["error"] == "not_found" and "location" not in response.headers
    status = httpx.get(sidecar.base_url + "/v1/status/", headers={"Host": "attacker.example"})
    assert status.status_code == 404 and "location" not in status.headers


# -- one question, one reading ----------------------------------------------------------------------


def _get_input(sidecar: SidecarProcess, world: World, query: str) -> httpx.Response:
    return httpx.get(f"{sidecar.base_url}/v1/data/tenantguard/decision?{query}",
                     headers={"Authorization": f"Bearer {token(world)}"})


def test_opa_get_refuses_a_repeated_input(sidecar: SidecarProcess, world: World) -> None:
    """OPA takes the last ``input``; a proxy or log may show the first: refused, whichever order."""
    own, other = (urllib.parse.quote(json.dumps(invoice(t))) for t in ("acme", "globex"))
    for query in (f"input={other}&input={own}", f"input={own}&input={other}", f"input={own}&input={own}"):
        response = _get_input(sidecar, world, query)
        assert response.status_code == 400 and response.json()["error"] == "invalid_request", query
        assert response.json()["detail"]["field"] == "input"
    assert _get_input(sidecar, world, f"input={own}").json()["result"]["allow"] is True


@pytest.mark.parametrize("escape", ["%ff", "%c3%28", "%ed%a0%80", "%e9"])
def test_opa_get_refuses_escapes_that_are_not_utf8(sidecar: SidecarProcess, world: World, escape: str) -> None:
    """Invalid UTF-8 in ``input`` used to become U+FFFD silently (a question nobody sent)."""
    question = json.dumps(invoice("acme")).replace("inv-1", "inv-1" + "\x00")
    query = "input=" + urllib.parse.quote(question).replace("%00", escape)
    response = _get_input(sidecar, world, query)
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


def raw_http(sidecar: SidecarProcess, request: bytes) -> bytes:
    """Send bytes no HTTP client library would, and read the whole answer."""
    return rawhttp.exchange(sidecar.http, request)


def test_opa_get_refuses_raw_non_ascii_in_the_query(sidecar: SidecarProcess, world: World) -> None:
    target = "/v1/data/tenantguard/decision?input=" + urllib.parse.quote(json.dumps(invoice("acme")))
    raw = target.replace("inv-1", "inv-1\u00e9").encode("utf-8")  # unescaped bytes, read as Latin-1 before
    request = (b"GET " + raw + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "
               + token(world).encode() + b"\r\n\r\n")
    answer = raw_http(sidecar, request)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]  # uvicorn or the door: never a decision


@pytest.mark.parametrize("charset", ["latin-1", "utf-16", "iso-8859-1", '"utf-7"'])
def test_a_charset_other_than_utf8_is_refused(sidecar: SidecarProcess, world: World, charset: str) -> None:
    """The sidecar reads UTF-8; a PEP honouring another charset reads other text from the same bytes."""
    headers = {"Authorization": f"Bearer {token(world)}", "Content-Type": f"application/json; charset={charset}"}
    for path in ("/v1/check", "/access/v1/evaluation", "/v1/data/tenantguard/decision"):
        body = {"input": invoice("acme")} if path.startswith("/v1/data") else invoice("acme")
        response = httpx.post(sidecar.base_url + path, content=json.dumps(body).encode(), headers=headers)
        status = 400 if path.startswith("/access/") else 415  # AuthZEN 1.0 has no 415
        assert response.status_code == status and response.json()["error"] == "unsupported_media_type", path
    ok = {**headers, "Content-Type": "application/json; charset=UTF-8"}
    assert httpx.post(f"{sidecar.base_url}/v1/check", json=invoice("acme"), headers=ok).json()["allow"] is True


@pytest.mark.parametrize("name", ["x_tenant_id", "x-tenant_id", "X_Tenant_Id", "x_tenant_subject",
                                  "x_tenantguard_decision_id"])
def test_envoy_doors_refuse_underscore_aliases_of_the_sidecars_headers(sidecar: SidecarProcess, grpc_stub: Any,
                                                                       world: World, name: str) -> None:
    """A WSGI/CGI upstream folds ``x_tenant_id`` into ``HTTP_X_TENANT_ID`` beside the sidecar's
    ``x-tenant-id``: both doors refuse such a request (400), even for the token's own tenant."""
    bearer = f"Bearer {token(world)}"
    response = check(grpc_stub, "/tenants/acme/orders", raw_headers=[("authorization", bearer.encode()),
                                                                     (name, b"globex")])
    assert response.status.code != 0 and response.denied_response.status.code == 400
    assert json.loads(response.denied_response.body)["error"] == "header_aliased"
    http = httpx.get(f"{sidecar.base_url}/envoy/ext_authz/tenants/acme/orders",
                     headers=[("authorization", bearer), (name, "globex")])
    assert http.status_code == 400 and http.json()["error"] == "header_aliased"
    plain = check(grpc_stub, "/tenants/acme/orders", raw_headers=[("authorization", bearer.encode()),
                                                                  ("x-tenant-id", b"acme")])
    assert plain.status.code == 0


@pytest.mark.parametrize(("pseudo", "value"), [(":path", "/tenants/globex/orders"), (":method", "DELETE"),
                                               (":authority", "other.internal")])
def test_grpc_door_refuses_a_pseudo_header_that_disagrees(grpc_stub: Any, world: World, pseudo: str,
                                                          value: str) -> None:
    """Envoy fills ``path`` and ``:path`` (``method``/``:method``, ``host``/``:authority``) from one
    header map; a check where they differ would be decided on one and routed on the other."""
    bearer = f"Bearer {token(world)}"
    response = check(grpc_stub, "/tenants/acme/orders", {"authorization": bearer, pseudo: value})
    assert response.status.code != 0 and response.denied_response.status.code == 400
    assert json.loads(response.denied_response.body)["error"] == "duplicate_header"
    agreeing = {":path": "/tenants/acme/orders", ":method": "GET", ":authority": "billing.internal"}
    same = check(grpc_stub, "/tenants/acme/orders", {"authorization": bearer, pseudo: agreeing[pseudo]})
    assert same.status.code == 0, same.denied_response.body


def test_http_door_refuses_two_different_host_headers(sidecar: SidecarProcess, world: World) -> None:
    """``resource.properties.host`` is what the policy may read; the first of two is not believed."""
    def request(*hosts: bytes) -> bytes:
        lines = b"".join(b"Host: " + h + b"\r\n" for h in hosts)
        return (b"GET /envoy/ext_authz/tenants/acme/orders HTTP/1.1\r\n" + lines + b"Connection: close\r\n"
                b"Authorization: Bearer " + token(world).encode() + b"\r\n\r\n")

    two = raw_http(sidecar, request(b"billing.internal", b"admin.internal"))
    assert two.startswith(b"HTTP/1.1 400"), two[:200]
    assert json.loads(two.partition(b"\r\n\r\n")[2])["error"] == "duplicate_header"
    assert raw_http(sidecar, request(b"billing.internal")).startswith(b"HTTP/1.1 200")



@pytest.mark.parametrize("request_bytes", rawhttp.UNPARSEABLE, ids=range(len(rawhttp.UNPARSEABLE)))
def test_a_request_the_server_cannot_parse_gets_the_json_error_body(sidecar: SidecarProcess,
                                                                     request_bytes: bytes) -> None:
    """uvicorn answers these itself, before any door: plain text, unless the sidecar's protocol says JSON."""
    rawhttp.refuses_as_json(raw_http(sidecar, request_bytes))
