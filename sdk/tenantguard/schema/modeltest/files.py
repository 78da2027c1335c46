"""Reading the files a test file names, bounded, and YAML without surprises."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tenantguard.schema.modeltest.errors import TestFileError

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_TUPLES = 500_000
MAX_ASSERTIONS = 100_000


def read_text(path: Path, where: str | None = None) -> str:
    """The file as UTF-8 text, refusing what is missing, too large or not text."""
    label = where or str(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise TestFileError(label, f"cannot read {path}: {exc.strerror or exc}", rule="unreadable") from None
    if len(data) > MAX_FILE_BYTES:
        raise TestFileError(label, f"{path} is over {MAX_FILE_BYTES} bytes", rule="too_large")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TestFileError(label, f"{path} is not UTF-8 text", rule="syntax") from None


def read_yaml(path: Path, text: str | None = None) -> Any:
    """Parse YAML safely (no tags that build objects); a syntax error names line and column."""
    source = read_text(path) if text is None else text
    try:
        return yaml.safe_load(source)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise TestFileError(where, f"YAML: {exc.problem}", rule="syntax") from None
    except yaml.YAMLError as exc:
        raise TestFileError(str(path), f"YAML: {exc}", rule="syntax") from None


def relative(base: Path, name: object, where: str) -> Path:
    """``name`` (a string from the file) resolved against the directory of the file naming it."""
    if not isinstance(name, str) or not name:
        raise TestFileError(where, f"a file reference must be a path, not {name!r}", rule="syntax")
    return (base.parent / name).resolve()


def expect_list(value: object, where: str, what: str) -> list[Any]:
    """``value`` as a list (None is empty), else a typed refusal naming ``what``."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TestFileError(where, f"{what} must be a list", rule="syntax")
    return value


def known_fields(value: Mapping[Any, Any], allowed: frozenset[str], where: str, what: str) -> None:
    """Refuse a key ``allowed`` does not name, as ``fga model test`` does (its YAML decoder
    knows its fields: ``field x not found in type ...``)."""
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise TestFileError(where, f"{what} has no field {', '.join(map(repr, unknown))} "
                            f"(known: {', '.join(sorted(allowed))})", rule="unknown_field")


def expect_mapping(value: object, where: str, what: str) -> dict[str, Any]:
    """``value`` as a string-keyed mapping (None is empty), else a typed refusal."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise TestFileError(where, f"{what} must be a mapping", rule="syntax")
    return value
