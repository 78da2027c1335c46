"""Rego unit tests for bundle authors, as ``opa test [--coverage] [-v]`` runs them.

Tests follow the OPA convention: rules named ``test_*`` (no arguments) in any package,
usually in ``*_test.rego`` files next to the policy. Each test is evaluated on its own;
it passes when its value is defined and not ``false``. ``print()`` output is gathered per
test instead of going to stderr, and regorus can report line coverage for the run.

:func:`load_bundle_dir` reads a bundle source directory (the bundle repo, not a built
archive: archives are the bundle package's business) into ``(modules, data)``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import regorus

from tenantguard.errors import BundleMalformed, BundleTooLarge, BundleUnsafePath, InvalidInput
from tenantguard.policy.engine import Extension, new_regorus_engine

__all__ = [
    "CoverageReport",
    "FileCoverage",
    "TestReport",
    "TestResult",
    "discover_tests",
    "load_bundle_dir",
    "render_report",
    "run_tests",
]

Outcome = Literal["pass", "fail", "error"]

# Limits for reading a bundle directory: a repo checkout, so generous, but bounded.
MAX_FILES = 2_000
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024

# --------------------------------------------------------------------------- report model


@dataclass(frozen=True, slots=True)
class TestResult:
    """One test: ``data.pkg.test_name``, its outcome, duration and gathered prints."""

    __test__ = False  # not a pytest test class

    package: str
    name: str
    outcome: Outcome
    duration_ns: int
    file: str | None = None
    line: int | None = None
    prints: tuple[str, ...] = ()
    error: str | None = None

    @property
    def full_name(self) -> str:
        return f"{self.package}.{self.name}"


@dataclass(frozen=True, slots=True)
class FileCoverage:
    path: str
    covered: tuple[int, ...]
    not_covered: tuple[int, ...]

    @property
    def percent(self) -> float:
        total = len(self.covered) + len(self.not_covered)
        return 100.0 if total == 0 else 100.0 * len(self.covered) / total


@dataclass(frozen=True, slots=True)
class CoverageReport:
    """Line coverage over every module, as regorus reports it."""

    files: tuple[FileCoverage, ...]
    pretty: str = field(repr=False, default="")

    @property
    def percent(self) -> float:
        covered = sum(len(f.covered) for f in self.files)
        total = covered + sum(len(f.not_covered) for f in self.files)
        return 100.0 if total == 0 else 100.0 * covered / total


@dataclass(frozen=True, slots=True)
class TestReport:
    """The outcome of :func:`run_tests`; ``ok`` is what a CLI turns into its exit code."""

    __test__ = False

    results: tuple[TestResult, ...]
    coverage: CoverageReport | None = None

    def count(self, outcome: Outcome) -> int:
        return sum(1 for result in self.results if result.outcome == outcome)

    @property
    def passed(self) -> int:
        return self.count("pass")

    @property
    def failed(self) -> int:
        return self.count("fail")

    @property
    def errors(self) -> int:
        return self.count("error")

    @property
    def ok(self) -> bool:
        """True when every test passed (and at least one ran, as OPA requires)."""
        return bool(self.results) and self.passed == len(self.results)

    def by_name(self) -> dict[str, TestResult]:
        return {result.full_name: result for result in self.results}


# --------------------------------------------------------------------------- discovery


@dataclass(frozen=True, slots=True)
class _TestRule:
    package: str
    name: str
    file: str
    line: int


def _ref_parts(ref: Mapping[str, Any]) -> list[str]:
    """Flatten a regorus AST reference (``Var`` / ``RefDot``) into its names."""
    if "Var" in ref:
        return [ref["Var"]["value"]]
    if "RefDot" in ref:
        return [*_ref_parts(ref["RefDot"]["refr"]), ref["RefDot"]["field"][1]]
    raise ValueError(f"unexpected reference in AST: {sorted(ref)}")


def _test_rules_of(policy: Mapping[str, Any]) -> Iterator[_TestRule]:
    package = "data." + ".".join(_ref_parts(policy["ast"]["package"]["refr"]))
    file = policy["source"]["file"]
    for rule in policy["ast"]["rules"]:
        head = rule.get("Spec", {}).get("head", {})
        if "Compr" not in head:  # functions, partial sets and defaults are not tests
            continue
        parts = _ref_parts(head["Compr"]["refr"])
        if len(parts) == 1 and parts[0].startswith("test_"):
            yield _TestRule(package, parts[0], file, rule["Spec"]["span"]["line"])


def discover_tests(engine: regorus.Engine) -> list[_TestRule]:
    """Every ``test_*`` rule, once per name (a test may have several bodies), in file order."""
    seen: dict[tuple[str, str], _TestRule] = {}
    for policy in json.loads(engine.get_ast_as_json()):
        for rule in _test_rules_of(policy):
            seen.setdefault((rule.package, rule.name), rule)
    return list(seen.values())


# --------------------------------------------------------------------------- running


def run_tests(
    modules: Mapping[str, str],
    data: Mapping[str, Any],
    *,
    coverage: bool = False,
    verbose: bool = False,
    run_filter: str | None = None,
    extensions: Mapping[str, Extension] | None = None,
) -> TestReport:
    """Run every ``test_*`` rule of ``modules`` against ``data``.

    ``run_filter`` is a regular expression searched in ``data.pkg.test_name`` (OPA's
    ``--run``). Prints are kept for every test when ``verbose``, else only for tests
    that did not pass (what ``opa test`` shows). Raises
    :class:`~tenantguard.policy.engine.PolicyCompileError` when the modules do not compile.
    """
    engine = new_regorus_engine(
        modules, data, extensions=extensions, coverage=coverage, gather_prints=True
    )
    engine.clear_coverage_data()  # prepare's analysis pass must not count as coverage
    engine.take_prints()
    try:
        selected = re.compile(run_filter) if run_filter else None
    except re.error as exc:
        raise InvalidInput(f"--run is not a regular expression: {exc}") from None
    results = tuple(
        _run_one(engine, rule, keep_prints=verbose)
        for rule in discover_tests(engine)
        if selected is None or selected.search(f"{rule.package}.{rule.name}")
    )
    return TestReport(results=results, coverage=_coverage(engine) if coverage else None)


def _run_one(engine: regorus.Engine, rule: _TestRule, *, keep_prints: bool) -> TestResult:
    error: str | None = None
    started = time.perf_counter_ns()
    try:
        value = engine.eval_rule(f"{rule.package}.{rule.name}")
        outcome: Outcome = "fail" if value is None or value is False else "pass"
    except RuntimeError as exc:
        outcome, error = "error", str(exc).strip()
    duration = time.perf_counter_ns() - started
    prints = tuple(engine.take_prints())
    return TestResult(
        package=rule.package,
        name=rule.name,
        outcome=outcome,
        duration_ns=duration,
        file=rule.file,
        line=rule.line,
        prints=prints if keep_prints or outcome != "pass" else (),
        error=error,
    )


def _coverage(engine: regorus.Engine) -> CoverageReport:
    raw = json.loads(engine.get_coverage_report_as_json())
    files = tuple(
        FileCoverage(
            path=entry["path"],
            covered=tuple(entry.get("covered", ())),
            not_covered=tuple(entry.get("not_covered", ())),
        )
        for entry in raw.get("files", ())
    )
    return CoverageReport(files=files, pretty=engine.get_coverage_report_pretty())


# --------------------------------------------------------------------------- rendering


def render_report(report: TestReport, *, verbose: bool = False) -> list[str]:
    """Plain text lines in the shape of ``opa test`` output, for the CLI to print."""
    lines: list[str] = []
    for result in report.results:
        if not verbose and result.outcome == "pass":
            continue
        where = f"{result.file}:{result.line}: " if result.file else ""
        millis = result.duration_ns / 1e6
        lines.append(f"{where}{result.full_name}: {result.outcome.upper()} ({millis:.3f}ms)")
        lines.extend(f"  {line}" for line in result.prints)
        if result.error:
            lines.extend(f"  {line}" for line in result.error.splitlines())
    if report.coverage is not None:
        lines.append("")
        lines.extend(
            f"coverage {f.path}: {f.percent:.1f}% (not covered: {_ranges(f.not_covered)})"
            for f in report.coverage.files
        )
        lines.append(f"coverage total: {report.coverage.percent:.1f}%")
    lines.append("-" * 80)
    total = len(report.results)
    lines.append(f"PASS: {report.passed}/{total}")
    if report.failed:
        lines.append(f"FAIL: {report.failed}/{total}")
    if report.errors:
        lines.append(f"ERROR: {report.errors}/{total}")
    return lines


def _ranges(numbers: tuple[int, ...]) -> str:
    """(1, 2, 3, 7) -> "1-3, 7"."""
    spans: list[str] = []
    for number in sorted(numbers):
        if spans and spans[-1].split("-")[-1] == str(number - 1):
            spans[-1] = f"{spans[-1].split('-')[0]}-{number}"
        else:
            spans.append(str(number))
    return ", ".join(spans) or "-"


# --------------------------------------------------------------------------- bundle directory


def load_bundle_dir(
    path: str | os.PathLike[str],
    *,
    include_tests: bool = True,
    max_files: int = MAX_FILES,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
) -> tuple[dict[str, str], dict[str, Any]]:
    """Read a bundle source directory into ``(modules, data)``.

    ``*.rego`` files anywhere below ``path`` become modules named by their relative
    POSIX path; each ``data.json`` is merged into the data tree at its directory's path
    (``a/b/data.json`` -> ``data.a.b``), as OPA does. Hidden files and directories
    (``.manifest``, ``.git``, ``.signatures.json``) are skipped; symbolic links are
    refused. Raises :class:`BundleMalformed`, :class:`BundleTooLarge` or
    :class:`BundleUnsafePath`.
    """
    root = Path(path)
    if not root.is_dir():
        raise BundleMalformed(f"{root} is not a directory")
    modules: dict[str, str] = {}
    data: dict[str, Any] = {}
    total = 0
    for count, file in enumerate(_bundle_files(root, include_tests=include_tests), start=1):
        if count > max_files:
            raise BundleTooLarge(f"more than {max_files} policy and data files")
        relative = file.relative_to(root).as_posix()
        text = _read_text(file, relative, max_file_bytes)
        total += len(text)
        if total > max_total_bytes:
            raise BundleTooLarge(f"bundle larger than {max_total_bytes} bytes", file=relative)
        if file.suffix == ".rego":
            modules[relative] = text
        else:
            _merge_at(data, file.parent.relative_to(root).parts, _parse_json(text, relative), relative)
    return modules, data


def _bundle_files(root: Path, *, include_tests: bool) -> Iterator[Path]:
    for directory, dirnames, filenames in os.walk(root):
        here = Path(directory)
        for name in list(dirnames):
            if (here / name).is_symlink():
                raise BundleUnsafePath("symbolic links are not allowed", file=name)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            if not (name.endswith(".rego") or name == "data.json"):
                continue
            if not include_tests and name.endswith("_test.rego"):
                continue
            file = here / name
            if file.is_symlink():
                raise BundleUnsafePath("symbolic links are not allowed", file=name)
            yield file


def _read_text(file: Path, relative: str, max_bytes: int) -> str:
    if file.stat().st_size > max_bytes:
        raise BundleTooLarge(f"file larger than {max_bytes} bytes", file=relative)
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BundleMalformed("file is not UTF-8", file=relative) from None


def _parse_json(text: str, relative: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BundleMalformed(f"invalid JSON: {exc}", file=relative) from None


def _merge_at(data: dict[str, Any], parts: tuple[str, ...], value: Any, relative: str) -> None:
    """Merge ``value`` at ``parts`` below ``data``; a clash between two files is an error."""
    if not parts and not isinstance(value, dict):
        raise BundleMalformed("a data.json at the bundle root must hold an object", file=relative)
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise BundleMalformed(f"data path conflict at {part!r}", file=relative)
        node = child
    if not parts:
        _deep_merge(data, value, relative)
    elif isinstance(node.get(parts[-1]), dict) and isinstance(value, dict):
        _deep_merge(node[parts[-1]], value, relative)
    elif parts[-1] in node:
        raise BundleMalformed(f"data path conflict at {parts[-1]!r}", file=relative)
    else:
        node[parts[-1]] = value


def _deep_merge(target: dict[str, Any], source: Mapping[str, Any], relative: str) -> None:
    for key, value in source.items():
        if isinstance(target.get(key), dict) and isinstance(value, dict):
            _deep_merge(target[key], value, relative)
        elif key in target:
            raise BundleMalformed(f"data path conflict at {key!r}", file=relative)
        else:
            target[key] = value
