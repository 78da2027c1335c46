"""OpenFGA's check matrix and ListObjects matrix (``openfga/matrix/``, Go, vendored unchanged)
on the schema engine: every assertion, no known divergence (``openfga_matrix`` says how they
are read and judged)."""

from __future__ import annotations

import pytest

from tests.schema.conformance.openfga_matrix import (
    engine_for,
    read_check_matrix,
    read_list_objects_matrix,
    run_check_stage,
    run_list_objects_test,
)

CHECK_MODEL, CHECK_STAGES = read_check_matrix()
LIST_MODEL, LIST_TESTS = read_list_objects_matrix()


def test_the_matrices_are_whole() -> None:
    """The counts docs/relationships.md states."""
    assert len(CHECK_STAGES) == 93
    assert sum(len(s.get("CheckAssertions") or ()) for s in CHECK_STAGES) == 698
    assert len(LIST_TESTS) == 29
    assert sum(len(t.get("ListObjectAssertions") or ()) for t in LIST_TESTS) == 175


@pytest.fixture(scope="module")
def check_engine():  # type: ignore[no-untyped-def]
    return engine_for(CHECK_MODEL)


@pytest.fixture(scope="module")
def list_engine():  # type: ignore[no-untyped-def]
    return engine_for(LIST_MODEL)


@pytest.mark.parametrize("stage", CHECK_STAGES, ids=[s["Name"] for s in CHECK_STAGES])
def test_check_matrix(check_engine, stage) -> None:  # type: ignore[no-untyped-def]
    failed = [v for v in run_check_stage(check_engine, stage) if not v.passed]
    assert not failed, "\n".join(f"{v.label}: OpenFGA {v.expected}, tenantguard {v.got}" for v in failed)


@pytest.mark.parametrize("test", LIST_TESTS, ids=[t["Name"] for t in LIST_TESTS])
def test_list_objects_matrix(list_engine, test) -> None:  # type: ignore[no-untyped-def]
    failed = [v for v in run_list_objects_test(list_engine, test) if not v.passed]
    assert not failed, "\n".join(f"{v.label}: OpenFGA {v.expected}, tenantguard {v.got}" for v in failed)
