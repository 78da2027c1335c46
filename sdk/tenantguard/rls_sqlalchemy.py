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
and each flush compares the current tenant with the one the transaction was begun for,
and a different one raises :class:`~tenantguard.rls.TenantMismatch` before anything
runs. Needs the ``sqlalchemy`` extra.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, text

from .rls import DEFAULT_SETTING, TenantMismatch, _tenant

_SET_TENANT = text("SELECT set_config(:setting, :tenant, true)")
_BOUND = "tenantguard_tenant"  # session.info key: the tenant the open transaction was begun for


def scope_sessions(target: Any, *, setting: str = DEFAULT_SETTING, tenant: str | None = None) -> None:
    """Scope every transaction of ``target`` (a Session class, sessionmaker or session) to the tenant.

    ``tenant`` pins one tenant (e.g. for a job); by default it is read from the current
    request context at the start of each transaction, and checked again on each
    statement and flush of that transaction.
    """

    def set_tenant(session: Any, transaction: Any, connection: Any) -> None:
        value = _tenant(tenant)
        connection.execute(_SET_TENANT, {"setting": setting, "tenant": value})
        session.info[_BOUND] = value

    def same_tenant(session: Any) -> None:
        bound = session.info.get(_BOUND)
        if bound is not None and _tenant(tenant) != bound:
            raise TenantMismatch("this session's transaction was begun for another tenant: "
                                 "commit, roll back or close it at the end of each request")

    def forget(session: Any, transaction: Any) -> None:
        if transaction.parent is None:  # the top transaction ended: so did the setting
            session.info.pop(_BOUND, None)

    event.listen(target, "after_begin", set_tenant)
    event.listen(target, "do_orm_execute", lambda state: same_tenant(state.session))
    event.listen(target, "before_flush", lambda session, _context, _instances: same_tenant(session))
    event.listen(target, "after_transaction_end", forget)
