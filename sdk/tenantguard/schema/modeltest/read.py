"""Which tool's format a test file is in, decided from its name and then its keys."""

from __future__ import annotations

from pathlib import Path

from tenantguard.schema.modeltest.cases import Suite
from tenantguard.schema.modeltest.errors import TestFileError
from tenantguard.schema.modeltest.fga_store import read_store_file
from tenantguard.schema.modeltest.files import read_text, read_yaml
from tenantguard.schema.modeltest.zed_file import read_validation_file

_ZED_KEYS = {"schema", "schemaFile", "relationships", "assertions", "validation"}


def read_suite(path: Path) -> Suite:
    """A ``.fga.yaml`` store file or a zed validation file, as its own tool would read it."""
    if path.name.endswith((".fga.yaml", ".fga.yml")):
        return read_store_file(path)
    doc = read_yaml(path, read_text(path))
    if isinstance(doc, dict) and ("model" in doc or "model_file" in doc or "tests" in doc):
        return read_store_file(path)
    if isinstance(doc, dict) and _ZED_KEYS & set(doc):
        return read_validation_file(path)
    raise TestFileError(str(path), "neither an fga store file (model, tuples, tests) nor a zed validation file "
                        "(schema, relationships, assertions, validation)", rule="unknown_format")
