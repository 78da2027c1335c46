"""``tenantguard model``: relationship schemas as OpenFGA and SpiceDB users keep them.

``validate`` checks a schema the way the source language's own tooling does; ``transform``
converts between OpenFGA DSL, OpenFGA JSON and SpiceDB where the target can say the same
thing (and names the construct when it cannot). The commands parse flags, call
``tenantguard.schema`` and render: the same front ends and engine the sidecar runs.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from tenantguard.cli.common import console, console_err
from tenantguard.schema import load
from tenantguard.schema.errors import SchemaError
from tenantguard.schema.model import Schema
from tenantguard.schema.render import (
    to_openfga_dsl,
    to_openfga_form,
    to_openfga_json_text,
    to_spicedb,
    to_spicedb_form,
)

app = typer.Typer(help="Validate, convert and test relationship schemas (OpenFGA and SpiceDB).",
                  no_args_is_help=True)

MAX_SCHEMA_FILE = 1024 * 1024


class Target(StrEnum):
    """What ``transform`` writes."""

    fga = "fga"
    json = "json"
    zed = "zed"


SCHEMA_HELP = "The schema: .fga (OpenFGA DSL), .json (OpenFGA JSON) or .zed (SpiceDB)"
SchemaFile = Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, metavar="SCHEMA",
                                            help=SCHEMA_HELP)]


def read_schema(path: Path) -> Schema:
    """Load ``path`` as a schema; a refusal is printed as ``file:line:column: message`` and exits 1."""
    try:
        data = path.read_bytes()
        if len(data) > MAX_SCHEMA_FILE:
            raise SchemaError(f"the file is over {MAX_SCHEMA_FILE} bytes", rule="too_large")
        return load(data.decode("utf-8"), path.name)
    except UnicodeDecodeError:
        _refuse(path, SchemaError("the file is not UTF-8 text", rule="syntax"))
    except SchemaError as exc:
        _refuse(path, exc)
    raise AssertionError("unreachable")  # pragma: no cover


def _refuse(path: Path, exc: SchemaError) -> None:
    where = f"{path}:{exc.line}:{exc.column}" if exc.line else str(path)
    message = exc.message.split(": ", 1)[1] if exc.line and ": " in exc.message else exc.message
    console_err.print(f"[red]{escape(where)}: {escape(message)}[/] ({exc.rule})", soft_wrap=True)
    raise typer.Exit(1)


@app.command()
def validate(
    schema: SchemaFile,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON")] = False,
) -> None:
    """Check a schema as OpenFGA or SpiceDB would; exit 1 naming the rule, line and column."""
    parsed = read_schema(schema)
    relations = sum(len(t.relations) for t in parsed.types.values())
    if as_json:
        print(json.dumps({"valid": True, "dialect": parsed.dialect, "types": len(parsed.types),
                          "relations": relations, "conditions": len(parsed.conditions)}, sort_keys=True))
        return
    console.print(f"{escape(str(schema))}: valid {parsed.dialect} schema, {len(parsed.types)} types, "
                  f"{relations} relations and permissions, {len(parsed.conditions)} conditions")


@app.command()
def transform(
    schema: SchemaFile,
    to: Annotated[Target, typer.Option("--to", help="fga (OpenFGA DSL), json (OpenFGA JSON) or zed (SpiceDB)")],
) -> None:
    """Convert a schema between OpenFGA DSL, OpenFGA JSON and SpiceDB (exit 1 when the target
    cannot express a construct, naming it)."""
    parsed = read_schema(schema)
    try:
        if to is Target.zed:
            text = to_spicedb(to_spicedb_form(parsed) if parsed.dialect == "openfga" else parsed)
        else:
            fga = to_openfga_form(parsed) if parsed.dialect == "spicedb" else parsed
            text = to_openfga_dsl(fga) if to is Target.fga else to_openfga_json_text(fga)
    except SchemaError as exc:
        _refuse(schema, exc)
    print(text, end="" if text.endswith("\n") else "\n")


TestFiles = Annotated[list[Path], typer.Argument(exists=True, dir_okay=False, readable=True, metavar="FILE...",
                                                 help="fga model test store files (.fga.yaml) or zed validation "
                                                      "files (.yaml)")]


@app.command("test")
def test_files(
    files: TestFiles,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List every assertion, not only failures")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print every result as JSON")] = False,
) -> None:
    """Run OpenFGA store-file tests and SpiceDB validation files on tenantguard's engine; exit 1 if any fails."""
    from tenantguard.schema.modeltest import TestFileError, read_suite
    from tenantguard.schema.modeltest.run import run_suite

    outcomes = []
    for path in files:
        try:
            outcomes.append(run_suite(read_suite(path)))
        except TestFileError as exc:
            console_err.print(f"[red]{escape(str(exc.message))}[/] ({exc.rule})", soft_wrap=True)
            raise typer.Exit(1) from None
    if as_json:
        print(json.dumps([{"file": o.path, "kind": o.kind, "passed": o.passed, "tests": [
            {"name": t.name, "passed": t.passed, "results": [
                {"where": r.where, "passed": r.passed, "expected": r.expected, "got": r.got, "error": r.error}
                for r in t.results]} for t in o.tests]} for o in outcomes], indent=2))
    else:
        for outcome in outcomes:
            print_outcome(outcome, verbose)
    if not all(o.passed for o in outcomes):
        raise typer.Exit(1)


def print_outcome(outcome, verbose: bool) -> None:  # type: ignore[no-untyped-def]
    """One suite's results: a PASS/FAIL line per test, failed assertions (all with ``verbose``), a total."""
    passed, total = outcome.counts()
    for test in outcome.tests:
        mark = "[green]PASS[/]" if test.passed else "[red]FAIL[/]"
        ok = sum(r.passed for r in test.results)
        console.print(f"{mark} {escape(outcome.path)}: {escape(test.name)} ({ok}/{len(test.results)})",
                      soft_wrap=True)
        for r in test.results:
            if verbose or not r.passed:
                line = f"  {'ok ' if r.passed else 'x  '} {r.where}: expected {r.expected}, got {r.got}"
                console.print(escape(line + (f" ({r.error})" if r.error else "")), soft_wrap=True)
    console.print(f"{escape(outcome.path)}: {passed}/{total} assertions passed", soft_wrap=True)
