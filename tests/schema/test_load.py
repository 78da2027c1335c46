"""load(): the language comes from the file name, else from the content."""

from __future__ import annotations

import json

import pytest
from tenantguard.schema import detect_format, load
from tenantguard.schema.errors import SchemaError

FGA = "# a model\nmodel\n  schema 1.1\ntype user\n"
ZED = "// a schema\ndefinition user {}\n"
JSON = json.dumps({"schema_version": "1.1", "type_definitions": [{"type": "user"}]})


@pytest.mark.parametrize(("text", "filename", "fmt"), [
    (FGA, "model.fga", "openfga"),
    (FGA, "bundle/MODEL.FGA", "openfga"),
    (JSON, "model.json", "openfga-json"),
    (ZED, "schema.zed", "spicedb"),
    (FGA, None, "openfga"),
    ("\n\n  model\n  schema 1.1\n", None, "openfga"),
    (JSON, None, "openfga-json"),
    (ZED, None, "spicedb"),
    (ZED, "schema.txt", "spicedb"),
])
def test_detect_format(text: str, filename: str | None, fmt: str) -> None:
    assert detect_format(text, filename) == fmt


def test_each_language_loads_to_its_dialect() -> None:
    assert load(FGA).dialect == "openfga"
    assert load(JSON).dialect == "openfga"
    assert load(ZED).dialect == "spicedb"


def test_unknown_extension_is_refused() -> None:
    with pytest.raises(SchemaError) as info:
        load(FGA, "model.yaml")
    assert info.value.rule == "unknown_format"


def test_extension_wins_over_content() -> None:
    with pytest.raises(SchemaError) as info:
        load(FGA, "schema.zed")
    assert info.value.rule == "syntax"
