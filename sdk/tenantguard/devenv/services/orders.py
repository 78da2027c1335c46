"""orders: verifies the context token and decides through its own sidecar (local, from memory),
then calls billing with a token its sidecar exchanged for billing (TenantGuardAuth)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any
from urllib.parse import urlsplit

import httpx
from fastapi import Depends, FastAPI, Header
from fastapi.responses import JSONResponse

from tenantguard.client import AsyncAuthzClient, CheckResult
from tenantguard.context import current_context
from tenantguard.devenv.services.common import context_trace
from tenantguard.fastapi import TenantGuard, require
from tenantguard.propagation import TenantGuardAuth

INVOICE_PROJECTS = {"inv-1": "p1", "inv-2": "p1"}


def invoice_resource(invoice_id: str, x_tenant_id: Annotated[str | None, Header()] = None) -> dict[str, Any]:
    """The invoice being read. A tenant named by a header is a claim to check, never the tenant itself."""
    properties: dict[str, Any] = {"project": INVOICE_PROJECTS.get(invoice_id, "unknown")}
    if x_tenant_id is not None:
        properties["tenant_id"] = x_tenant_id
    return {"type": "invoice", "id": invoice_id, "properties": properties}


def decision_trace(result: CheckResult) -> dict[str, Any]:
    return {"allow": result.allow, "decision_id": result.decision_id, "bundle_revision": result.bundle_revision,
            "relations_seq": result.relations_seq}


def build_app(sidecar_url: str, billing_url: str) -> FastAPI:
    sidecar = AsyncAuthzClient(sidecar_url)
    billing_host = urlsplit(billing_url).netloc
    auth = TenantGuardAuth({billing_host: "billing"}, authorizer=sidecar, scopes={"billing": "invoices:read"})
    billing = httpx.AsyncClient(base_url=billing_url, auth=auth, timeout=10.0)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await billing.aclose()
        await sidecar.aclose()

    app = FastAPI(title="demo orders", lifespan=lifespan)
    TenantGuard(sidecar).install(app)

    @app.get("/invoices/{invoice_id}/payment")
    async def payment(invoice_id: str, decision: Annotated[
            CheckResult, Depends(require("invoices:read", resource=invoice_resource))]) -> JSONResponse:
        mode = await sidecar.propagation_mode("billing")
        response = await billing.get(f"/payments/{invoice_id}")
        return JSONResponse({"hop": "orders", "token": context_trace(current_context()),
                             "decision": decision_trace(decision), "to_billing": mode, "billing": response.json()},
                            status_code=response.status_code)

    return app
