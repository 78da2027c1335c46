"""OpenFGA's own conformance suites (``openfga/``, vendored unchanged) on tenantguard's engine.

One test per suite test (160: 137 in ``consolidated_1_1_tests.yaml``, 23 in
``abac_tests.yaml``), every stage, every Check, ListObjects and ListUsers assertion, run as
OpenFGA's runners run them (``openfga_suite`` says how, and how error codes are judged), and
OpenFGA's ``_ctxTuples`` variant of each single-stage test (its tuples sent as contextual
tuples).

``DIVERGENCES`` is the one list of tests tenantguard does not pass. Each entry must still
fail exactly as written, only by refusing (never by a different answer), and must pass when
the engine is handed the tuples the relationship format refused: so the entry is about the
format, not the engine, and the table cannot go stale either way.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from tests.schema.conformance.openfga_suite import has_contextual_variant, load_tests, run_test

TESTS = load_tests()


class Divergence(NamedTuple):
    refusal: str  # what we answer for every assertion that fails (and the write, when it is refused)
    reason: str


_SLASH = ("ids are [A-Za-z0-9_-.@+=|]: tenantguard's relationship format refuses 'repo:openfga/openfga' "
          "(OpenFGA takes any id without spaces, '#' or ':')")
_UPPER = ("type names are lowercase in tenantguard's relationship format: a tuple naming 'scopeB:A#verified' "
          "is refused (OpenFGA takes 'scopeB')")
_FORMAT = "refused (relationship_invalid)"

DIVERGENCES: dict[str, Divergence] = {
    "evaluate_userset_in_computed_relation_of_ttu": Divergence(_FORMAT, _SLASH),
    "userset_with_intersection_in_computed_relation_of_ttu": Divergence(_FORMAT, _SLASH),
    "userset_with_exclusion_in_computed_relation_of_ttu": Divergence(_FORMAT, _SLASH),
    "follows_correct_graph_edges": Divergence(_FORMAT, _SLASH),
    "weight_2_two_userset_assignable_diff_types": Divergence(_FORMAT, _UPPER),
}

RUNS = [(name, False) for name in TESTS] + [(name, True) for name, t in TESTS.items() if has_contextual_variant(t)]


def test_the_suites_are_whole() -> None:
    """The counts docs/relationships.md states: 160 tests, 136 of them run again with their
    tuples as contextual tuples; all but the listed divergences pass."""
    assert len(TESTS) == 160
    assert sum(contextual for _, contextual in RUNS) == 136
    assert set(DIVERGENCES) <= set(TESTS)
    assert len(TESTS) - len(DIVERGENCES) == 155


@pytest.mark.parametrize(("name", "contextual"), RUNS,
                         ids=[name + ("_ctxTuples" if contextual else "") for name, contextual in RUNS])
def test_openfga_conformance(name: str, contextual: bool) -> None:
    failed = [v for v in run_test(TESTS[name], contextual=contextual) if not v.passed]
    shown = "\n".join(f"{v.label}: OpenFGA {v.expected}, tenantguard {v.got}" for v in failed)
    known = DIVERGENCES.get(name)
    if known is None:
        assert not failed, shown
        return
    assert failed, f"{name} passes now: take it out of DIVERGENCES"
    assert all(v.refused and v.got == known.refusal for v in failed), f"{name} fails differently now:\n{shown}"
    engine_only = [v for v in run_test(TESTS[name], contextual=contextual, wire=False) if not v.passed]
    assert not engine_only, "\n".join(f"{v.label}: OpenFGA {v.expected}, engine {v.got}" for v in engine_only)
