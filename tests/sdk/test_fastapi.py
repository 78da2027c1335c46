"""FastAPI integration: 401 vs 403 vs 503, dependency and decorator forms, OpenAPI, context."""

from __future__ import annotations

import inspect
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import Depends, FastAPI
from pydantic import BaseModel
from tenantguard.client import AsyncAuthzClient, CheckResult, RetryPolicy
from tenantguard.client.embedded import EmbeddedAuthorizer
from tenantguard.context import RequestContext, current_context, current_tenant, optional_context
from tenantguard.fastapi import TenantGuard, require, tenant_context
from tenantguard.relations import RelationIndex
from tenantguard.testing import TestIssuer

from .conftest import SignedBundle, embedded_for, invoice

pytestmark = pytest.mark.timeout(30)


class InvoiceIn(BaseModel):
    id: str
    project: str
    amount: int


def invoice_from_body(body: InvoiceIn) -> dict[str, Any]:
    return invoice(body.id, body.project)


def build_app(guard: TenantGuard) -> FastAPI:
    app = FastAPI()
    guard.install(app)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/invoices/{invoice_id}",
             dependencies=[Depends(require("invoices:read", resource=lambda invoice_id: invoice(invoice_id)))])
    async def read_invoice(invoice_id: str) -> dict[str, Any]:
        return {"id": invoice_id, "tenant": current_tenant()}

    @app.get("/sync/invoices/{invoice_id}")
    @require("invoices:read", resource=lambda invoice_id, project="p1": invoice(invoice_id, project))
    def read_invoice_sync(invoice_id: str, project: str = "p1", verbose: bool = False) -> dict[str, Any]:
        return {"id": invoice_id, "tenant": current_tenant(), "verbose": verbose,
                "thread": threading.current_thread().name}

    @app.post("/invoices", status_code=201)
    @require("invoices:write", resource=invoice_from_body)
    async def create_invoice(body: InvoiceIn) -> dict[str, Any]:
        return {"created": body.id, "tenant": current_tenant()}

    @app.get("/decisions/{invoice_id}")
    async def decision(invoice_id: str,
                       result: CheckResult = Depends(require("invoices:read",  # noqa: B008
                                                              resource=lambda invoice_id: invoice(invoice_id)))
                       ) -> dict[str, Any]:
        return result.to_dict()

    @app.get("/me")
    def me(ctx: RequestContext = Depends(tenant_context)) -> dict[str, Any]:  # noqa: B008
        return {"tenant": ctx.tenant, "sub": ctx.subject, "same": ctx is current_context()}

    @app.get("/whoami")
    async def whoami() -> dict[str, str]:  # reads the context the middleware set, no dependency
        return {"tenant": current_tenant()}

    return app


@pytest.fixture(scope="module")
def embedded(issuer: TestIssuer, signed_bundle: SignedBundle, relations_index: RelationIndex) -> EmbeddedAuthorizer:
    return embedded_for("orders", issuer, signed_bundle, relations_index)


@pytest.fixture()
async def http(embedded: EmbeddedAuthorizer, issuer: TestIssuer) -> AsyncIterator[httpx.AsyncClient]:
    app = build_app(TenantGuard(embedded, verifier=issuer.verifier("orders")))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://orders") as client:
        yield client


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_allowed_request_runs_in_the_tenant_context(http: httpx.AsyncClient, issuer: TestIssuer) -> None:
    r = await http.get("/invoices/inv-1", headers=auth(issuer.mint(audience="orders")))
    assert r.status_code == 200 and r.json() == {"id": "inv-1", "tenant": "acme"}
    assert optional_context() is None  # nothing leaks out of the request


async def test_missing_token_is_401_with_a_bearer_challenge(http: httpx.AsyncClient) -> None:
    r = await http.get("/invoices/inv-1")
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == 'Bearer realm="tenantguard"'
    assert r.json()["error"] == "token_missing"


@pytest.mark.parametrize(("make", "code"), [
    (lambda i: "not-a-jwt", "token_malformed"),
    (lambda i: i.mint(audience="billing"), "audience_invalid"),
    (lambda i: TestIssuer("edge").mint(audience="orders"), "unknown_kid"),
    (lambda i: i.mint(audience="orders", lifetime=1, now=1.0), "token_expired"),
])
async def test_invalid_token_is_401_with_its_code(http: httpx.AsyncClient, issuer: TestIssuer, make: Any,
                                                  code: str) -> None:
    r = await http.get("/invoices/inv-1", headers=auth(make(issuer)))
    assert r.status_code == 401
    assert r.json()["error"] == code
    assert r.headers["www-authenticate"].startswith('Bearer realm="tenantguard", error="invalid_token"')


async def test_deny_is_403_with_reasons(http: httpx.AsyncClient, issuer: TestIssuer) -> None:
    r = await http.get("/sync/invoices/inv-1", params={"project": "p2"}, headers=auth(issuer.mint(audience="orders")))
    assert r.status_code == 403
    body = r.json()
    assert body["error"] == "forbidden" and body["detail"]["reasons"] == ["not_project_member"]
    assert body["detail"]["decision_id"]


async def test_decorator_keeps_sync_routes_and_their_parameters(http: httpx.AsyncClient, issuer: TestIssuer) -> None:
    r = await http.get("/sync/invoices/inv-1", params={"verbose": "true"}, headers=auth(issuer.mint(audience="orders")))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tenant"] == "acme" and body["verbose"] is True
    assert body["thread"] != threading.main_thread().name  # a sync route still runs in the threadpool


async def test_resource_from_the_body(http: httpx.AsyncClient, issuer: TestIssuer) -> None:
    editor, viewer = issuer.mint(audience="orders"), issuer.mint(audience="orders", roles=["viewer"])
    ok = await http.post("/invoices", json={"id": "inv-7", "project": "p1", "amount": 3}, headers=auth(editor))
    assert ok.status_code == 201 and ok.json() == {"created": "inv-7", "tenant": "acme"}
    other_project = await http.post("/invoices", json={"id": "inv-8", "project": "p2", "amount": 3},
                                    headers=auth(editor))
    assert other_project.status_code == 403
    assert (await http.post("/invoices", json={"id": "x", "project": "p1", "amount": 3},
                            headers=auth(viewer))).json()["detail"]["reasons"] == ["missing_role"]
    bad_body = await http.post("/invoices", json={"id": "x"}, headers=auth(editor))
    assert bad_body.status_code == 422


async def test_decision_is_available_to_the_route(http: httpx.AsyncClient, issuer: TestIssuer) -> None:
    r = await http.get("/decisions/inv-1", headers=auth(issuer.mint(audience="orders")))
    assert r.json()["allow"] is True and r.json()["bundle_revision"] == "1"


async def test_context_dependency_and_public_routes(http: httpx.AsyncClient, issuer: TestIssuer) -> None:
    assert (await http.get("/health")).status_code == 200
    assert (await http.get("/health", headers=auth("garbage"))).status_code == 200  # public stays public
    r = await http.get("/me", headers=auth(issuer.mint("mallory", "globex", audience="orders")))
    assert r.json() == {"tenant": "globex", "sub": "mallory", "same": True}
    assert (await http.get("/me")).status_code == 401


async def test_openapi_shows_the_bearer_scheme_and_hides_the_decorator_parameter(http: httpx.AsyncClient) -> None:
    doc = (await http.get("/openapi.json")).json()
    assert doc["components"]["securitySchemes"]["ContextToken"]["scheme"] == "bearer"
    for path in ("/invoices/{invoice_id}", "/sync/invoices/{invoice_id}"):
        operation = doc["paths"][path]["get"]
        assert {"ContextToken": []} in operation["security"]
        names = {p["name"] for p in operation.get("parameters", [])}
        assert "invoice_id" in names and not any("tenantguard" in n for n in names)
    assert "verbose" in {p["name"] for p in doc["paths"]["/sync/invoices/{invoice_id}"]["get"]["parameters"]}


def test_decorated_function_keeps_name_and_parameters() -> None:
    @require("invoices:read", resource="invoice")
    def handler(invoice_id: str, verbose: bool = False) -> str:
        return invoice_id

    assert handler.__name__ == "handler"
    params = list(inspect.signature(handler).parameters)
    assert params[:2] == ["invoice_id", "verbose"]
    assert handler("x", tenantguard_decision__=None) == "x"


async def test_unreachable_sidecar_is_503_fail_closed(issuer: TestIssuer, refused_port: int) -> None:
    client = AsyncAuthzClient(f"http://127.0.0.1:{refused_port}", retry=RetryPolicy(attempts=1))
    app = build_app(TenantGuard(client, verifier=issuer.verifier("orders")))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://orders") as http:
        r = await http.get("/invoices/inv-1", headers=auth(issuer.mint(audience="orders")))
    await client.aclose()
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert r.json()["error"] == "unavailable"


# --------------------------------------------------------------------------- ambiguous credentials


@pytest.mark.parametrize("path", ["/invoices/inv-1", "/me", "/health"])
async def test_two_different_authorization_headers_are_400_duplicate_header(
        http: httpx.AsyncClient, issuer: TestIssuer, path: str) -> None:
    """One caller verified, another served: refused before any route runs, public ones too."""
    acme = issuer.mint(audience="orders")
    globex = issuer.mint("mallory", "globex", audience="orders")
    for second in (f"Bearer {globex}", "Basic YTpi", "Bearer "):
        r = await http.get(path, headers=[("Authorization", f"Bearer {acme}"), ("Authorization", second)])
        assert r.status_code == 400, (path, second, r.text)
        assert r.json()["error"] == "duplicate_header"


async def test_the_same_authorization_header_twice_is_harmless(http: httpx.AsyncClient, issuer: TestIssuer) -> None:
    token = issuer.mint(audience="orders")
    r = await http.get("/me", headers=[("Authorization", f"Bearer {token}")] * 2)
    assert r.status_code == 200 and r.json()["tenant"] == "acme"


async def test_two_authorization_headers_without_the_middleware(embedded: EmbeddedAuthorizer,
                                                                issuer: TestIssuer) -> None:
    """A guard used only through its dependencies (no install) refuses the same way."""
    guard = TenantGuard(embedded, verifier=issuer.verifier("orders"))
    app = FastAPI()

    @app.get("/me")
    async def me(ctx: RequestContext = Depends(guard.context)) -> dict[str, str]:  # noqa: B008
        return {"tenant": ctx.tenant}

    acme = issuer.mint(audience="orders")
    globex = issuer.mint("mallory", "globex", audience="orders")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://orders") as client:
        r = await client.get("/me", headers=[("Authorization", f"Bearer {acme}"),
                                             ("Authorization", f"Bearer {globex}")])
        assert r.status_code == 400 and r.json()["detail"]["error"] == "duplicate_header"
        assert (await client.get("/me", headers=auth(globex))).json() == {"tenant": "globex"}


@pytest.mark.parametrize("name", ["access_token", "token", "authorization"])
async def test_a_token_in_the_query_string_is_not_a_credential(http: httpx.AsyncClient, issuer: TestIssuer,
                                                               name: str) -> None:
    token = issuer.mint(audience="orders")
    r = await http.get("/invoices/inv-1", params={name: token})
    assert r.status_code == 401 and r.json()["error"] == "token_missing"
    r = await http.get("/invoices/inv-1", params={name: f"Bearer {token}"})
    assert r.status_code == 401 and r.json()["error"] == "token_missing"


@pytest.mark.parametrize(("make", "code"), [
    (lambda i: None, "token_missing"),
    (lambda i: "not-a-jwt", "token_malformed"),
    (lambda i: i.mint(audience="billing"), "audience_invalid"),
    (lambda i: i.mint(audience="orders", lifetime=1, now=1.0), "token_expired"),
])
async def test_a_route_reading_the_context_without_require_answers_401_not_500(
        http: httpx.AsyncClient, issuer: TestIssuer, make: Any, code: str) -> None:
    """Bad input from the caller is the caller's 401, never a 500."""
    token = make(issuer)
    r = await http.get("/whoami", headers=auth(token) if token else {})
    assert r.status_code == 401 and r.json()["error"] == code
    assert r.headers["www-authenticate"].startswith('Bearer realm="tenantguard"')
    r = await http.get("/whoami", headers=auth(issuer.mint("mallory", "globex", audience="orders")))
    assert r.status_code == 200 and r.json() == {"tenant": "globex"}


async def test_require_above_the_route_decorator_refuses_instead_of_running_unguarded(
        embedded: EmbeddedAuthorizer, issuer: TestIssuer) -> None:
    """The router stored the bare function: without the check the route would answer anyone."""
    app = FastAPI()
    TenantGuard(embedded, verifier=issuer.verifier("orders")).install(app)

    @require("invoices:read", resource=lambda invoice_id: invoice(invoice_id, "p2"))  # wrong order
    @app.get("/invoices/{invoice_id}")
    async def read_invoice(invoice_id: str) -> dict[str, str]:
        return {"id": invoice_id}

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://orders") as client:
        for headers in ({}, auth(issuer.mint(audience="orders"))):
            r = await client.get("/invoices/inv-1", headers=headers)
            assert r.status_code == 500 and r.json()["error"] == "misconfigured"


async def test_require_below_the_route_decorator_is_not_flagged(http: httpx.AsyncClient, issuer: TestIssuer) -> None:
    r = await http.get("/sync/invoices/inv-1", headers=auth(issuer.mint(audience="orders")))
    assert r.status_code == 200


async def test_a_non_ascii_token_verified_through_the_sidecar_is_401_malformed(issuer: TestIssuer) -> None:
    """SidecarTokenVerifier: the header's latin-1 bytes never reach the sidecar (which here allows anything)."""
    from .flaky import FlakyServer

    with FlakyServer() as sidecar:
        client = AsyncAuthzClient(sidecar.url, retry=RetryPolicy(attempts=1))
        app = build_app(TenantGuard(client))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://orders") as http:
            for raw in (b"Bearer abc\xe9def", b"Bearer abc\x7f"):
                for path in ("/invoices/inv-1", "/whoami"):
                    r = await http.get(path, headers=[(b"Authorization", raw)])
                    assert r.status_code == 401 and r.json()["error"] == "token_malformed", (raw, path, r.text)
        await client.aclose()
        assert sidecar.count == 0


@pytest.mark.parametrize("step", [
    (500, b"<html>oops</html>"), (502, {"allow": True, "decision_id": "d"}), (200, b"not json"),
    (200, {"allow": True}), (200, {"allow": "yes", "decision_id": "d"}), (302, {"allow": True, "decision_id": "d"}),
    (200, {"allow": False, "reasons": 3}), (400, {"error": "invalid_request", "detail": {"message": "x"}}),
    "drop",
], ids=["500-html", "502-allow-body", "200-text", "allow-no-id", "allow-not-bool", "302-allow-body",
        "reasons-number", "detail-shadowing", "dropped"])
async def test_a_sidecar_answer_that_is_not_a_decision_is_never_a_200_nor_a_500(issuer: TestIssuer, step: Any) -> None:
    """The guard over a real (scripted) sidecar: every odd answer is a typed refusal."""
    from .flaky import FlakyServer

    with FlakyServer(default=step if step != "drop" else (200, {})) as sidecar:
        sidecar.then(*([step] * 4))
        client = AsyncAuthzClient(sidecar.url, retry=RetryPolicy(attempts=1))
        app = build_app(TenantGuard(client, verifier=issuer.verifier("orders")))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://orders") as http:
            r = await http.get("/invoices/inv-1", headers=auth(issuer.mint(audience="orders")))
        await client.aclose()
    assert r.status_code in (400, 403, 503), r.text
    assert isinstance(r.json()["error"], str)
