"""Relationship schemas: one internal form, compiled from OpenFGA or SpiceDB, one engine.

``model`` is the internal form every front end compiles to and the engine evaluates.
``load`` reads a schema file in any supported language (parse + validate); ``render`` writes
the internal form out as OpenFGA DSL, OpenFGA JSON or SpiceDB schema.
"""

from tenantguard.schema.errors import SchemaError
from tenantguard.schema.load import detect_format, load
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
from tenantguard.schema.openfga import parse_openfga
from tenantguard.schema.openfga_json import parse_openfga_json
from tenantguard.schema.render import to_openfga_dsl, to_openfga_form, to_openfga_json, to_spicedb, to_spicedb_form
from tenantguard.schema.spicedb import parse_spicedb
from tenantguard.schema.validate import validate_openfga, validate_spicedb

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
    "detect_format",
    "load",
    "parse_openfga",
    "parse_openfga_json",
    "parse_spicedb",
    "to_openfga_dsl",
    "to_openfga_form",
    "to_openfga_json",
    "to_spicedb",
    "to_spicedb_form",
    "validate_openfga",
    "validate_spicedb",
]
