"""edge: the public entry. It never reads a tenant from the request; its sidecar (edge mode)
verifies the user's IdP token against that tenant's IdP and mints a context token for orders."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tenantguard.client import AsyncAuthzClient
from tenantguard.devenv.services.common import bearer, token_trace
from tenantguard.errors import TenantGuardError


def build_app(sidecar_url: str, orders_url: str) -> FastAPI:
    sidecar = AsyncAuthzClient(sidecar_url)
    orders = httpx.AsyncClient(base_url=orders_url, timeout=10.0)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await orders.aclose()
        await sidecar.aclose()

    app = FastAPI(title="demo edge", lifespan=lifespan)

    @app.get("/invoices/{invoice_id}/payment")
    async def payment(invoice_id: str, request: Request) -> JSONResponse:
        idp_token = bearer(request.headers.get("authorization"))
        if idp_token is None:
            return JSONResponse({"hop": "edge", "error": "token_missing"}, status_code=401)
        try:  # RFC 8693 at our own sidecar: IdP token in, context token for orders out
            exchanged = await sidecar.exchange(idp_token, "orders")
        except TenantGuardError as exc:
            return JSONResponse({"hop": "edge", "error": exc.code, "message": exc.message}, status_code=401)
        headers = {"Authorization": f"Bearer {exchanged.access_token}"}
        claimed = request.headers.get("x-tenant-id")
        if claimed is not None:  # passed through like any gateway would; orders checks it against the token
            headers["X-Tenant-Id"] = claimed
        response = await orders.get(f"/invoices/{invoice_id}/payment", headers=headers)
        return JSONResponse({"hop": "edge", "minted_for_orders": token_trace(exchanged.access_token),
                             "orders": response.json()}, status_code=response.status_code)

    return app
