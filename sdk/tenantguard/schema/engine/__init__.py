"""The relationship-schema engine: check, lookup resources, lookup subjects and expand.

``SchemaEngine(schema)`` prepares a schema once (conditions compiled, reachability
precomputed) and answers queries over any ``RelationReads`` (the sidecar's index, or
``MemoryReads``), following the schema's dialect's engine (OpenFGA or SpiceDB) on their
common subset. One idea per module: ``outcome`` (three-valued results), ``conditions``
(CEL), ``prepared`` (per-schema precomputation), ``check`` (the interpreter: the
reference walk), ``compiled`` (the same check walk compiled to closures once per schema,
what ``SchemaEngine.check`` runs), ``lookup``, ``expand``, ``paging`` (cursors), ``limits``
and ``errors``.
"""

from tenantguard.schema.engine.errors import (
    ConditionError,
    EngineError,
    InvalidQuery,
    QueryTooBroad,
    ResolutionTooComplex,
    UnknownRelation,
)
from tenantguard.schema.engine.facade import CheckResult, SchemaEngine
from tenantguard.schema.engine.limits import Limits
from tenantguard.schema.engine.outcome import Decision
from tenantguard.schema.engine.paging import Item, Page

__all__ = [
    "CheckResult",
    "ConditionError",
    "Decision",
    "EngineError",
    "InvalidQuery",
    "Item",
    "Limits",
    "Page",
    "QueryTooBroad",
    "ResolutionTooComplex",
    "SchemaEngine",
    "UnknownRelation",
]
