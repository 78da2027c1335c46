"""The xdist work units (tests/xdist_schedule.py): shared deployments stay on one worker, and the
listed slow units exist (a renamed file would silently lose its place at the front)."""

from __future__ import annotations

from pathlib import Path

from tests.xdist_schedule import SHARED_PACKAGES, SLOW_UNITS, unit_of, unit_order

REPO = Path(__file__).resolve().parents[1]


def test_every_listed_unit_exists() -> None:
    for unit in (*SHARED_PACKAGES, *SLOW_UNITS):
        assert (REPO / unit).exists(), f"{unit} is listed in tests/xdist_schedule.py but not in the repository"
    for unit in SLOW_UNITS:  # a file inside a shared package is never a unit of its own
        assert unit_of(unit + "::t") == unit, unit


def test_files_of_a_shared_package_are_one_unit_and_other_files_their_own() -> None:
    assert unit_of("tests/cluster/test_chaos.py::test_short_chaos") == "tests/cluster/"
    assert unit_of("tests/cluster/test_replicas.py::test_x[a::b]") == "tests/cluster/"
    assert unit_of("tests/plane/test_writes.py::test_a") == "tests/plane/test_writes.py"
    assert unit_of("tests/plane/test_writes.py::TestX::test_b[p@q]") == "tests/plane/test_writes.py"


def test_slow_units_go_first_then_the_most_tests() -> None:
    units = {"tests/a.py": dict.fromkeys("abc", False), "tests/b.py": dict.fromkeys("ab", False),
             "tests/docs/test_readme_tour.py": {"x": False}, "tests/cluster/": {"y": False}}
    assert unit_order(units) == ["tests/cluster/", "tests/docs/test_readme_tour.py", "tests/a.py", "tests/b.py"]
