"""CI installs pinned versions (.ci/constraints.txt through PIP_CONSTRAINT): every dependency the
project names is pinned there, at a version its own requirement accepts, so a new dependency
cannot slip in unpinned and a tightened requirement cannot disagree with the pin."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
CI_EXTRAS = ("dev", "rls", "sqlalchemy")  # what .ci/run installs, with what dev pulls in


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / ".ci" / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"not an exact pin: {line!r}"
            pins[canonicalize_name(name)] = version
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    named = list(project["dependencies"])
    for extra in CI_EXTRAS:
        named += project["optional-dependencies"][extra]
    return [Requirement(r) for r in named]


def test_every_dependency_ci_installs_is_pinned_at_a_version_it_accepts() -> None:
    pins = _pins()
    for requirement in _requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not pinned in .ci/constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{requirement} does not accept the pinned {pins[name]}")


def test_ci_installs_under_the_constraints() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    export = run.index('export PIP_CONSTRAINT="$PWD/.ci/constraints.txt"')
    assert export < run.index("pip install")  # before the first install, and so before the README's
