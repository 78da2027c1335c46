"""SQLAlchemy: the same transaction-local tenant setting, on every transaction a Session begins.

``scope_sessions(SessionFactory)`` registers an ``after_begin`` listener: whenever a
session starts a transaction on a connection, it runs
``SELECT set_config('app.tenant_id', :tenant, true)`` with the tenant of the current
request context, so every statement in that transaction is under the table's RLS
policy (see :mod:`tenantguard.rls` for the DDL and the reasons behind ``true``). A
session used outside a request context raises :class:`~tenantguard.context.NoTenantContext`
instead of running unscoped.

The setting lives as long as the transaction, not the request: a session left open at
the end of one request (a thread-local ``scoped_session`` in a reused worker thread, a
module-level session) would carry its tenant into the next request. So each statement
the transaction's connection runs (ORM queries, flushes, ``session.connection()``)
compares the current tenant with the one the transaction was begun for; a different
one raises :class:`~tenantguard.rls.TenantMismatch` before anything runs. Needs the
``sqlalchemy`` extra.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, text

from tenantguard.rls import DEFAULT_SETTING, TenantMismatch, tenant_or_current

_SET_TENANT = text("SELECT set_config(:setting, :tenant, true)")
_CHECKS = "tenantguard_checks"  # session.info: (connection, listener) of the open transaction


def scope_sessions(target: Any, *, setting: str = DEFAULT_SETTING, tenant: str | None = None) -> None:
    """Scope every transaction of ``target`` (a Session class, sessionmaker or session) to the tenant.

    ``tenant`` pins one tenant (e.g. for a job); by default it is read from the current
    request context at the start of each transaction, and checked again before each
    statement the transaction's connection runs (ORM, flush, or ``session.connection()``).
    """

    def set_tenant(session: Any, transaction: Any, connection: Any) -> None:
        value = tenant_or_current(tenant)
        connection.execute(_SET_TENANT, {"setting": setting, "tenant": value})

        def same_tenant(conn: Any, clauseelement: Any, multiparams: Any, params: Any, options: Any) -> None:
            if tenant_or_current(tenant) != value:
                raise TenantMismatch("this session's transaction was begun for another tenant: "
                                     "commit, roll back or close it at the end of each request")

        event.listen(connection, "before_execute", same_tenant)
        session.info.setdefault(_CHECKS, []).append((connection, same_tenant))

    def end_checks(session: Any, transaction: Any) -> None:
        """The top transaction ended, and the setting with it: so do its checks (a Connection
        the session was bound to from outside outlives the transaction)."""
        if transaction.parent is not None:
            return
        for connection, check in session.info.pop(_CHECKS, ()):
            if event.contains(connection, "before_execute", check):
                event.remove(connection, "before_execute", check)

    event.listen(target, "after_begin", set_tenant)
    event.listen(target, "after_transaction_end", end_checks)
