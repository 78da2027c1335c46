"""The SQLAlchemy listener scopes every Session transaction, against a real PostgreSQL."""

from __future__ import annotations

import pytest
from tenantguard.context import NoTenantContext, use_context
from tenantguard.rls import TenantMismatch
from tenantguard.testing import TestIssuer

from .conftest import PgWorld

sqlalchemy = pytest.importorskip("sqlalchemy", reason="the sqlalchemy extra is not installed")
pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]


@pytest.fixture()
def sessions(pg: PgWorld):  # type: ignore[no-untyped-def]
    import psycopg
    from sqlalchemy import create_engine, event
    from sqlalchemy.orm import sessionmaker
    from tenantguard.rls_sqlalchemy import scope_sessions

    # One pooled connection, so the second request reuses the first one's connection.
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(pg.dsn), pool_size=1,
                           max_overflow=0)

    @event.listens_for(engine, "connect")
    def act_as_app_role(dbapi_conn, record) -> None:  # type: ignore[no-untyped-def]
        with dbapi_conn.cursor() as cur:  # superusers bypass RLS: act as the application role
            cur.execute(f'SET ROLE "{pg.role}"; SET search_path TO "{pg.schema}"')
        dbapi_conn.commit()

    factory = sessionmaker(engine)
    scope_sessions(factory)
    yield factory
    engine.dispose()


def rows(session) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    from sqlalchemy import text

    return [tuple(r) for r in session.execute(text("SELECT tenant_id, id FROM invoices ORDER BY id"))]


def test_each_transaction_sees_only_its_tenant_on_a_reused_connection(sessions, issuer: TestIssuer) -> None:  # type: ignore[no-untyped-def]
    with use_context(issuer.context(tenant="acme")), sessions() as session:
        assert rows(session) == [("acme", "inv-1"), ("acme", "inv-2")]
    with use_context(issuer.context(tenant="globex")), sessions() as session:
        assert rows(session) == [("globex", "inv-1"), ("globex", "inv-9")]


def test_a_session_outside_a_request_context_refuses_to_run(sessions) -> None:  # type: ignore[no-untyped-def]
    with sessions() as session, pytest.raises(NoTenantContext):
        rows(session)


def test_a_session_left_open_refuses_to_serve_the_next_tenant(sessions, issuer: TestIssuer) -> None:  # type: ignore[no-untyped-def]
    """A thread-local session a request forgot to close: its transaction still carries acme."""
    session = sessions()
    try:
        with use_context(issuer.context(tenant="acme")):
            assert rows(session) == [("acme", "inv-1"), ("acme", "inv-2")]
        with use_context(issuer.context(tenant="globex")), pytest.raises(TenantMismatch):
            rows(session)
        with pytest.raises(NoTenantContext):  # nor serve code outside any request
            rows(session)
        session.rollback()
        with use_context(issuer.context(tenant="globex")):  # a new transaction: the new tenant
            assert rows(session) == [("globex", "inv-1"), ("globex", "inv-9")]
    finally:
        session.close()


def test_a_flush_in_another_tenants_context_is_refused(sessions, issuer: TestIssuer) -> None:  # type: ignore[no-untyped-def]
    """Objects added for acme and flushed in globex's request would be written under acme's setting."""
    from sqlalchemy import Column, Integer, String, text
    from sqlalchemy.orm import DeclarativeBase

    class Base(DeclarativeBase):
        pass

    class Invoice(Base):
        __tablename__ = "invoices"
        tenant_id = Column(String, primary_key=True)
        id = Column(String, primary_key=True)
        amount = Column(Integer, nullable=False)

    session = sessions()
    try:
        with use_context(issuer.context(tenant="acme")):
            session.execute(text("SELECT 1"))
            session.add(Invoice(tenant_id="acme", id="inv-flush", amount=1))
        with use_context(issuer.context(tenant="globex")), pytest.raises(TenantMismatch):
            session.flush()
    finally:
        session.rollback()
        session.close()


def test_core_statements_on_the_sessions_connection_are_checked_too(sessions, issuer: TestIssuer) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import text

    session = sessions()
    try:
        with use_context(issuer.context(tenant="acme")):
            connection = session.connection()
            assert len(connection.execute(text("SELECT id FROM invoices")).fetchall()) == 2
        with use_context(issuer.context(tenant="globex")), pytest.raises(TenantMismatch):
            connection.execute(text("SELECT id FROM invoices")).fetchall()
    finally:
        session.rollback()
        session.close()
    with use_context(issuer.context(tenant="globex")), sessions() as fresh:  # the next checkout: no stale check
        assert rows(fresh) == [("globex", "inv-1"), ("globex", "inv-9")]


def test_a_session_bound_to_an_outside_connection_checks_only_while_its_transaction_lasts(
        pg: PgWorld, issuer: TestIssuer) -> None:
    """One Connection, two sessions in a row for two tenants (the join-an-outer-connection pattern)."""
    import psycopg
    from sqlalchemy import create_engine, text
    from sqlalchemy.orm import Session
    from tenantguard.rls_sqlalchemy import scope_sessions

    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(pg.dsn))
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql(f'SET ROLE "{pg.role}"; SET search_path TO "{pg.schema}"')
            connection.commit()
            for tenant in ("acme", "globex"):
                with use_context(issuer.context(tenant=tenant)), Session(bind=connection) as session:
                    scope_sessions(session)
                    found = session.execute(text("SELECT DISTINCT tenant_id FROM invoices")).fetchall()
                    assert found == [(tenant,)]
                    session.commit()
            assert connection.execute(text("SELECT count(*) FROM invoices")).scalar() == 0  # no check left, no tenant
    finally:
        engine.dispose()
