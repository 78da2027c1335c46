"""billing: a sensitive service. Its sidecar accepts only tokens minted for billing, and the
policy checks the caller (orders may read invoices); the row itself comes from PostgreSQL
under row-level security, with a query that names no tenant at all."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI

from tenantguard.client import AsyncAuthzClient, CheckResult
from tenantguard.context import current_context
from tenantguard.devenv.services.common import context_trace
from tenantguard.devenv.services.orders import decision_trace, invoice_resource
from tenantguard.fastapi import TenantGuard, require
from tenantguard.rls import assert_tenant_rows, atenant_transaction

QUERY = "SELECT tenant_id, id, amount FROM invoices WHERE id = %s"


class Database:
    """One connection as the demo's non-superuser role (RLS applies to it), or none at all."""

    def __init__(self, dsn: str | None, schema: str | None, role: str | None) -> None:
        self.dsn, self.schema, self.role = dsn, schema, role
        self.conn: Any = None
        self.lock = asyncio.Lock()

    async def open(self) -> None:
        if not (self.dsn and self.schema and self.role):
            return
        import psycopg
        from psycopg import sql

        self.conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        await self.conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(self.role)))
        await self.conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()

    async def invoice(self, invoice_id: str) -> dict[str, Any]:
        if self.conn is None:
            return {"skipped": "no PostgreSQL"}
        async with self.lock, atenant_transaction(self.conn):  # set_config('app.tenant_id', <token tenant>, true)
            cur = await self.conn.execute(QUERY, (invoice_id,))
            rows = assert_tenant_rows(await cur.fetchall(), column=0, table="invoices")
            visible = (await (await self.conn.execute("SELECT count(*) FROM invoices")).fetchone())[0]
        return {"query": QUERY, "role": self.role, "rows": [list(r) for r in rows], "visible_rows": visible}


def build_app(sidecar_url: str, db: Database) -> FastAPI:
    sidecar = AsyncAuthzClient(sidecar_url)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await db.open()
        yield
        await db.close()
        await sidecar.aclose()

    app = FastAPI(title="demo billing", lifespan=lifespan)
    TenantGuard(sidecar).install(app)

    @app.get("/payments/{invoice_id}")
    async def payment(invoice_id: str, decision: Annotated[
            CheckResult, Depends(require("invoices:read", resource=invoice_resource))]) -> dict[str, Any]:
        return {"hop": "billing", "token": context_trace(current_context()), "decision": decision_trace(decision),
                "db": await db.invoice(invoice_id)}

    return app
