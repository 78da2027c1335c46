"""One entry for schema files: pick the language, parse, validate.

A bundle's schema file may be OpenFGA DSL (``.fga``), OpenFGA JSON (``.json``) or a SpiceDB
schema (``.zed``); the extension decides, and without one the content does (JSON starts
with ``{``; an OpenFGA model starts with ``model`` or ``module`` after comments; anything
else is read as SpiceDB).
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Literal

from tenantguard.schema.errors import SchemaError
from tenantguard.schema.limits import check_size
from tenantguard.schema.model import Schema
from tenantguard.schema.openfga import parse_openfga
from tenantguard.schema.openfga_json import parse_openfga_json
from tenantguard.schema.spicedb import parse_spicedb
from tenantguard.schema.validate import validate_openfga, validate_spicedb

Format = Literal["openfga", "openfga-json", "spicedb"]
EXTENSIONS: dict[str, Format] = {".fga": "openfga", ".json": "openfga-json", ".zed": "spicedb",
                                 ".spicedb": "spicedb"}
_FGA_START = re.compile(r"\A(?:\s*#[^\n]*\n|\s)*(?:model|module)\b")


def detect_format(text: str, filename: str | None = None) -> Format:
    """The schema language of ``text``: by ``filename``'s extension, else by its content."""
    if filename:
        suffix = PurePath(filename).suffix.lower()
        if suffix in EXTENSIONS:
            return EXTENSIONS[suffix]
        if suffix and suffix not in (".txt", ".schema"):
            raise SchemaError(f"unknown schema file type '{suffix}' (use .fga, .json or .zed)", rule="unknown_format")
    if text.lstrip().startswith("{"):
        return "openfga-json"
    return "openfga" if _FGA_START.match(text) else "spicedb"


def load(text: str, filename: str | None = None) -> Schema:
    """Parse and validate a schema in any supported language; raises SchemaError."""
    check_size(text)
    fmt = detect_format(text, filename)
    if fmt == "spicedb":
        schema = parse_spicedb(text)
        validate_spicedb(schema)
        return schema
    schema = parse_openfga(text) if fmt == "openfga" else parse_openfga_json(text)
    validate_openfga(schema)
    return schema
