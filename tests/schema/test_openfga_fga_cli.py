"""Differential checks against the real `fga` CLI (OpenFGA's own parser, transformer and validator).

For every model in the OpenFGA case corpus: `fga model validate` and tenantguard agree on
valid/invalid; for every valid one, our JSON equals `fga model transform`'s, we read its JSON
back to the same schema, and the DSL we render is accepted by fga and transforms to the same
JSON. SpiceDB schemas translated to OpenFGA go through the same check.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tenantguard.schema import load, parse_openfga, parse_openfga_json, to_openfga_dsl, to_openfga_json
from tenantguard.schema.errors import SchemaError
from tenantguard.schema.model import Schema

from .cases_openfga import CASES, Case
from .cases_spicedb import CASES as SPICEDB_CASES


def _fga(fga: str, tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "model.fga"
    path.write_text(text)
    return subprocess.run([fga, "model", *args, "--file", str(path)], capture_output=True, text=True, timeout=30,
                          check=False)


def _ours_accepts(text: str) -> bool:
    try:
        load(text, "model.fga")
    except SchemaError:
        return False
    return True


def _sorted_params(schema: Schema) -> Schema:
    """JSON keeps condition parameters in a map, so fga prints them sorted; compare sorted."""
    conditions = {n: c.__class__(c.name, tuple(sorted(c.params, key=lambda p: p.name)), c.expression)
                  for n, c in schema.conditions.items()}
    return Schema(types=schema.types, conditions=conditions, dialect=schema.dialect)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fga_validate_agrees(fga: str, tmp_path: Path, case: Case) -> None:
    result = _fga(fga, tmp_path, case.text, "validate")
    fga_ok = result.returncode == 0
    assert fga_ok == (case.rule is None or case.fga_cli_accepts), f"fga says {result.stdout}{result.stderr}"
    assert _ours_accepts(case.text) == (case.rule is None)


VALID = [c for c in CASES if c.rule is None]


def _transform(fga: str, tmp_path: Path, text: str) -> dict[str, Any]:
    """`fga model transform`'s JSON, with the two spellings that mean the same thing made one:
    Go prints an empty type list as null, and we write every model as schema 1.1 (1.2 only
    marks modular models, which we do not read)."""
    result = _fga(fga, tmp_path, text, "transform")
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    out["type_definitions"] = out.get("type_definitions") or []
    out["schema_version"] = "1.1"
    return out


@pytest.mark.parametrize("case", VALID, ids=[c.name for c in VALID])
def test_json_matches_fga_transform(fga: str, tmp_path: Path, case: Case) -> None:
    schema = parse_openfga(case.text)
    theirs = _transform(fga, tmp_path, case.text)
    assert to_openfga_json(schema) == theirs
    assert _sorted_params(parse_openfga_json(json.dumps(theirs))) == _sorted_params(schema)


@pytest.mark.parametrize("case", VALID, ids=[c.name for c in VALID])
def test_rendered_dsl_is_accepted_by_fga_and_means_the_same(fga: str, tmp_path: Path, case: Case) -> None:
    schema = parse_openfga(case.text)
    rendered = to_openfga_dsl(schema)
    assert parse_openfga(rendered) == schema
    assert _fga(fga, tmp_path, rendered, "validate").returncode == 0
    assert _transform(fga, tmp_path, rendered) == to_openfga_json(schema)


def _translatable_spicedb() -> list[tuple[str, str]]:
    out = []
    for case in SPICEDB_CASES:
        if case.rule is not None:
            continue
        try:
            out.append((case.name, to_openfga_dsl(load(case.text, "schema.zed"))))
        except SchemaError as exc:
            assert exc.rule == "not_expressible"
    return out


TRANSLATED = _translatable_spicedb()


@pytest.mark.parametrize(("name", "dsl"), TRANSLATED, ids=[n for n, _ in TRANSLATED])
def test_spicedb_translated_to_openfga_is_accepted_by_fga(fga: str, tmp_path: Path, name: str, dsl: str) -> None:
    result = _fga(fga, tmp_path, dsl, "validate")
    assert result.returncode == 0, f"{name}: {result.stdout}{result.stderr}\n{dsl}"
