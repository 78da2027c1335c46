"""A :class:`~tenantguard.search.ResourceFilter` as a WHERE clause: SQLAlchemy or psycopg.

Both express exactly :meth:`ResourceFilter.allows`: the column is one of ``values``, or
NULL when ``include_null``, or anything when ``any_value``; an empty filter matches no
row (``FALSE``), never every row. Values travel as bound parameters, never as SQL text.
Row-level security still scopes the tenant (:mod:`tenantguard.rls`): the filter narrows
within it, it does not replace it.
"""

from __future__ import annotations

from typing import Any

from tenantguard.search.core import ResourceFilter


def sqlalchemy_clause(flt: ResourceFilter, column: Any) -> Any:
    """A SQLAlchemy boolean clause over ``column`` (a Column or mapped attribute)."""
    from sqlalchemy import false, or_, true

    if flt.any_value:
        return true()
    parts = []
    if flt.values:
        parts.append(column.in_(list(flt.values)))
    if flt.include_null:
        parts.append(column.is_(None))
    return or_(*parts) if parts else false()


def psycopg_clause(flt: ResourceFilter, column: str) -> tuple[Any, dict[str, Any]]:
    """``(psycopg.sql.Composed, params)``: ``column`` quoted as an identifier, values as
    ``%(tg_filter_values)s`` (an array, compared with ``= ANY``)."""
    from psycopg import sql

    ident = sql.Identifier(*column.split("."))
    if flt.any_value:
        return sql.SQL("TRUE"), {}
    parts = []
    params: dict[str, Any] = {}
    if flt.values:
        parts.append(sql.SQL("{} = ANY(%(tg_filter_values)s)").format(ident))
        params["tg_filter_values"] = list(flt.values)
    if flt.include_null:
        parts.append(sql.SQL("{} IS NULL").format(ident))
    if not parts:
        return sql.SQL("FALSE"), {}
    return sql.SQL("(") + sql.SQL(" OR ").join(parts) + sql.SQL(")"), params
