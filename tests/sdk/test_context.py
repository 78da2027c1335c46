"""Tenant context, cache keys, RLS DDL text, row checks: the pieces without I/O."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from psycopg import sql
from tenantguard.context import (
    NoTenantContext,
    RequestContext,
    current_context,
    current_tenant,
    optional_context,
    use_context,
)
from tenantguard.errors import InvalidInput
from tenantguard.rls import TenantMismatch, assert_tenant_rows, rls_ddl, tenant_key
from tenantguard.testing import TestIssuer, mint_test_token

pytestmark = pytest.mark.timeout(30)


def test_no_context_is_a_typed_error(issuer: TestIssuer) -> None:
    assert optional_context() is None
    with pytest.raises(NoTenantContext) as caught:
        current_tenant()
    assert caught.value.code == "no_tenant_context"


def test_use_context_nests_and_restores(issuer: TestIssuer) -> None:
    acme, globex = issuer.context(tenant="acme"), issuer.context(sub="mallory", tenant="globex")
    with use_context(acme):
        assert current_tenant() == "acme"
        with use_context(globex):
            assert current_context().subject == "mallory"
        assert current_tenant() == "acme"
    assert optional_context() is None


async def test_context_follows_tasks_and_does_not_leak_between_them(issuer: TestIssuer) -> None:
    async def as_tenant(tenant: str) -> str:
        with use_context(issuer.context(tenant=tenant)):
            await asyncio.sleep(0)
            return current_tenant()

    assert await asyncio.gather(as_tenant("acme"), as_tenant("globex")) == ["acme", "globex"]
    with use_context(issuer.context(tenant="acme")):
        assert await asyncio.to_thread(current_tenant) == "acme"  # copied into worker threads


def test_repr_shows_a_fingerprint_never_the_token(issuer: TestIssuer) -> None:
    ctx = issuer.context(tenant="acme")
    for text in (repr(ctx), str(ctx), repr(ctx.log_fields())):
        assert ctx.token not in text
        assert ctx.token.split(".")[2] not in text
    assert ctx.fingerprint in repr(ctx)


def test_minted_test_token_verifies_with_its_trust_set() -> None:
    minted = mint_test_token("bob", "globex", "billing", roles=["viewer"])
    issuer = TestIssuer(key=minted.key)
    claims = issuer.verifier("billing").verify(minted.token)
    assert (claims.sub, claims.tenant_id, claims.roles) == ("bob", "globex", ("viewer",))
    assert minted.token not in repr(minted)


def test_tenant_key_puts_the_tenant_first_and_escapes_every_part(issuer: TestIssuer) -> None:
    with use_context(issuer.context(tenant="acme")):
        assert tenant_key("invoices", "inv-1.pdf") == "acme/invoices/inv-1%2Epdf"
        forged = tenant_key("../globex", "a/b")
        assert forged == "acme/%2E%2E%2Fglobex/a%2Fb"
        assert forged.split("/")[0] == "acme" and len(forged.split("/")) == 3
        assert tenant_key("x", sep=":") == "acme:x"
        assert tenant_key("a:b", sep=":").count(":") == 1
        with pytest.raises(InvalidInput):
            tenant_key("")
    # distinct inputs never collide on one key
    # a verified token never names such a tenant (tenant_id must be a tenant name); the
    # escaping still holds for any string a context carries
    odd = issuer.context(tenant="a")
    with use_context(RequestContext(claims=dataclasses.replace(odd.claims, tenant_id="a/b"), token=odd.token)):
        assert tenant_key("c") == "a%2Fb/c"
    with use_context(issuer.context(tenant="a")):
        assert tenant_key("b", "c") == "a/b/c"
    with pytest.raises(NoTenantContext):
        tenant_key("x")


def test_rls_ddl_enables_forces_and_quotes_identifiers() -> None:
    statements = [s.as_string(None) for s in rls_ddl(("my schema", 'we"ird'), "tenant id", column_type="uuid")]
    assert statements[0] == 'ALTER TABLE "my schema"."we""ird" ENABLE ROW LEVEL SECURITY'
    assert statements[1] == 'ALTER TABLE "my schema"."we""ird" FORCE ROW LEVEL SECURITY'
    assert statements[2] == 'DROP POLICY IF EXISTS "tenant_isolation" ON "my schema"."we""ird"'
    predicate = "\"tenant id\" = NULLIF(current_setting('app.tenant_id', true), '')::uuid"
    assert statements[3] == (f'CREATE POLICY "tenant_isolation" ON "my schema"."we""ird" '
                             f"USING ({predicate}) WITH CHECK ({predicate})")
    assert all(isinstance(s, sql.Composed) for s in rls_ddl("t"))
    with pytest.raises(InvalidInput):
        rls_ddl("t", column_type="text); DROP TABLE t; --")


def test_assert_tenant_rows_accepts_mappings_objects_and_tuples(issuer: TestIssuer) -> None:
    class Row:
        def __init__(self, tenant_id: str) -> None:
            self.tenant_id = tenant_id

    with use_context(issuer.context(tenant="acme")):
        assert assert_tenant_rows([{"tenant_id": "acme"}]) == [{"tenant_id": "acme"}]
        assert len(assert_tenant_rows(iter([Row("acme"), Row("acme")]))) == 2
        assert assert_tenant_rows([("x", "acme")], column=1) == [("x", "acme")]
        assert assert_tenant_rows([]) == []
        with pytest.raises(TenantMismatch):
            assert_tenant_rows([("acme",), ("globex",)], column=0)
