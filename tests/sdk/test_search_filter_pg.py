"""A list endpoint's query with a search filter, against a real PostgreSQL with RLS on.

The example policy grants documents through their ``project``, a column the relations
index does not hold; the filter names the projects, RLS scopes the tenant, and every
row listed is one the check allows (and every row the check allows is listed). Project
membership is the example schema's: alice reaches p4 only through a folder her team is a
member of, which the index walk alone would never propose.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from tenantguard.decision.core import RELATED_EXTENSION, DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.decision.permissions import schema_engine
from tenantguard.policy.engine import RegorusEngine
from tenantguard.policy.testrunner import load_bundle_dir
from tenantguard.relations import RelationIndex, Relationship
from tenantguard.rls import rls_ddl, tenant_transaction
from tenantguard.schema import load
from tenantguard.search import Question, Searcher
from tenantguard.search.sql import psycopg_clause, sqlalchemy_clause

from .conftest import BUNDLE_DIR, PG_DSN, PgWorld, pg_admin

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]
TUPLES = ["acme/project:p1#member@user:alice", "acme/group:eng#member@user:alice",
          "acme/project:p2#owner@group:eng#member", "acme/project:p3#member@user:bob",
          "globex/project:p3#member@user:alice",
          "acme/project:p4#folder@folder:eng", "acme/folder:eng#member@group:eng#member"]
ROWS = [("acme", f"a{i}", project) for i, project in enumerate(["p1", "p2", "p3", None, "p1", "p4", "p2", None])] + \
       [("globex", f"a{i}", "p3") for i in range(4)]  # colliding ids, and a project alice is in at globex


@pytest.fixture(scope="module")
def docs_db() -> Iterator[PgWorld]:
    from psycopg import sql

    admin = pg_admin()
    suffix = uuid.uuid4().hex[:10]
    world = PgWorld(PG_DSN, f"tg_search_{suffix}", f"tg_app_{suffix}")
    ids = {"schema": sql.Identifier(world.schema), "role": sql.Identifier(world.role)}
    try:
        admin.execute(sql.SQL("CREATE ROLE {role} NOLOGIN NOSUPERUSER NOBYPASSRLS").format(**ids))
        admin.execute(sql.SQL("CREATE SCHEMA {schema}").format(**ids))
        admin.execute(sql.SQL("CREATE TABLE {schema}.documents (tenant_id text NOT NULL, id text NOT NULL, "
                              "project text, PRIMARY KEY (tenant_id, id))").format(**ids))
        with admin.cursor() as cur:
            cur.executemany(sql.SQL("INSERT INTO {schema}.documents VALUES (%s, %s, %s)").format(**ids), ROWS)
        admin.execute(sql.SQL("GRANT USAGE ON SCHEMA {schema} TO {role}; "
                              "GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}").format(**ids))
        for statement in rls_ddl((world.schema, "documents")):
            admin.execute(statement)
        yield world
    finally:
        admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {schema} CASCADE").format(**ids))
        admin.execute(sql.SQL("DROP OWNED BY {role}; DROP ROLE IF EXISTS {role}").format(**ids))
        admin.close()


@pytest.fixture(scope="module")
def core() -> DecisionCore:
    modules, data = load_bundle_dir(BUNDLE_DIR)
    rels = [Relationship.parse(t) for t in TUPLES]
    core = DecisionCore("docs", RelationIndex.from_trusted(3, [(r.tenant, r.object, r.relation, r.subject)
                                                               for r in rels]))
    schema = schema_engine(load((BUNDLE_DIR / "schema.fga").read_text(), "schema.fga"))
    core.activate(PolicyRevision("1", RegorusEngine().prepare(modules, data, extensions=RELATED_EXTENSION),
                                 schema=schema))
    return core


def alice(roles: list[str]) -> dict[str, object]:
    return {"type": "user", "id": "alice", "properties": {"tenant_id": "acme", "roles": roles}}


def list_page(conn, flt, after: str, limit: int) -> list[tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    """The endpoint's query: RLS scopes the tenant, the filter the projects, keyset paging."""
    from psycopg import sql

    where, params = psycopg_clause(flt, "project")
    query = sql.SQL("SELECT id, project FROM documents WHERE {} AND id > %(after)s ORDER BY id LIMIT %(limit)s")
    with tenant_transaction(conn, tenant="acme"):
        return conn.execute(query.format(where), {**params, "after": after, "limit": limit}).fetchall()


@pytest.mark.parametrize("roles", [["viewer"], [], ["admin"]])
def test_listed_rows_are_exactly_the_rows_the_check_allows(docs_db: PgWorld, core: DecisionCore,
                                                           roles: list[str]) -> None:
    flt = Searcher(core).resource_filter(Question(alice(roles), {"name": "documents:read"}, {"type": "document"}),
                                         "project")
    conn = docs_db.connect()
    try:
        listed: list[tuple[str, str | None]] = []
        after = ""
        while True:
            page = list_page(conn, flt, after, 3)
            listed += page
            if len(page) < 3:
                break
            after = page[-1][0]
    finally:
        conn.close()
    allowed = []
    for tenant, ident, project in ROWS:
        props = {"project": project} if project else {}
        decision = core.decide(DecisionRequest.from_wire({"subject": alice(roles), "action": {"name": "documents:read"},
                                                          "resource": {"type": "document", "id": ident,
                                                                       "properties": props}}))
        if tenant == "acme" and decision.allow:
            allowed.append((ident, project))
    assert listed == sorted(allowed)
    if roles == ["viewer"]:
        assert listed == [("a0", "p1"), ("a1", "p2"), ("a3", None), ("a4", "p1"), ("a5", "p4"), ("a6", "p2"),
                          ("a7", None)]


def test_the_same_filter_in_sqlalchemy(docs_db: PgWorld, core: DecisionCore) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy", reason="the sqlalchemy extra is not installed")
    from sqlalchemy.dialects import postgresql
    flt = Searcher(core).resource_filter(Question(alice(["viewer"]), {"name": "documents:read"},
                                                  {"type": "document"}), "project")
    table = sqlalchemy.table("documents", sqlalchemy.column("id"), sqlalchemy.column("project"))
    query = sqlalchemy.select(table.c.id).where(sqlalchemy_clause(flt, table.c.project)).order_by(table.c.id)
    conn = docs_db.connect()
    try:
        with tenant_transaction(conn, tenant="acme"):
            text = str(query.compile(dialect=postgresql.dialect(),
                                     compile_kwargs={"literal_binds": True}))
            ids = [row[0] for row in conn.execute(text)]
    finally:
        conn.close()
    assert ids == ["a0", "a1", "a3", "a4", "a5", "a6", "a7"]
