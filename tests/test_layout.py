"""The repository's own layout: test packages never shadow installed modules, and the tests have one
layer of shared infrastructure, ``tests/harness/``.

Imports are read with ``ast`` (nothing is imported), so a rule breaks at the line that breaks it:

* no module imports a test module (``test_*.py``): importing one collects its tests a second time
  and ties two suites together; what two test modules share lives in ``tests/harness/``;
* a test package reaches another package's modules (its ``conftest.py`` included) only through
  ``tests/harness/``, and so do ``bench/``, ``.ci/`` and ``docs/``;
* ``tests/harness/`` imports no test package: it is the bottom layer.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
HARNESS = "harness"
# folders outside tests/ whose Python may use the tests' infrastructure (and only the harness of it)
OUTSIDE = ("bench", ".ci", "docs")


def test_no_test_package_shadows_an_installed_module() -> None:
    """Bench scripts put ``tests/`` on ``sys.path``, so a test package named like an installed module
    (``tests/envoy`` beside the ``envoy`` namespace of xds-protos) would hide that module from them."""
    packages = sorted(p.name for p in TESTS.iterdir() if (p / "__init__.py").is_file())
    assert packages, "tests/ has no packages?"
    shadowing = [name for name in packages if _installed_outside_the_repo(name)]
    assert shadowing == [], f"rename these test packages: {shadowing}"


def _installed_outside_the_repo(name: str) -> bool:
    """An importable top-level module of that name that is installed (site-packages, the standard
    library), not a folder of this repository."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        return False
    places = [spec.origin] if spec.origin else list(spec.submodule_search_locations or [])
    return any("site-packages" in Path(place).parts or not Path(place).resolve().is_relative_to(REPO)
               for place in places)


# --------------------------------------------------------------------------- one harness layer


def _exists(root: Path, module: str) -> bool:
    base = root.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imported(root: Path, path: Path) -> Iterator[tuple[int, str]]:
    """(line, dotted module) for every module ``path`` imports from ``tests``, relative imports resolved;
    ``from X import name`` counts ``X.name`` too when that is a module of the tree."""
    parts = path.relative_to(root).with_suffix("").parts
    package = parts if path.name == "__init__.py" else parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                above = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                base = ".".join([*above, *([node.module] if node.module else [])])
            modules = [base, *(f"{base}.{a.name}" for a in node.names if _exists(root, f"{base}.{a.name}"))]
        else:
            continue
        for module in modules:
            if module == "tests" or module.startswith("tests."):
                yield node.lineno, module


def _package_of(root: Path, module: str) -> str:
    """The test package a ``tests...`` module belongs to; '' for the modules directly in tests/."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (root / "tests" / parts[1]).is_dir() else ""


def layout_violations(root: Path) -> list[str]:
    """Every import under ``root`` that breaks the rules in the module docstring, as ``file:line why``."""
    files = [*(root / "tests").rglob("*.py"), *(p for folder in OUTSIDE for p in (root / folder).rglob("*.py"))]
    found = []
    for path in sorted(files):
        shown = path.relative_to(root)
        inside = shown.parts[0] == "tests"
        own = shown.parts[1] if inside and len(shown.parts) > 2 else ""
        for line, module in _imported(root, path):
            target = _package_of(root, module)
            if module.rsplit(".", 1)[-1].startswith("test_"):
                found.append(f"{shown}:{line} imports the test module {module}")
            elif not inside:
                if target != HARNESS:
                    found.append(f"{shown}:{line} imports {module}: outside tests/ only the harness is shared")
            elif own == HARNESS:
                if target != HARNESS:
                    found.append(f"{shown}:{line} imports {module}: the harness imports no test package")
            elif target not in (own, HARNESS):
                found.append(f"{shown}:{line} imports {module} of another package: share it through tests/harness/")
    return found


def test_tests_share_helpers_only_through_the_harness() -> None:
    assert layout_violations(REPO) == []


def test_the_layout_check_sees_every_kind_of_violation(tmp_path: Path) -> None:
    """The check above is only as good as what it reads: a synthetic tree with one of each."""
    files = {
        "tests/__init__.py": "",
        "tests/conftest.py": "from tests.xdist_schedule import Scheduler\n",  # root -> root: fine
        "tests/xdist_schedule.py": "",
        "tests/harness/__init__.py": "",
        "tests/harness/world.py": "from .paths import REPO\nfrom tests.a.conftest import World\n",
        "tests/harness/paths.py": "",
        "tests/a/__init__.py": "",
        "tests/a/conftest.py": "from tests.harness.world import World\n",
        "tests/a/helpers.py": "",
        "tests/a/test_one.py": ("from .helpers import helper\n"  # own package: fine
                                "from .test_two import shared\n"
                                "from . import test_two\n"
                                "from tests.b.conftest import Thing\n"
                                "from ..b.helpers import other\n"
                                "import tests.b.test_three\n"),
        "tests/a/test_two.py": "",
        "tests/b/__init__.py": "",
        "tests/b/conftest.py": "",
        "tests/b/helpers.py": "",
        "tests/b/test_three.py": "from tests.harness.world import World\n",  # fine
        "bench/bench_x.py": "from tests.harness.world import World\nfrom tests.b.helpers import other\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert layout_violations(tmp_path) == [
        "bench/bench_x.py:2 imports tests.b.helpers: outside tests/ only the harness is shared",
        "tests/a/test_one.py:2 imports the test module tests.a.test_two",
        "tests/a/test_one.py:3 imports the test module tests.a.test_two",
        "tests/a/test_one.py:4 imports tests.b.conftest of another package: share it through tests/harness/",
        "tests/a/test_one.py:5 imports tests.b.helpers of another package: share it through tests/harness/",
        "tests/a/test_one.py:6 imports the test module tests.b.test_three",
        "tests/harness/world.py:2 imports tests.a.conftest: the harness imports no test package",
    ]
