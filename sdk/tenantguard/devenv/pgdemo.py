"""The demo's PostgreSQL: a unique schema and a non-superuser role, RLS on, dropped at the end.

Optional by design, but only for the default: without psycopg or a server at the default
DSN the demo says so and skips the data-layer step (the README's first command installs no
database). A DSN the user set (``--pg-dsn`` or ``TG_DEMO_PG_DSN``) is a request to use that
database, so there a failure fails the demo. Messages name the DSN without its password.
The role is ``NOLOGIN NOSUPERUSER NOBYPASSRLS``: RLS never applies to superusers or
BYPASSRLS roles, so the demo's queries run as this role (``SET ROLE``), never as the admin.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from typing import Any, Final

from tenantguard.errors import TenantGuardError
from tenantguard.rls import rls_ddl

DEFAULT_DSN: Final = "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=2"
DSN_ENV: Final = "TG_DEMO_PG_DSN"

ROWS: Final = [("acme", "inv-1", 100, "p1"), ("acme", "inv-2", 250, "p1"), ("globex", "inv-1", 999, "p1")]

_SCHEMA_SQL: Final = """
CREATE TABLE {schema}.invoices (
    tenant_id text NOT NULL,
    id        text NOT NULL,
    amount    int  NOT NULL,
    project   text NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
GRANT USAGE ON SCHEMA {schema} TO {role};
GRANT SELECT ON {schema}.invoices TO {role};
"""


class DemoDatabaseUnavailable(TenantGuardError):
    """The demo's PostgreSQL cannot be used (no psycopg, no server, no rights); the message says which."""

    code = "demo_database_unavailable"


def default_dsn() -> str:
    return os.environ.get(DSN_ENV, DEFAULT_DSN)


_URI_PASSWORD = re.compile(r"^(?P<head>[a-z][a-z0-9+.-]*://[^:/@?#]*):[^@/?#]*@", re.IGNORECASE)
_KV_PASSWORD = re.compile(r"(?:^|\s)password\s*=\s*(?:'(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"([?&])password=[^&#]*&?", re.IGNORECASE)


def shown_dsn(dsn: str) -> str:
    """``dsn`` as it may be printed: every form of password left out (key=value, URI userinfo, URI query)."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = {k: v for k, v in conninfo_to_dict(dsn).items() if k != "password" and v is not None}
        return make_conninfo("", **params)
    except Exception:  # psycopg missing or a DSN it cannot parse: strip by pattern instead
        return strip_password(dsn)


def strip_password(dsn: str) -> str:
    """The pattern-based fallback of :func:`shown_dsn` (no psycopg needed)."""
    text = _URI_PASSWORD.sub(r"\g<head>@", dsn)
    text = _QUERY_PASSWORD.sub(r"\1", text).rstrip("?&")
    return _KV_PASSWORD.sub("", text).strip()


@dataclass
class DemoDatabase:
    """A provisioned schema + role; :meth:`drop` removes both (safe to call twice)."""

    dsn: str
    schema: str
    role: str
    _admin: Any = None

    @classmethod
    def provision(cls, dsn: str) -> DemoDatabase:
        """Create the schema, table, rows, RLS policy and role; raises :class:`DemoDatabaseUnavailable` if it cannot."""
        try:
            import psycopg
            from psycopg import sql
        except ImportError:
            raise DemoDatabaseUnavailable("psycopg is not installed (pip install 'psycopg[binary]')") from None
        try:
            admin = psycopg.connect(dsn, autocommit=True)
        except psycopg.Error as exc:
            raise DemoDatabaseUnavailable(f"no PostgreSQL reachable at '{shown_dsn(dsn)}' "
                                          f"({_first_line(exc)})") from None
        suffix = uuid.uuid4().hex[:10]
        db = cls(dsn, f"tg_demo_{suffix}", f"tg_demo_{suffix}", admin)
        ids = {"schema": sql.Identifier(db.schema), "role": sql.Identifier(db.role)}
        try:
            admin.execute(sql.SQL("CREATE ROLE {role} NOLOGIN NOSUPERUSER NOBYPASSRLS").format(**ids))
            admin.execute(sql.SQL("CREATE SCHEMA {schema}").format(**ids))
            admin.execute(sql.SQL(_SCHEMA_SQL).format(**ids))
            with admin.cursor() as cur:
                cur.executemany(sql.SQL("INSERT INTO {schema}.invoices VALUES (%s, %s, %s, %s)").format(**ids), ROWS)
            for statement in rls_ddl((db.schema, "invoices")):
                admin.execute(statement)
        except psycopg.Error as exc:
            db.drop()
            raise DemoDatabaseUnavailable(f"cannot set up the demo schema at '{shown_dsn(dsn)}' "
                                          f"({_first_line(exc)})") from None
        return db

    def drop(self) -> None:
        admin, self._admin = self._admin, None
        if admin is None:
            return
        from psycopg import sql

        ids = {"schema": sql.Identifier(self.schema), "role": sql.Identifier(self.role)}
        try:
            admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {schema} CASCADE").format(**ids))
            if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (self.role,)).fetchone():
                admin.execute(sql.SQL("DROP OWNED BY {role}").format(**ids))
                admin.execute(sql.SQL("DROP ROLE {role}").format(**ids))
        finally:
            admin.close()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
