"""The library's folders are its layers; these rules keep the arrows pointing one way.

Read from the source with ``ast`` (nothing is imported), so a rule breaks at the line that
breaks it. docs/architecture.md draws the same picture.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LIBRARY = REPO / "sdk" / "tenantguard"
SERVICES = ("authz_sidecar", "policy_plane")

# Where the development tools may be used: never from runtime code.
DEV_USERS = {"dev", "devenv", "cli", "testing", "pytest_plugin"}
# The core layers: what a decision, a bundle or the feed is made of. They never reach up
# into the front ends (clients, the FastAPI integration, the CLI) or into serving.
CORE = {"identity", "bundle", "relations", "feed", "decision", "policy", "schema", "search", "rollout",
        "decisionlog", "exchange", "util"}
FRONT = {"client", "context", "fastapi", "propagation", "envelope", "rls", "rls_sqlalchemy", "testing",
         "pytest_plugin", "cli", "server", "dev", "devenv"}
# What each low layer may import from the library, besides itself.
ALLOWED = {
    "util": {"errors"},
    "server": {"errors", "util"},
    "schema": {"errors", "relations", "util"},
}


@dataclass(frozen=True)
class Edge:
    source: str  # dotted module
    target: str  # dotted module or package
    line: int
    top_level: bool  # imported when the module loads (not lazily, not for type checking)

    def where(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}"


def _module_name(path: Path) -> str:
    base = LIBRARY.parent if path.is_relative_to(LIBRARY) else REPO
    return ".".join(path.relative_to(base).with_suffix("").parts).removesuffix(".__init__")


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement, with whether it runs at module load."""
    def walk(nodes: list[ast.stmt], top: bool) -> Iterator[tuple[ast.stmt, bool]]:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                yield node, top
            elif isinstance(node, ast.If):
                inner_top = top and not _is_type_checking(node)
                yield from walk(node.body, inner_top)
                yield from walk(node.orelse, top)
            elif isinstance(node, ast.Try):
                yield from walk(node.body, top)
                for handler in node.handlers:
                    yield from walk(handler.body, top)
                yield from walk(node.orelse, top)
                yield from walk(node.finalbody, top)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield from walk(node.body, False)
            elif isinstance(node, ast.With | ast.AsyncWith | ast.For | ast.While):
                yield from walk(node.body, top)
    return walk(tree.body, True)


def _edges() -> list[Edge]:
    files = [*LIBRARY.rglob("*.py"), *(p for s in SERVICES for p in (REPO / s).rglob("*.py"))]
    edges = []
    for path in files:
        source = _module_name(path)
        package = source if path.name == "__init__.py" else source.rsplit(".", 1)[0]
        for node, top in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                targets = [module, *(f"{module}.{a.name}" for a in node.names)]
            for target in targets:
                if target.split(".")[0] in ("tenantguard", *SERVICES):
                    edges.append(Edge(source, target, node.lineno, top))
    return edges


EDGES = _edges()
_UNITS = {p.stem if p.is_file() else p.name for p in LIBRARY.iterdir()
          if (p.suffix == ".py" or (p / "__init__.py").is_file()) and p.name != "__init__.py"}


def _unit(module: str) -> str | None:
    """The library unit (top-level module or subpackage) a dotted name belongs to."""
    parts = module.split(".")
    if parts[0] != "tenantguard" or len(parts) < 2 or parts[1] not in _UNITS:
        return None
    return parts[1]


def _library_edges() -> Iterator[tuple[Edge, str, str]]:
    for e in EDGES:
        src, dst = _unit(e.source), _unit(e.target)
        if src is not None and dst is not None and src != dst:
            yield e, src, dst


def test_the_library_never_imports_a_service() -> None:
    bad = [e.where() for e in EDGES
           if e.source.startswith("tenantguard") and e.target.split(".")[0] in SERVICES]
    assert bad == []


def test_development_tools_are_never_imported_by_runtime_code() -> None:
    bad = [e.where() for e in EDGES
           if _unit(e.target) in ("dev", "devenv")
           and (e.source.split(".")[0] in SERVICES or (_unit(e.source) or "dev") not in DEV_USERS)]
    assert bad == []


def test_core_layers_never_reach_into_front_ends() -> None:
    bad = [e.where() for e, src, dst in _library_edges() if src in CORE and dst in FRONT]
    assert bad == []


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_low_layers_import_only_what_is_below_them(layer: str) -> None:
    bad = [e.where() for e, src, dst in _library_edges() if src == layer and dst not in ALLOWED[layer]]
    assert bad == []


def test_no_module_level_import_cycles() -> None:
    """Modules that import each other when loading: the order they load in decides whether a
    name exists yet. Lazy and type-only imports are not counted (they cannot fail that way)."""
    files = [*LIBRARY.rglob("*.py"), *(q for s in SERVICES for q in (REPO / s).rglob("*.py"))]
    modules = {_module_name(p) for p in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for e in EDGES:
        if e.top_level:
            target = e.target if e.target in modules else e.target.rsplit(".", 1)[0]
            if target in modules and target != e.source and not e.source.startswith(target + "."):
                graph[e.source].add(target)
    cycles = _cycles(graph)
    assert cycles == [], cycles


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_rules_see_real_edges_and_real_cycles() -> None:
    """The checks above are only as good as the graph they read."""
    assert any(e.source == "authz_sidecar.runtime" and _unit(e.target) == "decision" for e in EDGES)
    assert any(not e.top_level and e.source.startswith("tenantguard.client") for e in EDGES)  # lazy imports seen
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# The import lines users write, as the docs show them: each must keep working.
_DOC_IMPORT = re.compile(r"^\s*from (tenantguard[\w.]*) import ([\w, ]+)$", re.M)


def _documented_imports() -> list[tuple[str, str]]:
    found = set()
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), REPO / "bundles" / "README.md"]:
        for match in _DOC_IMPORT.finditer(doc.read_text()):
            for name in match.group(2).split(","):
                found.add((match.group(1), name.strip()))
    return sorted(found)


PUBLIC = [
    ("tenantguard.fastapi", "TenantGuard"), ("tenantguard.fastapi", "require"),
    ("tenantguard.fastapi", "tenant_context"), ("tenantguard.client", "AsyncAuthzClient"),
    ("tenantguard.client", "AuthzClient"), ("tenantguard.client", "EmbeddedAuthorizer"),
    ("tenantguard.rls", "atenant_transaction"), ("tenantguard.rls", "tenant_transaction"),
    ("tenantguard.rls_sqlalchemy", "scope_sessions"), ("tenantguard.context", "current_tenant"),
    ("tenantguard.propagation", "TenantGuardAuth"), ("tenantguard.testing", "TestIssuer"),
    ("tenantguard.testing", "mint_test_token"), ("tenantguard.testing", "LocalSidecar"),
    ("tenantguard.testing", "probe_cross_tenant"), ("tenantguard.errors", "TenantGuardError"),
]


@pytest.mark.parametrize(("module", "name"), sorted(set(PUBLIC) | set(_documented_imports())))
def test_public_and_documented_import_paths_resolve(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"from {module} import {name} no longer works"


def test_the_docs_show_imports_at_all() -> None:
    assert len(_documented_imports()) >= 10


def test_no_import_cycles_even_through_type_only_imports() -> None:
    """A cycle hidden behind ``TYPE_CHECKING`` or a lazy import still ties two modules together
    (neither can be read, moved or tested alone); a small ``Protocol`` in the lower one breaks it,
    as ``authz_sidecar.feed.confirm.FeedProgress`` did for confirm <-> supervisor."""
    files = [*LIBRARY.rglob("*.py"), *(q for s in SERVICES for q in (REPO / s).rglob("*.py"))]
    modules = {_module_name(p) for p in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for e in EDGES:
        target = e.target if e.target in modules else e.target.rsplit(".", 1)[0]
        if target in modules and target != e.source and not e.source.startswith(target + "."):
            graph[e.source].add(target)
    assert "authz_sidecar.feed.confirm" not in graph["authz_sidecar.feed.supervisor"] or \
        "authz_sidecar.feed.supervisor" not in graph["authz_sidecar.feed.confirm"]
    assert _cycles(graph) == []


def _private_imports(roots: list[Path]) -> list[str]:
    """``from X import _name`` (X another module): a private name used as if it were public."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom):
                    for alias in node.names:
                        if alias.name.startswith("_") and not alias.name.startswith("__"):
                            shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
                            found.append(f"{shown}:{node.lineno} imports {alias.name} "
                                         f"from {'.' * node.level}{node.module or ''}")
    return found


def test_no_private_name_is_imported_across_modules() -> None:
    """What another module needs is public (named without ``_``) where it is defined."""
    assert _private_imports([LIBRARY, *(REPO / s for s in SERVICES)]) == []


def test_the_private_import_check_sees_one(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("from x.y import _hidden, shown, __version__\n")
    assert [line.split(":", 1)[1] for line in _private_imports([tmp_path])] == ["1 imports _hidden from x.y"]
