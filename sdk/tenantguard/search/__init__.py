"""Search and lookup ("what can alice see?"): the graph proposes, the policy decides.

:class:`Searcher` answers AuthZEN 1.0 subject, resource and action searches and the
native lookups over a :class:`~tenantguard.decision.core.DecisionCore` and its relations
index, a page at a time at one pinned state; :meth:`Searcher.resource_filter` gives a
list endpoint the attribute values to filter its own query on (:mod:`.sql` turns one
into SQLAlchemy or psycopg). Library only: the sidecar's doors call it.
"""

from tenantguard.search.core import Page, Question, ResourceFilter, Searcher, SearchLimits, entity
from tenantguard.search.errors import (
    PageTokenExpired,
    PageTokenInvalid,
    RelationsStale,
    SearchLimitExceeded,
    SearchNotSupported,
)
from tenantguard.search.runner import SearchRunner

__all__ = [
    "Page",
    "PageTokenExpired",
    "PageTokenInvalid",
    "Question",
    "RelationsStale",
    "ResourceFilter",
    "SearchLimitExceeded",
    "SearchLimits",
    "SearchNotSupported",
    "SearchRunner",
    "Searcher",
    "entity",
]
