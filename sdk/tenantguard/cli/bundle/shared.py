"""What authoring and plane commands share: the test gate before a build or an upload (the
Rego tests and the schema's test files), the revision a bundle built from a directory gets,
and plain console lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from tenantguard.cli.common import console, console_err

RevisionOpt = Annotated[str | None, typer.Option(
    help="Revision, taken as given; default: DIR/.manifest's revision and 12 hex digits of the content's digest, "
    "e.g. 1-3f2a9c0d1e4b (the same files give the same revision, any change another)")]
SkipTestsOpt = Annotated[bool, typer.Option(
    "--skip-tests", help="Do not run the bundle's Rego tests first (said on stderr; the plane's audit log "
    "records tests_skipped)")]


def line(markup: str) -> None:
    console.print(markup, soft_wrap=True, highlight=False)



#: The schema's test files a bundle directory may hold at its root, as ``fga model test`` and
#: ``zed validate`` read them; ``bundle build`` never packs them.
SCHEMA_TEST_SUFFIXES = (".fga.yaml", ".zed.yaml")


def schema_test_files(directory: Path) -> list[Path]:
    """The schema test files at the root of a bundle directory, sorted."""
    return sorted(p for p in directory.iterdir() if p.is_file() and p.name.endswith(SCHEMA_TEST_SUFFIXES))


def run_schema_tests(directory: Path) -> list[Any]:
    """Run the directory's schema test files (:func:`schema_test_files`) on the engine the
    sidecar runs; a file that cannot be read is printed on stderr and exits 1."""
    from tenantguard.schema.modeltest import TestFileError, read_suite
    from tenantguard.schema.modeltest.run import run_suite

    outcomes = []
    for path in schema_test_files(directory):
        try:
            outcomes.append(run_suite(read_suite(path)))
        except TestFileError as exc:
            console_err.print(f"[red]{escape(str(exc.message))}[/] ({exc.rule})", soft_wrap=True)
            raise typer.Exit(1) from None
    return outcomes


def gate_on_tests(modules: dict[str, str], data: dict[str, Any], *, skip: bool, what: str,
                  directory: Path | None = None) -> None:
    """Run the bundle's Rego tests (and ``directory``'s schema test files); on a failure, an error
    or no Rego test at all, list them on stderr and exit 1 (``what``: what did not happen).
    ``skip``: say on stderr that they were not run."""
    from tenantguard.decision.core import RELATED_EXTENSION
    from tenantguard.policy.testrunner import run_tests

    if skip:
        console_err.print("[yellow]warning[/] --skip-tests: the bundle's Rego tests were not run", soft_wrap=True)
        return
    report = run_tests(modules, data, extensions=RELATED_EXTENSION)
    failed = [r.full_name for r in report.results if r.outcome != "pass"]
    total = len(report.results)
    for outcome in run_schema_tests(directory) if directory is not None else ():
        failed += [f"{outcome.path}: {t.name}" for t in outcome.tests if not t.passed]
        total += len(outcome.tests)
    if failed or not report.results:
        for name in failed:
            console_err.print(f"[red]FAIL[/] {escape(name)}", soft_wrap=True, highlight=False)
        console_err.print(f"[red]error[/] policy_tests_failed: {len(failed)} of {total} tests "
                          f"did not pass; {what} (run `tenantguard bundle test DIR` for details, "
                          "--skip-tests to go on anyway)", soft_wrap=True)
        raise typer.Exit(1)



def given_revision(directory: Path, given: str | None) -> str | None:
    """What ``build_bundle(DIR, ...)`` is given: ``--revision`` as given, else ``None``, for the build to
    name the bundle after the content it packs, ``<DIR/.manifest revision>-<12 hex>`` (in the same
    pass, so the revision always describes the files built); a usage error when DIR/.manifest names none."""
    if given:
        return given
    manifest_revision(directory)
    return None


def manifest_revision(directory: Path) -> str:
    """The revision of DIR/.manifest; a usage error when there is none."""
    manifest = directory / ".manifest"
    if not manifest.is_file():
        raise typer.BadParameter(f"{directory} has no .manifest to take the revision from; pass --revision, or "
                                 'add a .manifest naming one (bundles/tenantguard/.manifest is an example)',
                                 param_hint="--revision")
    try:
        revision = json.loads(manifest.read_text()).get("revision")
    except (OSError, ValueError, AttributeError):
        revision = None
    if not isinstance(revision, str) or not revision:
        raise typer.BadParameter(f"{manifest} names no revision; pass --revision", param_hint="--revision")
    return revision
