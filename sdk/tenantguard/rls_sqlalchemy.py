"""SQLAlchemy: the same transaction-local tenant setting, on every transaction a Session begins.

``scope_sessions(SessionFactory)`` registers an ``after_begin`` listener: whenever a
session starts a transaction on a connection, it runs
``SELECT set_config('app.tenant_id', :tenant, true)`` with the tenant of the current
request context, so every statement in that transaction is under the table's RLS
policy (see :mod:`tenantguard.rls` for the DDL and the reasons behind ``true``). A
session used outside a request context raises :class:`~tenantguard.context.NoTenantContext`
instead of running unscoped. Needs the ``sqlalchemy`` extra.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, text

from .rls import DEFAULT_SETTING, _tenant

_SET_TENANT = text("SELECT set_config(:setting, :tenant, true)")


def scope_sessions(target: Any, *, setting: str = DEFAULT_SETTING, tenant: str | None = None) -> None:
    """Scope every transaction of ``target`` (a Session class, sessionmaker or session) to the tenant.

    ``tenant`` pins one tenant (e.g. for a job); by default it is read from the current
    request context at the start of each transaction.
    """

    def set_tenant(session: Any, transaction: Any, connection: Any) -> None:
        connection.execute(_SET_TENANT, {"setting": setting, "tenant": _tenant(tenant)})

    event.listen(target, "after_begin", set_tenant)
