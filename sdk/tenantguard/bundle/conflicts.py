"""Data that would shadow a rule: refused, as OPA refuses it (``ast.CheckPathConflicts``).

OPA will not activate a bundle whose ``data.json`` puts a value at the path of a rule
("conflicting rule for data path"). regorus, the engine here, loads it and answers the
*data* for that path: a signed ``authz/allow/data.json`` holding ``true`` (or a root
``data.json`` with ``{"authz": {"allow": true}}``) would turn ``default allow := false``
into an allow that no reviewer of the Rego sees. So every rule's path (its package plus
the static part of its head) is checked against the merged data tree: a value at that
path, or a non-object on the way to it, is a conflict.

Rule heads are read from regorus's own parse (``get_ast_as_json``), the parser the engine
uses. A module regorus cannot parse is skipped here: the engine refuses it at compile.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import regorus

from tenantguard.errors import BundleMalformed


def check_rule_conflicts(modules: Mapping[str, str], data: Mapping[str, Any]) -> None:
    """Raise :class:`BundleMalformed` when ``data`` holds a value where a rule is defined."""
    if not data:
        return
    for name, path in rule_paths(modules):
        node: Any = data
        for depth, segment in enumerate(path):
            if not isinstance(node, dict):
                _conflict(name, path[:depth])
            if segment not in node:
                break
            node = node[segment]
        else:
            _conflict(name, path)


def rule_paths(modules: Mapping[str, str]) -> Iterator[tuple[str, tuple[str, ...]]]:
    """``(module name, data path of one rule)`` for every rule head regorus parses."""
    for name, source in modules.items():
        for path in _parse(name, source)[1]:
            yield name, path


def package_paths(modules: Mapping[str, str]) -> Iterator[tuple[str, tuple[str, ...]]]:
    """``(module name, package path)`` for every module regorus parses."""
    for name, source in modules.items():
        package = _parse(name, source)[0]
        if package:
            yield name, package


def check_package_roots(modules: Mapping[str, str], roots: tuple[str, ...]) -> None:
    """Every module's package must lie under a manifest root (OPA ``validateAndInjectDefaults``:
    "manifest roots do not permit ... in module"), so a bundle never defines policy outside
    what it declares it owns, and a bundle OPA would refuse is refused here too."""
    if "" in roots:
        return
    for name, package in package_paths(modules):
        if not any(package[: len(root.split("/"))] == tuple(root.split("/")) for root in roots):
            raise BundleMalformed(f"manifest roots {list(roots)} do not permit package "
                                  f"{'.'.join(package)!r} of {name}", file=name)


_Parsed = tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]
_CACHE: OrderedDict[tuple[str, bytes], _Parsed] = OrderedDict()
_CACHE_SIZE = 256
_CACHE_LOCK = threading.Lock()


def _parse(name: str, source: str) -> _Parsed:
    """One module's package path and rule paths. Parsing costs up to tens of ms for a large
    module and a bundle is verified several times (upload, announce, activation, restart):
    cached by name (regorus's parse depends on it) and the SHA-256 of the source, so the
    cache holds paths, never sources of up to 8 MiB each."""
    key = (name, hashlib.sha256(source.encode("utf-8", "surrogatepass")).digest())
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            _CACHE.move_to_end(key)
            return cached
    parsed = _parse_uncached(name, source)
    with _CACHE_LOCK:
        _CACHE[key] = parsed
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return parsed


def _parse_uncached(name: str, source: str) -> _Parsed:
    engine = regorus.Engine()
    try:
        engine.add_policy(name, source)
        parsed = json.loads(engine.get_ast_as_json())
    except (RuntimeError, ValueError, RecursionError):
        return (), ()  # not Rego regorus accepts: the engine's compile step refuses the bundle
    except BaseException as exc:  # a Rust panic (pyo3's PanicException is a BaseException)
        if type(exc).__name__ != "PanicException":
            raise
        raise BundleMalformed(f"{name} could not be parsed (the Rego parser failed)", file=name) from None
    package: tuple[str, ...] = ()
    paths = []
    for module in parsed:
        ast = module.get("ast") or {}
        package, _ = _ref_path(ast.get("package", {}).get("refr"))
        for rule in ast.get("rules") or []:
            head, _ = _ref_path(_head_ref(rule))
            if package and head:
                paths.append((*package, *head))
    return package, tuple(paths)


def _head_ref(rule: Mapping[str, Any]) -> Any:
    if "Default" in rule:
        return rule["Default"].get("refr")
    head = (rule.get("Spec") or {}).get("head") or {}
    for kind in head.values():  # Compr, Set or Func
        if isinstance(kind, dict):
            return kind.get("refr")
    return None


def _ref_path(ref: Any) -> tuple[tuple[str, ...], bool]:
    """The static segments of a reference, and whether it was static to the end
    (``d[x]`` yields ``("d",)``: the rule owns everything under ``d``)."""
    if not isinstance(ref, dict) or len(ref) != 1:
        return (), False
    (kind, node), = ref.items()
    if kind == "Var":
        value = node.get("value")
        return ((value,), True) if isinstance(value, str) else ((), False)
    base, static = _ref_path(node.get("refr"))
    if not static:
        return base, False
    if kind == "RefDot":
        field = node.get("field")
        segment = field[1] if isinstance(field, list) and len(field) == 2 else None
    elif kind == "RefBrack":
        segment = (node.get("index") or {}).get("String", {}).get("value")
    else:
        segment = None
    if not isinstance(segment, str):
        return base, False
    return (*base, segment), True


def _conflict(module: str, path: tuple[str, ...]) -> None:
    where = "/".join(path) or "the root"
    raise BundleMalformed(f"data at {where} conflicts with a rule of {module} (data would shadow the rule)",
                          file=module, path=list(path))
