"""The repository's own layout must not break imports: bench scripts put ``tests/`` on
``sys.path``, so a test package named like an installed module (``tests/envoy`` beside the
``envoy`` namespace of xds-protos) would hide that module from them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def test_no_test_package_shadows_an_installed_module() -> None:
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
