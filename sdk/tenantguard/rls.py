"""The data layer's share of tenant isolation: PostgreSQL row-level security, and checks.

The database enforces the tenant again, so a forgotten ``WHERE tenant_id = ...`` or a
bug in a route cannot return another tenant's rows. Three rules make that hold:

* The tenant is set per *transaction* with ``set_config('app.tenant_id', $1, true)``
  (what ``SET LOCAL`` does, but parameterised). A session-wide ``SET`` survives the
  request on a pooled connection and the next request, which forgot to set a tenant,
  reads the previous tenant's rows; a transaction-local setting is gone at COMMIT or
  ROLLBACK. :func:`tenant_transaction` does only the former.
* Tables get ``ENABLE`` *and* ``FORCE ROW LEVEL SECURITY`` (the owner is subject to it
  too) and one policy with ``USING`` (what can be read, updated, deleted) and
  ``WITH CHECK`` (what can be written), both comparing with
  ``NULLIF(current_setting('app.tenant_id', true), '')``: ``true`` returns NULL for a
  setting never set, and ``NULLIF`` turns the empty string a session reports after a
  transaction-local setting ended into NULL, which matches no row (fail closed, not a
  cast error). :func:`rls_ddl` writes it with identifiers quoted by ``psycopg.sql``.
* RLS does not apply to superusers or roles with BYPASSRLS, and a view runs with its
  owner's rights unless created ``WITH (security_invoker = true)`` (PostgreSQL 15+).
  :func:`assert_tenant_rows` is the cheap last check on what a query returned: any row
  of another tenant raises :class:`TenantMismatch` and counts
  ``tenantguard_sdk_tenant_mismatch_total``.

``tenant_key`` builds cache keys and object-storage paths with the tenant first and
every part escaped, so a part like ``"../globex"`` or ``"a/b"`` can never reach into
another tenant's prefix.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar
from urllib.parse import quote

from prometheus_client import Counter

from tenantguard.context import current_tenant
from tenantguard.errors import InvalidInput, TenantGuardError

try:  # psycopg is optional: only the SQL helpers need it
    from psycopg import sql
    from psycopg.pq import TransactionStatus

    _IDLE: Any = TransactionStatus.IDLE
except ImportError:  # pragma: no cover - exercised only without psycopg
    sql = None  # type: ignore[assignment]
    _IDLE = None

DEFAULT_SETTING = "app.tenant_id"
TENANT_MISMATCHES = Counter(
    "tenantguard_sdk_tenant_mismatch", "Rows of another tenant seen by assert_tenant_rows", ["table"])
# Column types a policy may cast the setting to; anything else is refused, not interpolated.
_CASTS = {"text": None, "uuid": "uuid", "int": "int", "integer": "int", "bigint": "bigint"}
_SET_TENANT = "SELECT set_config(%s, %s, true)"
_GET_SETTING = "SELECT current_setting(%s, true)"

R = TypeVar("R")


class TenantMismatch(TenantGuardError):
    """A query returned a row of another tenant: isolation failed somewhere below the app."""

    code = "tenant_mismatch"
    http_status = 500


def _require_psycopg() -> Any:
    if sql is None:
        raise ImportError("tenantguard.rls needs psycopg 3: pip install 'psycopg[binary]'")
    return sql


def tenant_or_current(tenant: str | None) -> str:
    value = current_tenant() if tenant is None else tenant
    if not isinstance(value, str) or not value:
        raise InvalidInput("tenant must be a non-empty string")
    return value


# --------------------------------------------------------------------------- transactions


@contextmanager
def tenant_transaction(conn: Any, *, setting: str = DEFAULT_SETTING, tenant: str | None = None) -> Iterator[Any]:
    """Open a transaction on a psycopg ``Connection`` scoped to the current tenant.

    The tenant is read before anything touches the connection, so without a context
    (:class:`~tenantguard.context.NoTenantContext`) no transaction is opened at all.
    Inside a transaction already open (a SAVEPOINT), the setting it had is put back
    when the block ends, so the tenant never outlives the block.
    """
    value = tenant_or_current(tenant)
    previous = _previous(conn.execute(_GET_SETTING, (setting,)).fetchone()) if _in_transaction(conn) else None
    with conn.transaction():
        conn.execute(_SET_TENANT, (setting, value))
        yield conn
    if previous is not None:
        conn.execute(_SET_TENANT, (setting, previous))


@asynccontextmanager
async def atenant_transaction(conn: Any, *, setting: str = DEFAULT_SETTING,
                              tenant: str | None = None) -> AsyncIterator[Any]:
    """:func:`tenant_transaction` for a psycopg ``AsyncConnection``."""
    value = tenant_or_current(tenant)
    previous = None
    if _in_transaction(conn):
        previous = _previous(await (await conn.execute(_GET_SETTING, (setting,))).fetchone())
    async with conn.transaction():
        await conn.execute(_SET_TENANT, (setting, value))
        yield conn
    if previous is not None:
        await conn.execute(_SET_TENANT, (setting, previous))


def _in_transaction(conn: Any) -> bool:
    """True when ``conn.transaction()`` will be a SAVEPOINT inside a transaction already open.

    Why it matters: ``set_config(..., true)`` lasts to the end of the *top* transaction,
    and releasing a savepoint keeps it. Without a restore, the statements after a nested
    helper (an outer helper for another tenant, or a plain transaction with no tenant)
    would run as the inner helper's tenant.
    """
    return bool(conn.info.transaction_status != _IDLE)


def _previous(row: Any) -> str:
    """The setting as it was before the nested helper ('' when it was never set)."""
    return "" if row is None or row[0] is None else str(row[0])


# --------------------------------------------------------------------------- DDL


def rls_ddl(table: str | Sequence[str], tenant_column: str = "tenant_id", *, setting: str = DEFAULT_SETTING,
            policy: str = "tenant_isolation", column_type: str = "text", replace: bool = True) -> list[Any]:
    """Statements that put ``table`` under tenant isolation (``psycopg.sql.Composed`` each).

    ``table`` may be ``"invoices"`` or ``("schema", "invoices")``. ``column_type`` is the
    tenant column's type (text, uuid, int, bigint). Run them as the table owner.
    """
    q = _require_psycopg()
    if column_type not in _CASTS:
        raise InvalidInput(f"column_type must be one of {sorted(_CASTS)}")
    parts = (table,) if isinstance(table, str) else tuple(table)
    if not parts or not all(isinstance(p, str) and p for p in parts):
        raise InvalidInput("table must be a name or a (schema, name) pair")
    target = q.Identifier(*parts)
    current = q.SQL("NULLIF(current_setting({}, true), '')").format(q.Literal(setting))
    cast = _CASTS[column_type]
    if cast is not None:
        current = q.SQL("{}::{}").format(current, q.SQL(cast))
    predicate = q.SQL("{} = {}").format(q.Identifier(tenant_column), current)
    statements = [
        q.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(target),
        q.SQL("ALTER TABLE {} FORCE ROW LEVEL SECURITY").format(target),
    ]
    if replace:
        statements.append(q.SQL("DROP POLICY IF EXISTS {} ON {}").format(q.Identifier(policy), target))
    statements.append(q.SQL("CREATE POLICY {} ON {} USING ({}) WITH CHECK ({})").format(
        q.Identifier(policy), target, predicate, predicate))
    return statements


def apply_rls(conn: Any, table: str | Sequence[str], tenant_column: str = "tenant_id", **kwargs: Any) -> None:
    """Run :func:`rls_ddl` in one transaction on a sync psycopg connection."""
    with conn.transaction():
        for statement in rls_ddl(table, tenant_column, **kwargs):
            conn.execute(statement)


# --------------------------------------------------------------------------- checks


def _row_tenant(row: Any, column: str | int) -> Any:
    if isinstance(column, int):
        return row[column]
    if isinstance(row, Mapping):
        return row[column]
    return getattr(row, column)


def assert_tenant_rows(rows: Iterable[R], column: str | int = "tenant_id", *, tenant: str | None = None,
                       table: str = "-") -> list[R]:
    """Return ``rows`` as a list after checking each one belongs to the current tenant.

    Rows may be mappings (``dict_row``), objects with the attribute, or tuples with
    ``column`` as an index. The first foreign row raises :class:`TenantMismatch`.
    """
    expected = tenant_or_current(tenant)
    checked = list(rows)
    for position, row in enumerate(checked):
        found = _row_tenant(row, column)
        if str(found) != expected:
            TENANT_MISMATCHES.labels(table).inc()
            raise TenantMismatch("a query returned a row of another tenant", row=position, table=table)
    return checked


# --------------------------------------------------------------------------- keys


def _escape(part: Any) -> str:
    text = str(part)
    if not text:
        raise InvalidInput("key parts must be non-empty")
    # quote() leaves "." alone; escaping it too keeps "." and ".." from meaning anything.
    return quote(text, safe="").replace(".", "%2E")


def tenant_key(*parts: Any, tenant: str | None = None, sep: str = "/") -> str:
    """``<tenant>/<part>/<part>``: each segment percent-escaped, so none can contain ``sep``."""
    if sep not in {"/", ":"}:
        raise InvalidInput("sep must be '/' or ':'")
    if not parts:
        raise InvalidInput("tenant_key needs at least one part after the tenant")
    return sep.join([_escape(tenant_or_current(tenant)), *(_escape(p) for p in parts)])


__all__ = [
    "DEFAULT_SETTING",
    "TENANT_MISMATCHES",
    "TenantMismatch",
    "apply_rls",
    "assert_tenant_rows",
    "atenant_transaction",
    "rls_ddl",
    "tenant_key",
    "tenant_transaction",
]
