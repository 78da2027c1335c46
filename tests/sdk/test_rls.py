"""Row-level security through the helpers, against a real PostgreSQL as a non-superuser role."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.rows import dict_row
from tenantguard.context import NoTenantContext, use_context
from tenantguard.rls import (
    TENANT_MISMATCHES,
    TenantMismatch,
    assert_tenant_rows,
    atenant_transaction,
    tenant_transaction,
)
from tenantguard.testing import TestIssuer

from .conftest import PgWorld

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]


def ids(conn: psycopg.Connection) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return conn.execute("SELECT tenant_id, id FROM invoices ORDER BY tenant_id, id").fetchall()


def test_the_helper_scopes_reads_to_the_current_tenant(pg: PgWorld, issuer: TestIssuer) -> None:
    with pg.connect() as conn:
        with use_context(issuer.context(tenant="acme")), tenant_transaction(conn):
            assert ids(conn) == [("acme", "inv-1"), ("acme", "inv-2")]
        with use_context(issuer.context(tenant="globex")), tenant_transaction(conn):
            assert ids(conn) == [("globex", "inv-1"), ("globex", "inv-9")]
            # the colliding id: globex sees its own inv-1 only
            assert conn.execute("SELECT amount FROM invoices WHERE id = 'inv-1'").fetchall() == [(999,)]


def test_no_tenant_means_no_rows_and_no_error(pg: PgWorld) -> None:
    """Fail closed: an unset (or ended) setting matches nothing, and NULLIF avoids a cast error."""
    with pg.connect() as conn:
        assert ids(conn) == []


def test_writing_a_row_stamped_with_another_tenant_is_refused(pg: PgWorld, issuer: TestIssuer) -> None:
    with pg.connect() as conn, use_context(issuer.context(tenant="acme")):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):  # noqa: SIM117
            with tenant_transaction(conn):
                conn.execute("INSERT INTO invoices (tenant_id, id, amount) VALUES ('globex', 'inv-x', 1)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):  # noqa: SIM117
            with tenant_transaction(conn):  # moving an own row into another tenant: WITH CHECK again
                conn.execute("UPDATE invoices SET tenant_id = 'globex' WHERE id = 'inv-2'")
        with tenant_transaction(conn):
            conn.execute("INSERT INTO invoices (tenant_id, id, amount) VALUES ('acme', 'inv-new', 5)")
            conn.execute("DELETE FROM invoices WHERE id = 'inv-new'")


def test_plain_set_leaks_to_the_next_use_of_a_pooled_connection_the_helper_does_not(
    pg: PgWorld, issuer: TestIssuer
) -> None:
    """One connection, two requests in a row, as a pool would hand it out."""
    with pg.connect() as conn:
        # Request 1 does it wrong: a session-wide SET.
        conn.execute("SET app.tenant_id = 'globex'")
        conn.execute("SELECT count(*) FROM invoices")
        # Request 2 forgot to set a tenant and reads globex's rows anyway.
        assert ids(conn) == [("globex", "inv-1"), ("globex", "inv-9")]
        conn.execute("RESET app.tenant_id")

        # Request 1 done right, through the helper.
        with use_context(issuer.context(tenant="globex")), tenant_transaction(conn):
            assert len(ids(conn)) == 2
        # Request 2 on the same connection: the setting ended with the transaction.
        assert conn.execute("SELECT current_setting('app.tenant_id', true)").fetchone() == ("",)
        assert ids(conn) == []


def test_the_helper_refuses_to_open_a_transaction_without_a_context(pg: PgWorld) -> None:
    with pg.connect() as conn:
        with pytest.raises(NoTenantContext):  # noqa: SIM117
            with tenant_transaction(conn):
                pytest.fail("must not get here")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_mismatch_assertion_catches_a_view_that_bypasses_rls(pg: PgWorld, issuer: TestIssuer) -> None:
    """The view is owned by the superuser, who bypasses RLS, and lacks security_invoker."""
    before = TENANT_MISMATCHES.labels("invoice_totals")._value.get()
    with pg.connect() as conn, use_context(issuer.context(tenant="acme")), tenant_transaction(conn):
        conn.row_factory = dict_row  # type: ignore[assignment]
        leaked = conn.execute("SELECT tenant_id, total FROM invoice_totals ORDER BY tenant_id").fetchall()
        assert {r["tenant_id"] for r in leaked} == {"acme", "globex"}  # the bypass is real
        with pytest.raises(TenantMismatch) as caught:
            assert_tenant_rows(leaked, table="invoice_totals")
        assert caught.value.detail["row"] == 1
        assert TENANT_MISMATCHES.labels("invoice_totals")._value.get() == before + 1

        safe = conn.execute("SELECT tenant_id, total FROM invoice_totals_invoker").fetchall()
        assert assert_tenant_rows(safe, table="invoice_totals_invoker") == [{"tenant_id": "acme", "total": 350}]


async def test_async_helper_scopes_the_transaction(pg: PgWorld, issuer: TestIssuer) -> None:
    conn = await pg.aconnect()
    try:
        with use_context(issuer.context(tenant="globex")):
            async with atenant_transaction(conn):
                cur = await conn.execute("SELECT id FROM invoices ORDER BY id")
                assert await cur.fetchall() == [("inv-1",), ("inv-9",)]
        cur = await conn.execute("SELECT count(*) FROM invoices")
        assert await cur.fetchone() == (0,)
    finally:
        await conn.close()


# --------------------------------------------------------------------------- nested helpers


ACME = [("acme", "inv-1"), ("acme", "inv-2")]
GLOBEX = [("globex", "inv-1"), ("globex", "inv-9")]


def test_a_nested_helper_for_another_tenant_does_not_outlive_its_block(pg: PgWorld, issuer: TestIssuer) -> None:
    """The inner block is a SAVEPOINT; releasing it used to keep globex for the rest of acme's transaction."""
    with pg.connect() as conn, use_context(issuer.context(tenant="acme")), tenant_transaction(conn):
        with tenant_transaction(conn, tenant="globex"):
            assert ids(conn) == GLOBEX
        assert ids(conn) == ACME


def test_a_nested_helper_that_fails_leaves_the_outer_tenant(pg: PgWorld, issuer: TestIssuer) -> None:
    with pg.connect() as conn, use_context(issuer.context(tenant="acme")), tenant_transaction(conn):
        with pytest.raises(RuntimeError), tenant_transaction(conn, tenant="globex"):
            raise RuntimeError("inner work failed")
        assert ids(conn) == ACME


def test_a_helper_inside_a_plain_transaction_leaves_it_without_a_tenant(pg: PgWorld, issuer: TestIssuer) -> None:
    """Code after the helper, in the caller's own transaction, must not read as the helper's tenant."""
    with pg.connect() as conn, conn.transaction():
        with use_context(issuer.context(tenant="globex")), tenant_transaction(conn):
            assert ids(conn) == GLOBEX
        assert ids(conn) == []


def test_a_helper_inside_an_implicit_transaction_leaves_it_without_a_tenant(pg: PgWorld, issuer: TestIssuer) -> None:
    """A non-autocommit connection opened a transaction on its first statement."""
    with pg.connect(autocommit=False) as conn:
        assert ids(conn) == []
        with use_context(issuer.context(tenant="globex")), tenant_transaction(conn):
            assert ids(conn) == GLOBEX
        assert ids(conn) == []
        conn.rollback()


async def test_a_nested_async_helper_does_not_outlive_its_block(pg: PgWorld, issuer: TestIssuer) -> None:
    conn = await pg.aconnect()
    try:
        with use_context(issuer.context(tenant="acme")):
            async with atenant_transaction(conn):
                async with atenant_transaction(conn, tenant="globex"):
                    cur = await conn.execute("SELECT tenant_id FROM invoices")
                    assert {r[0] for r in await cur.fetchall()} == {"globex"}
                cur = await conn.execute("SELECT tenant_id, id FROM invoices ORDER BY id")
                assert await cur.fetchall() == ACME
    finally:
        await conn.close()


def test_tenant_values_are_data_not_sql(pg: PgWorld, issuer: TestIssuer) -> None:
    """Quotes, backslashes and statement separators in a tenant reach set_config as one value."""
    with pg.connect() as conn:
        for hostile in ("acme' OR '1'='1", "acme'; RESET ROLE; --", "acme\\", "' , true) --", "acme,globex"):
            with tenant_transaction(conn, tenant=hostile):
                assert ids(conn) == []
                assert conn.execute("SELECT current_setting('app.tenant_id')").fetchone() == (hostile,)
