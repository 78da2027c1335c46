"""OpenFGA's own language test data (``openfga_language/``, copied unchanged) on tenantguard's loader.

openfga/language's Go, JS and Java packages hold their parsers and validators to these files;
here they hold tenantguard's schema front ends to them:

* every DSL case with expected errors is refused with a SchemaError (never another exception)
  whose line is one of the expected errors' lines (the data's lines and columns are 0-based;
  ours are 1-based), whose column is that error's, and whose rule is one ``ERROR_TYPES``
  maps that error's ``errorType`` to; every case without expected errors loads;
* the JSON cases likewise (no positions in JSON), and a JSON model that OpenFGA's transformer
  cannot write as DSL is one ``to_openfga_dsl`` refuses too;
* every ``transformer/`` pair (the same model as DSL and as JSON) reads to the same schema;
* object ids OpenFGA accepts (and only those) are accepted in ``model test`` store tuples,
  and the ``stores/`` files pass or fail ``tenantguard model test`` as they pass or fail for
  OpenFGA's CLI.

Where tenantguard answers differently on purpose, ``DIVERGES`` says so with a reason, and the
test asserts that the case still diverges, so the table cannot go stale. The 7 cases OpenFGA's
own suites skip (``skip: true``) run here like the others.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from tenantguard.schema import (
    SchemaError,
    load,
    parse_openfga,
    parse_openfga_json,
    to_openfga_dsl,
    validate_openfga,
)
from tenantguard.schema.model import Schema
from tenantguard.schema.modeltest import read_suite
from tenantguard.schema.modeltest.errors import TestFileError
from tenantguard.schema.modeltest.run import run_suite
from tenantguard.schema.modeltest.tuples import fga_tuple

DATA = Path(__file__).parent / "openfga_language"

# OpenFGA's errorType -> the rules tenantguard refuses such a model with. Syntax errors carry no
# errorType (None): OpenFGA's ANTLR grammar refuses what tenantguard's parser refuses as
# `syntax` or, where the parser already knows the reason, under that reason's rule.
ERROR_TYPES: dict[str | None, frozenset[str]] = {
    None: frozenset({"syntax", "duplicate_relation", "duplicate_condition", "duplicate_param",
                     "invalid_param_type", "unsupported"}),
    "missing-definition": frozenset({"undefined_relation"}),
    "reserved-type-keywords": frozenset({"reserved_name"}),
    "reserved-relation-keywords": frozenset({"reserved_name"}),
    "invalid-name": frozenset({"invalid_name"}),
    # OpenFGA's server refuses some of these models as cycles before its entrypoint walk runs
    "relation-no-entry-point": frozenset({"no_entrypoint", "cycle"}),
    "tupleuserset-not-direct": frozenset({"tupleset_not_direct", "invalid_tupleset_type"}),
    "invalid-relation-on-tupleset": frozenset({"undefined_relation"}),
    "invalid-type": frozenset({"undefined_type"}),
    "invalid-relation-type": frozenset({"undefined_relation"}),
    "duplicated-error": frozenset({"duplicate_type", "duplicate_type_restriction", "duplicate_partial_relation"}),
    "condition-not-defined": frozenset({"undefined_condition"}),
    "condition-not-used": frozenset({"condition_not_used"}),
    "invalid-schema": frozenset({"schema_version"}),
    # a modular model without 'schema': tenantguard refuses modules as such (see DIVERGES)
    "schema-version-required": frozenset({"schema_version", "unsupported"}),
    "different-nested-condition-name": frozenset({"invalid_condition"}),
    "multiple-modules-in-file": frozenset({"multiple_modules_in_file"}),
}

_CYCLE = ("refused (rule cycle): openfga/language's validator accepts it, but OpenFGA's server refuses it "
          "('an authorization model cannot contain a cycle', `fga model validate`), and tenantguard follows the "
          "server: a model OpenFGA cannot store is not one to run")
_ANTLR_SPACE = ("column: ANTLR reports the whitespace before the operator that mixes 'or'/'and'/'but not'; "
                "tenantguard points at the operator itself")

# Cases where tenantguard answers differently, on purpose: case key -> one-line reason.
DIVERGES: dict[str, str] = {
    "dsl-syntax/union does not require all child to have entry": _CYCLE,
    "dsl-syntax/union does not require all child to have entry even for intersection child": _CYCLE,
    "dsl-syntax/union does not require all child to have entry even for exclusion child": _CYCLE,
    "dsl-semantic/union does not require all child to have entry": _CYCLE,
    "dsl-semantic/union does not require all child to have entry even for intersection child": _CYCLE,
    "dsl-semantic/union does not require all child to have entry even for exclusion child": _CYCLE,
    "dsl-syntax/disallows multiple extends for same type": (
        "refused at line 1 (rule unsupported): tenantguard does not read modular models, so it stops at 'module' "
        "before OpenFGA's complaint about the repeated 'extend type'"),
    "dsl-syntax/mixed operators": _ANTLR_SPACE,
    "dsl-syntax/mixed operators with parens": _ANTLR_SPACE,
    "dsl-syntax/mixed operators with mulitple paren sets": _ANTLR_SPACE,
    "dsl-syntax/mixed operators with mixed operations and paren sets": _ANTLR_SPACE,
    "dsl-syntax/an invalid model with confusing but not references": _ANTLR_SPACE,
    "dsl-syntax/an invalid model with mixed operators": _ANTLR_SPACE,
}


# -- the cases --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Expected:
    """One error OpenFGA reports, with tenantguard's 1-based position (None for JSON)."""

    error_type: str | None
    line: int | None
    column: int | None
    message: str

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Expected:
        line, column = raw.get("line"), raw.get("column")
        return cls((raw.get("metadata") or {}).get("errorType"),
                   line["start"] + 1 if line else None, column["start"] + 1 if column else None, raw["msg"])


@dataclass(frozen=True)
class Case:
    key: str
    text: str
    filename: str
    errors: tuple[Expected, ...]

    def __str__(self) -> str:
        return self.key


def _cases(file: str, short: str, field: str, filename: str) -> list[Case]:
    out: list[Case] = []
    for c in yaml.safe_load((DATA / file).read_text()):
        key = f"{short}/{c['name']}"
        n = sum(1 for seen in out if seen.key.split(" #")[0] == key)
        out.append(Case(key + (f" #{n + 1}" if n else ""), c[field], filename,  # two cases share a name
                        tuple(Expected.of(e) for e in c.get("expected_errors") or ())))
    return out


SYNTAX = _cases("dsl-syntax-validation-cases.yaml", "dsl-syntax", "dsl", "model.fga")
SEMANTIC = _cases("dsl-semantic-validation-cases.yaml", "dsl-semantic", "dsl", "model.fga")
JSON_CASES = _cases("json-validation-cases.yaml", "json", "json", "model.json")
CASES = SYNTAX + SEMANTIC + JSON_CASES


def disagreement(case: Case) -> str | None:
    """How tenantguard's verdict on ``case`` differs from OpenFGA's, or None when it does not."""
    try:
        load(case.text, case.filename)
    except SchemaError as e:
        if not case.errors:
            return f"refused at {e.line}:{e.column} ({e.rule}) a model OpenFGA accepts: {e}"
        if e.line is None:
            same_place = list(case.errors)
        else:
            same_place = [x for x in case.errors if x.line == e.line]
            if not same_place:
                return f"refused at line {e.line}, OpenFGA at {sorted({x.line for x in case.errors})}: {e}"
            if not any(x.column == e.column for x in same_place):
                return f"refused at column {e.column}, OpenFGA at {sorted({x.column for x in same_place})}: {e}"
            same_place = [x for x in same_place if x.column == e.column]
        rules = frozenset().union(*(ERROR_TYPES[x.error_type] for x in same_place))
        if e.rule not in rules:
            return f"rule {e.rule}, OpenFGA's {sorted({x.error_type or 'syntax' for x in same_place})}: {e}"
        return None
    if case.errors:
        return f"accepted; OpenFGA refuses: {[x.message for x in case.errors]}"
    return None


def test_the_data_is_all_here() -> None:
    assert (len(SYNTAX), len(SEMANTIC), len(JSON_CASES)) == (81, 91, 5)
    assert sum(1 for c in CASES if c.errors) == 50 + 84 + 4
    # every errorType the data uses has its row in the table
    assert {x.error_type for c in CASES for x in c.errors} <= ERROR_TYPES.keys()
    assert set(DIVERGES) <= {c.key for c in CASES}
    assert len(DIVERGES) == 13  # docs/relationships.md counts them: 6 cycles, 6 columns, 1 module
    assert (len(JSON_TO_DSL), len(OBJECT_IDS)) == (6, 23)


@pytest.mark.parametrize("case", [c for c in CASES if c.key not in DIVERGES], ids=str)
def test_verdict_position_and_rule_agree(case: Case) -> None:
    assert disagreement(case) is None, disagreement(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.key in DIVERGES], ids=str)
def test_known_divergence_still_diverges(case: Case) -> None:
    found = disagreement(case)
    assert found is not None, f"{case.key} now agrees with OpenFGA: remove it from DIVERGES"
    if case.errors:  # a divergence in where or how, never in whether: OpenFGA's refusals stay refusals
        with pytest.raises(SchemaError):
            load(case.text, case.filename)


# -- JSON that OpenFGA's DSL cannot state -------------------------------------------------------

JSON_TO_DSL = yaml.safe_load((DATA / "json-syntax-transformer-validation-cases.yaml").read_text())


@pytest.mark.parametrize("case", JSON_TO_DSL, ids=lambda c: c["name"])
def test_json_to_dsl_as_openfga_transforms_it(case: dict[str, Any]) -> None:
    if case.get("valid", True):
        schema = load(case["json"], "model.json")
        written = to_openfga_dsl(schema)
        assert _meaning(load(written, "model.fga")) == _meaning(schema)
        return
    # OpenFGA cannot write this relation in its DSL: either the model is invalid to begin with
    # (tenantguard's loader refuses it), or the DSL writer refuses the relation by name.
    relation = case["error_message"].split("'")[1]
    with pytest.raises(SchemaError) as info:
        to_openfga_dsl(load(case["json"], "model.json"))
    assert f"#{relation}'" in str(info.value)


def _meaning(schema: Schema) -> Any:
    """A schema up to the order of union and intersection operands (both are commutative)."""
    def expr(e: Any) -> Any:
        kind = type(e).__name__
        if kind in ("Union", "Intersection"):
            return (kind, frozenset(expr(c) for c in e.children))
        if kind == "Exclusion":
            return (kind, expr(e.base), expr(e.subtract))
        return e
    return ({t: {r: (expr(rel.rewrite), frozenset(rel.allowed)) for r, rel in td.relations.items()}
             for t, td in schema.types.items()},
            {n: (c.name, frozenset(c.params), c.expression) for n, c in schema.conditions.items()})


# -- the same model as DSL and as JSON ----------------------------------------------------------

PAIRS = sorted(p.parent for p in (DATA / "transformer").glob("*/authorization-model.fga"))


def test_every_pair_is_here() -> None:
    assert len(PAIRS) == 29
    assert all((p / "authorization-model.json").exists() for p in PAIRS)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_dsl_and_json_read_to_the_same_schema(pair: Path) -> None:
    dsl = (pair / "authorization-model.fga").read_text()
    raw = (pair / "authorization-model.json").read_text()
    assert _meaning(parse_openfga(dsl)) == _meaning(parse_openfga_json(raw))
    # and the loader's verdict (validation included) is the same for both forms
    assert _verdict(dsl, "model.fga") == _verdict(raw, "model.json")
    json.loads(raw)  # the data itself is well-formed


def _verdict(text: str, filename: str) -> str | None:
    try:
        load(text, filename)
    except SchemaError as e:
        return e.rule
    return None


def test_pairs_openfga_itself_refuses_are_refused() -> None:
    # two pairs test the transformer only; OpenFGA's server refuses their models
    # (`fga model validate`: a tupleset that is not direct, and 'user#follower' undefined)
    verdicts = {p.name: _verdict((p / "authorization-model.fga").read_text(), "model.fga") for p in PAIRS}
    assert {n: v for n, v in verdicts.items() if v} == {
        "14-mixed-operators": "tupleset_not_direct",
        "15-mixed-operators-with-direct-assignments-once-beginning-of-line": "undefined_relation",
    }


# -- object ids and store files -------------------------------------------------------------

OBJECT_IDS = yaml.safe_load((DATA / "object-id-validation-cases.yaml").read_text())


@pytest.mark.parametrize("case", OBJECT_IDS, ids=lambda c: c["name"])
def test_object_ids_in_store_tuples(case: dict[str, Any]) -> None:
    item = {"user": "user:anne", "relation": "viewer", "object": f"document:{case['object_id']}"}
    if not case["valid"]:
        with pytest.raises(TestFileError):
            fga_tuple("t", item)
        return
    fga_tuple("t", item)
    fga_tuple("t", {"user": f"user:{case['object_id']}", "relation": "viewer", "object": "document:1"})


STORES = {"00-valid-model": None, "01-valid-model-file": None,
          "02-missing-model": "missing_model", "03-additional-properties": "unknown_field"}


def test_every_store_is_here() -> None:
    assert {p.parent.name for p in (DATA / "stores").glob("*/store.fga.yaml")} == set(STORES)


@pytest.mark.parametrize(("store", "rule"), STORES.items())
def test_store_files_as_fga_model_test_reads_them(store: str, rule: str | None) -> None:
    path = DATA / "stores" / store / "store.fga.yaml"
    if rule is None:
        result = run_suite(read_suite(path))
        assert result.passed and result.counts() == (3, 3)
        return
    with pytest.raises(TestFileError) as info:
        read_suite(path)
    assert info.value.rule == rule


# -- the two OpenFGA verdicts, checked with the real `fga` CLI ----------------------------------

def _fga_validate(fga: str, tmp_path: Path, text: str) -> str:
    path = tmp_path / "model.fga"
    path.write_text(text)
    result = subprocess.run([fga, "model", "validate", "--file", str(path)], capture_output=True, text=True,
                            timeout=30, check=False)
    return str(json.loads(result.stdout).get("error") or "") if result.stdout.strip() else result.stderr


@pytest.mark.parametrize("case", [c for c in CASES if DIVERGES.get(c.key) == _CYCLE], ids=str)
def test_cycles_the_language_accepts_the_server_refuses(fga: str, tmp_path: Path, case: Case) -> None:
    assert "cannot contain a cycle" in _fga_validate(fga, tmp_path, case.text)


# Refusals that come from openfga/language's validator (names, duplicates, unused conditions), which
# `fga model validate` does not run: tenantguard refuses these models as the language does.
LANGUAGE_ONLY = [c for c in SEMANTIC if c.errors
                 and {x.error_type for x in c.errors} <= {"duplicated-error", "invalid-name", "condition-not-used"}
                 and not any(x.message.startswith("the type `") for x in c.errors)]


def test_language_only_refusals_are_counted() -> None:
    assert len(LANGUAGE_ONLY) == 18


@pytest.mark.parametrize("case", LANGUAGE_ONLY, ids=str)
def test_language_only_refusals_pass_fga_validate(fga: str, tmp_path: Path, case: Case) -> None:
    assert _fga_validate(fga, tmp_path, case.text) == ""
    with pytest.raises(SchemaError):
        load(case.text, case.filename)


@pytest.mark.parametrize("case", LANGUAGE_ONLY, ids=str)
def test_the_server_rules_alone_accept_them(case: Case) -> None:
    validate_openfga(parse_openfga(case.text), language_rules=False)  # what an OpenFGA store can hold
