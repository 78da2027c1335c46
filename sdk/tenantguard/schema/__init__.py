"""Relationship schemas: one internal form, compiled from OpenFGA or SpiceDB, one engine.

``model`` is the internal form every front end compiles to and the engine evaluates.
"""

from tenantguard.schema.errors import SchemaError
from tenantguard.schema.model import (
    Arrow,
    Computed,
    Condition,
    Direct,
    Exclusion,
    Expr,
    Intersection,
    Nil,
    Param,
    Position,
    Relation,
    Schema,
    SubjectRef,
    TypeDef,
    Union,
)

__all__ = [
    "Arrow",
    "Computed",
    "Condition",
    "Direct",
    "Exclusion",
    "Expr",
    "Intersection",
    "Nil",
    "Param",
    "Position",
    "Relation",
    "Schema",
    "SchemaError",
    "SubjectRef",
    "TypeDef",
    "Union",
]
