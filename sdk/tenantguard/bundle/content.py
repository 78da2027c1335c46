"""Turning verified archive files into a :class:`Bundle` (OPA's ``Reader.Read`` rules).

Meaningful files: the root ``.manifest``, ``*.rego`` modules, ``data.json`` files and at most
one relationship schema at the root (``schema.fga``, ``schema.json`` or ``schema.zed``,
refused with its rule, line and column when the source language would refuse it).
Other files are carried (and signed) but not interpreted, as OPA ignores them. Files
whose meaning OPA has but tenantguard does not (``data.yaml``/``data.yml``, delta
``patch.json``) are refused rather than ignored, so a bundle never evaluates differently
here than in OPA. Names OPA would treat as a manifest or signature file anywhere in the
tree (suffix ``.manifest`` or ``signatures.json``) are refused unless at the root.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from tenantguard.bundle.conflicts import check_package_roots, check_rule_conflicts
from tenantguard.bundle.hashing import decode_utf8, parse_strict
from tenantguard.bundle.model import (
    MANIFEST_FILE,
    SCHEMA_FILES,
    SIGNATURES_FILE,
    Bundle,
    Manifest,
    SignatureInfo,
    root_contains,
)
from tenantguard.errors import BundleMalformed
from tenantguard.schema import SchemaError, load
from tenantguard.schema.model import Schema

_UNSUPPORTED = {"data.yaml", "data.yml", "patch.json"}


def parse_contents(files: Mapping[str, bytes], signature: SignatureInfo | None = None) -> Bundle:
    """Build the bundle from its files (``.signatures.json`` already removed)."""
    manifest = Manifest()
    modules: dict[str, str] = {}
    data: dict[str, Any] = {}
    schema: Schema | None = None
    schemas = [name for name in sorted(files) if name in SCHEMA_FILES]
    if len(schemas) > 1:
        raise BundleMalformed(f"a bundle holds one relationship schema, not {', '.join(schemas)}", files=schemas)
    for name in sorted(files):
        kind = classify(name)
        if kind == "manifest":
            manifest = Manifest.from_wire(load_json(files[name], name))
        elif kind == "module":
            modules[name] = decode_utf8(files[name], name)
        elif kind == "data":
            _insert(data, _data_path(name), load_json(files[name], name), name)
        elif kind == "schema":
            schema = load_schema(files[name], name)
    _check_data_roots(data, manifest.roots)
    check_package_roots(modules, manifest.roots)
    check_rule_conflicts(modules, data)
    return Bundle(manifest, MappingProxyType(modules), data, MappingProxyType(dict(files)), signature, schema)


def load_schema(content: bytes, name: str) -> Schema:
    """The bundle's relationship schema; a refusal names the file, line, column and rule."""
    try:
        return load(decode_utf8(content, name), name)
    except SchemaError as exc:
        where = f"{name}:{exc.line}:{exc.column}" if exc.line else name
        raise BundleMalformed(f"{where}: {exc.message.split(': ', 1)[-1] if exc.line else exc.message}",
                              file=name, rule=exc.rule, line=exc.line, column=exc.column) from None


def classify(name: str) -> str:
    """``manifest``, ``module``, ``data``, ``schema`` or ``other``; refuses ambiguous names."""
    base = posixpath.basename(name)
    if name == MANIFEST_FILE:
        return "manifest"
    if name.endswith((".manifest", "signatures.json")) and name != SIGNATURES_FILE:
        raise BundleMalformed(f"{name} would be read as a manifest or signature file", file=name)
    if base in _UNSUPPORTED:
        raise BundleMalformed(f"{base} files are not supported; use data.json", file=name)
    if name.endswith(".rego"):
        return "module"
    if name in SCHEMA_FILES:
        return "schema"
    if base == "data.json":
        return "data"
    return "other"


def load_json(content: bytes, name: str) -> Any:
    """Strict JSON (no NaN/Infinity, no BOM, UTF-8 only), as Go's decoder accepts, and
    nothing the signed digest folds together (duplicate names, lone surrogates:
    :func:`~tenantguard.bundle.hashing.parse_strict`)."""
    try:
        return parse_strict(decode_utf8(content, name))
    except (ValueError, RecursionError) as exc:
        raise BundleMalformed(f"{name} is not valid JSON: {exc}", file=name) from None


def _data_path(name: str) -> list[str]:
    directory = posixpath.dirname(name)
    if directory.startswith("."):
        # OPA strips leading dots from the data path; refuse instead of guessing.
        raise BundleMalformed(f"{name}: data under a dot-directory is ambiguous", file=name)
    return directory.split("/") if directory else []


def _insert(data: dict[str, Any], path: list[str], value: Any, name: str) -> None:
    """Merge ``value`` at ``path`` like OPA: objects merge, anything else conflicts."""
    if not path:
        if not isinstance(value, dict):
            raise BundleMalformed("the root data.json must hold an object", file=name)
        _merge(data, value, name)
        return
    tree: Any = value
    for segment in reversed(path):
        tree = {segment: tree}
    _merge(data, tree, name)


def _merge(into: dict[str, Any], new: dict[str, Any], name: str) -> None:
    for key, value in new.items():
        if key not in into:
            into[key] = value
        elif isinstance(into[key], dict) and isinstance(value, dict):
            _merge(into[key], value, name)
        else:
            raise BundleMalformed(f"{name} conflicts with other data at key {key!r}", file=name)


def _check_data_roots(data: dict[str, Any], roots: tuple[str, ...]) -> None:
    """All data must lie under a manifest root (OPA ``validateAndInjectDefaults``)."""
    if not data:
        return
    pending: list[tuple[str, Any]] = [("", data)]
    while pending:
        path, node = pending.pop()
        if any(root_contains(root, path) for root in roots if path or root == ""):
            continue
        leads_to_root = any(root_contains(path, root) for root in roots) if path else bool(roots)
        if isinstance(node, dict) and leads_to_root:
            pending.extend((f"{path}/{k}" if path else k, v) for k, v in node.items())
        else:
            raise BundleMalformed(
                f"manifest roots {list(roots)} do not permit data at /{path}", file=MANIFEST_FILE
            )
