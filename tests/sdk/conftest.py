"""Shared parts for the SDK tests: an edge issuer, real sidecars, a real PostgreSQL.

Tenants acme and globex have colliding object ids (project p1, invoice inv-1), so a
test that passes by accident of unique ids cannot exist here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tenantguard.bundle import build_bundle
from tenantguard.client.embedded import EmbeddedAuthorizer
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.relations import RelationIndex, Relationship
from tenantguard.testing import LocalSidecar, TestIssuer

REPO = Path(__file__).resolve().parents[2]
BUNDLE_DIR = REPO / "bundles" / "tenantguard"
RELATIONSHIPS = [
    "acme/project:p1#member@user:alice",
    "acme/group:eng#member@user:bob",
    "acme/project:p2#member@group:eng#member",
    "globex/project:p1#member@user:mallory",
    "globex/project:p1#member@user:alice",  # a different alice, in another tenant
]
PG_DSN = os.environ.get("TG_TEST_PG_DSN", "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=3")


def invoice(invoice_id: str = "inv-1", project: str = "p1", tenant: str | None = None) -> dict[str, object]:
    props: dict[str, object] = {"project": project}
    if tenant is not None:
        props["tenant_id"] = tenant
    return {"type": "invoice", "id": invoice_id, "properties": props}


@pytest.fixture(scope="session")
def issuer() -> TestIssuer:
    return TestIssuer("edge")


@pytest.fixture(scope="session")
def relations_index() -> RelationIndex:
    tuples = []
    for text in RELATIONSHIPS:
        rel = Relationship.parse(text)
        tuples.append((rel.tenant, rel.object, rel.relation, rel.subject))
    return RelationIndex.from_trusted(7, tuples)


@dataclass
class SignedBundle:
    archive: bytes
    key: SigningKey


@pytest.fixture(scope="session")
def signed_bundle() -> SignedBundle:
    key = SigningKey.generate()
    return SignedBundle(build_bundle(BUNDLE_DIR, "1", signing_key=key), key)


def embedded_for(service: str, issuer: TestIssuer, bundle: SignedBundle, relations: RelationIndex,
                 extra_trust: TrustSet | None = None, **kwargs: object) -> EmbeddedAuthorizer:
    trust = TrustSet(list(issuer.trust) + list(extra_trust or ()))
    from tenantguard.identity.tokens import TokenVerifier, VerifyOptions

    verifier = TokenVerifier(trust, VerifyOptions(audience=service))
    return EmbeddedAuthorizer(service, bundle=bundle.archive, bundle_key=bundle.key.public_key, verifier=verifier,
                              relations=relations, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def orders_sidecar(issuer: TestIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSidecar]:
    """A real sidecar process for the orders service (core zone; billing is sensitive)."""
    sidecar = LocalSidecar("orders", BUNDLE_DIR, issuer=issuer, relationships=RELATIONSHIPS, relations_seq=7,
                           workdir=tmp_path_factory.mktemp("orders-sidecar"))
    sidecar.start()
    yield sidecar
    sidecar.stop()


# --------------------------------------------------------------------------- PostgreSQL


@dataclass
class PgWorld:
    """A unique schema and a non-superuser role for one test module; dropped afterwards."""

    dsn: str
    schema: str
    role: str

    def connect(self, *, autocommit: bool = True):  # type: ignore[no-untyped-def]
        """A connection acting as the application role (superusers bypass RLS, even FORCEd)."""
        import psycopg
        from psycopg import sql

        conn = psycopg.connect(self.dsn, autocommit=autocommit)
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(self.role)))
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
        if not autocommit:
            conn.commit()
        return conn

    async def aconnect(self):  # type: ignore[no-untyped-def]
        import psycopg
        from psycopg import sql

        conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        await conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(self.role)))
        await conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
        return conn


def pg_admin():  # type: ignore[no-untyped-def]
    """An admin connection, or a skip (a failure with TG_REQUIRE_PG=1) when there is no server."""
    try:
        import psycopg
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'psycopg[binary]')")
    try:
        return psycopg.connect(PG_DSN, autocommit=True)
    except psycopg.OperationalError as exc:
        if os.environ.get("TG_REQUIRE_PG") == "1":
            pytest.fail(f"PostgreSQL required (TG_REQUIRE_PG=1) but unreachable at {PG_DSN!r}: {exc}")
        pytest.skip(f"no PostgreSQL at {PG_DSN!r} (set TG_TEST_PG_DSN, or TG_REQUIRE_PG=1 to fail): {exc}")


SCHEMA_SQL = """
CREATE TABLE {schema}.invoices (
    tenant_id text NOT NULL,
    id        text NOT NULL,
    amount    int  NOT NULL,
    project   text NOT NULL DEFAULT 'p1',
    PRIMARY KEY (tenant_id, id)
);
INSERT INTO {schema}.invoices VALUES
    ('acme', 'inv-1', 100, 'p1'), ('acme', 'inv-2', 250, 'p1'),
    ('globex', 'inv-1', 999, 'p1'), ('globex', 'inv-9', 777, 'p1');
CREATE VIEW {schema}.invoice_list AS
    SELECT tenant_id, id, amount FROM {schema}.invoices;
CREATE VIEW {schema}.invoice_totals AS
    SELECT tenant_id, sum(amount) AS total FROM {schema}.invoices GROUP BY tenant_id;
CREATE VIEW {schema}.invoice_totals_invoker WITH (security_invoker = true) AS
    SELECT tenant_id, sum(amount) AS total FROM {schema}.invoices GROUP BY tenant_id;
GRANT USAGE ON SCHEMA {schema} TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role};
"""


@pytest.fixture(scope="module")
def pg() -> Iterator[PgWorld]:
    from psycopg import sql
    from tenantguard.rls import rls_ddl

    admin = pg_admin()
    suffix = uuid.uuid4().hex[:10]
    world = PgWorld(PG_DSN, f"tg_sdk_{suffix}", f"tg_app_{suffix}")
    ids = {"schema": sql.Identifier(world.schema), "role": sql.Identifier(world.role)}
    try:
        admin.execute(sql.SQL("CREATE ROLE {role} NOLOGIN NOSUPERUSER NOBYPASSRLS").format(**ids))
        admin.execute(sql.SQL("CREATE SCHEMA {schema}").format(**ids))
        admin.execute(sql.SQL(SCHEMA_SQL).format(**ids))
        for statement in rls_ddl((world.schema, "invoices")):
            admin.execute(statement)
        yield world
    finally:
        admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {schema} CASCADE").format(**ids))
        admin.execute(sql.SQL("DROP OWNED BY {role}").format(**ids)) if _role_exists(admin, world.role) else None
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {role}").format(**ids))
        admin.close()


def _role_exists(conn, role: str) -> bool:  # type: ignore[no-untyped-def]
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is not None
