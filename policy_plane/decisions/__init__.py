"""Durable, queryable decision records: the plane's reader of stream TG_DECISIONS.

* :mod:`.query`: what a query asks (filters, order, page size) and the opaque cursor;
* :mod:`.store`: records validated on arrival into an in-memory recent window, and queries
  answered from it or, beyond it, by scanning the stream with a subject filter;
* :mod:`.explain`: a record's decision replayed against its bundle revision and relations
  state, when the plane still holds them.
"""

from .query import Cursor, DecisionQuery, Page
from .store import DecisionStore

__all__ = ["Cursor", "DecisionQuery", "DecisionStore", "Page"]
