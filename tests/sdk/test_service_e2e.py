"""A sample service end to end: FastAPI + require(...) + a REAL sidecar process + RLS in a
real PostgreSQL + outbound exchange to a billing service + the cross-tenant probe.

The orders app has one deliberately leaky route (it reads through a view that bypasses
RLS and skips ``assert_tenant_rows``); the probe must name exactly that route.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel
from tenantguard.client import AsyncAuthzClient
from tenantguard.context import current_context, current_tenant
from tenantguard.fastapi import TenantGuard, require
from tenantguard.identity.keys import TrustSet
from tenantguard.propagation import TenantGuardAuth
from tenantguard.relations import RelationIndex
from tenantguard.rls import assert_tenant_rows, atenant_transaction
from tenantguard.testing import LocalSidecar, TestIssuer, probe_cross_tenant

from .conftest import PgWorld, SignedBundle, embedded_for, invoice

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(90)]


class NewInvoice(BaseModel):
    id: str
    amount: int
    project: str = "p1"


def invoice_resource(invoice_id: str) -> dict[str, Any]:
    return invoice(invoice_id)


def new_invoice_resource(body: NewInvoice) -> dict[str, Any]:
    """Body-derived resources need the annotation: that is how FastAPI knows it is the body."""
    return invoice(body.id, body.project)


def billing_app(guard: TenantGuard) -> FastAPI:
    app = FastAPI()
    guard.install(app)

    @app.get("/payments/{invoice_id}", dependencies=[Depends(require("invoices:read", resource=invoice_resource))])
    async def payment(invoice_id: str) -> dict[str, Any]:
        ctx = current_context()
        return {"invoice": invoice_id, "tenant": ctx.tenant, "actors": ctx.actor_chain, "scope": list(ctx.scope)}

    return app


def orders_app(guard: TenantGuard, db: Any, lock: asyncio.Lock, billing: httpx.AsyncClient) -> FastAPI:
    app = FastAPI()
    guard.install(app)

    async def fetch(invoice_id: str) -> dict[str, Any]:
        async with lock, atenant_transaction(db):  # one pooled connection, reused by every request
            cur = await db.execute("SELECT tenant_id, id, amount FROM invoices WHERE id = %s", (invoice_id,))
            rows = assert_tenant_rows(await cur.fetchall(), column=0, table="invoices")
        if not rows:
            raise HTTPException(404, "no such invoice")
        return {"tenant": rows[0][0], "id": rows[0][1], "amount": rows[0][2]}

    @app.get("/invoices", dependencies=[Depends(require("invoices:list", resource=invoice("*")))])
    async def list_invoices() -> list[dict[str, Any]]:
        async with lock, atenant_transaction(db):
            cur = await db.execute("SELECT tenant_id, id FROM invoices ORDER BY id")
            return [{"tenant": t, "id": i} for t, i in assert_tenant_rows(await cur.fetchall(), column=0)]

    @app.get("/invoices/{invoice_id}", dependencies=[Depends(require("invoices:read", resource=invoice_resource))])
    async def read_invoice(invoice_id: str) -> dict[str, Any]:
        return await fetch(invoice_id)

    @app.get("/invoices/{invoice_id}/payment")
    @require("invoices:read", resource=invoice_resource)
    async def invoice_payment(invoice_id: str) -> dict[str, Any]:
        await fetch(invoice_id)  # visible to this tenant, or 404 before anything goes out
        response = await billing.get(f"http://billing.internal/payments/{invoice_id}")
        return {"status": response.status_code, "billing": response.json()}

    @app.post("/invoices", status_code=201)
    @require("invoices:write", resource=new_invoice_resource)
    async def create_invoice(body: NewInvoice) -> dict[str, Any]:
        async with lock, atenant_transaction(db):
            await db.execute("INSERT INTO invoices (tenant_id, id, amount, project) VALUES (%s, %s, %s, %s)",
                             (current_tenant(), body.id, body.amount, body.project))
        return {"tenant": current_tenant(), "id": body.id}

    @app.get("/legacy/invoices/{invoice_id}",
             dependencies=[Depends(require("invoices:read", resource=invoice_resource))])
    async def legacy_invoice(invoice_id: str) -> dict[str, Any]:
        """THE LEAK: a view owned by a role that bypasses RLS, and no row check."""
        async with lock, atenant_transaction(db):
            cur = await db.execute(
                "SELECT tenant_id, id, amount FROM invoice_list WHERE id = %s ORDER BY tenant_id DESC", (invoice_id,))
            row = await cur.fetchone()
        if row is None:
            raise HTTPException(404, "no such invoice")
        return {"tenant": row[0], "id": row[1], "amount": row[2]}

    return app


@dataclass
class Service:
    http: httpx.AsyncClient
    sidecar: AsyncAuthzClient
    app: FastAPI


@pytest.fixture()
async def service(pg: PgWorld, orders_sidecar: LocalSidecar, issuer: TestIssuer, signed_bundle: SignedBundle,
                  relations_index: RelationIndex, request: pytest.FixtureRequest) -> AsyncIterator[Service]:
    sidecar = AsyncAuthzClient(orders_sidecar.base_url)
    # billing trusts the edge and the orders sidecar's exchange key (the plane would publish it)
    billing_trust = TrustSet(list(orders_sidecar.exchange_trust()))
    billing_authz = embedded_for("billing", issuer, signed_bundle, relations_index, extra_trust=billing_trust)
    billing_guard = TenantGuard(billing_authz, verifier=billing_authz.verifier)
    billing = httpx.AsyncClient(transport=httpx.ASGITransport(app=billing_app(billing_guard)),
                                auth=TenantGuardAuth({"billing.internal": "billing"}, authorizer=sidecar,
                                                     scopes={"billing": "invoices:read"}))
    verifier = getattr(request, "param", "local")
    guard = TenantGuard(sidecar, verifier=issuer.verifier("orders") if verifier == "local" else None)
    db = await pg.aconnect()
    app = orders_app(guard, db, asyncio.Lock(), billing)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://orders") as http:
        yield Service(http, sidecar, app)
    await billing.aclose()
    await sidecar.aclose()
    await db.close()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("service", ["local", "sidecar"], indirect=True)
async def test_reads_are_decided_by_the_sidecar_and_scoped_by_rls(service: Service, issuer: TestIssuer) -> None:
    acme = auth(issuer.mint(audience="orders"))
    globex = auth(issuer.mint("mallory", "globex", audience="orders"))
    own = await service.http.get("/invoices/inv-1", headers=acme)
    assert own.json() == {"tenant": "acme", "id": "inv-1", "amount": 100}
    theirs = await service.http.get("/invoices/inv-1", headers=globex)
    assert theirs.json() == {"tenant": "globex", "id": "inv-1", "amount": 999}  # colliding id, own row
    assert (await service.http.get("/invoices/inv-9", headers=acme)).status_code == 404  # RLS hides it
    listed = (await service.http.get("/invoices", headers=acme)).json()
    assert {row["tenant"] for row in listed} == {"acme"}
    assert (await service.http.get("/invoices/inv-1")).status_code == 401
    assert (await service.http.get("/invoices/inv-1", headers=auth("x.y.z"))).status_code == 401
    viewer_p2 = await service.http.get("/invoices/inv-1", headers=auth(issuer.mint("carol", audience="orders")))
    assert viewer_p2.status_code == 403 and "not_project_member" in viewer_p2.json()["detail"]["reasons"]


async def test_writes_are_stamped_with_the_token_tenant(service: Service, issuer: TestIssuer) -> None:
    globex = auth(issuer.mint("mallory", "globex", audience="orders"))
    created = await service.http.post("/invoices", json={"id": "inv-e2e", "amount": 12}, headers=globex)
    assert created.status_code == 201 and created.json()["tenant"] == "globex"
    acme = auth(issuer.mint(audience="orders"))
    assert (await service.http.get("/invoices/inv-e2e", headers=acme)).status_code == 404
    viewer = auth(issuer.mint(audience="orders", roles=["viewer"]))
    assert (await service.http.post("/invoices", json={"id": "v", "amount": 1}, headers=viewer)).status_code == 403


async def test_outbound_call_to_billing_is_exchanged(service: Service, issuer: TestIssuer) -> None:
    r = await service.http.get("/invoices/inv-1/payment", headers=auth(issuer.mint(audience="orders")))
    assert r.status_code == 200, r.text
    assert r.json() == {"status": 200, "billing": {"invoice": "inv-1", "tenant": "acme", "actors": ["svc:orders"],
                                                   "scope": ["invoices:read"]}}
    # another tenant's object never reaches billing: RLS answers 404 first
    assert (await service.http.get("/invoices/inv-9/payment",
                                   headers=auth(issuer.mint(audience="orders")))).status_code == 404


async def test_cross_tenant_probe_finds_exactly_the_leaky_route(service: Service, issuer: TestIssuer) -> None:
    report = await probe_cross_tenant(
        service.app, headers_a=auth(issuer.mint(audience="orders")),
        ids_b={"invoice_id": ["inv-1", "inv-9"]}, ids_a={"invoice_id": ["inv-1", "inv-2"]}, canaries_b=["globex"])
    assert report.leaky_routes == ["GET /legacy/invoices/{invoice_id}"]
    assert {f.url for f in report.findings} == {"/legacy/invoices/inv-1", "/legacy/invoices/inv-9"}
    assert report.calls == 7 and not report.skipped  # 1 list + 3 routes x 2 ids
