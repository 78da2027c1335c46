"""Running a Suite on the schema engine, one result per assertion.

Each test gets a fresh ``MemoryReads`` holding the suite's tuples plus its own, every tuple
admitted by the schema first (as the tool's Write would refuse it: a refused tuple fails
the test, naming the rule). Answers are judged as the source tool judges them:

- ``fga`` checks are true or false; a check whose condition lacks context is an error in
  OpenFGA, so "conditional" fails either expectation, naming the missing parameters.
- ``zed`` assertions are three-valued: assertTrue needs allowed, assertCaveated conditional,
  assertFalse denied.
- list objects / list users compare sets; a conditional answer in them is reported. Under
  an OpenFGA schema a lookup that meets a tuple whose condition lacks a parameter fails with
  that error, as ``fga model test`` reports OpenFGA's ListObjects and ListUsers failing.
- zed expected relations compare the subjects ``expand`` finds, each with the
  relationships it was found through, its caveat marker and a wildcard's exceptions.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from tenantguard.errors import TenantGuardError
from tenantguard.relations.reads import MemoryReads
from tenantguard.schema.admission import check_tuple
from tenantguard.schema.engine import SchemaEngine
from tenantguard.schema.modeltest.cases import (
    Assertion,
    CheckAssertion,
    ExpectedRelations,
    ListObjectsAssertion,
    ListUsersAssertion,
    Suite,
    TestCase,
    TupleSpec,
)
from tenantguard.schema.modeltest.membership import found_subjects

PAGE = 1000


@dataclass(frozen=True, slots=True)
class Result:
    """One assertion's verdict: ``got`` is what the engine said, ``error`` why it could not."""

    where: str
    passed: bool
    expected: str
    got: str
    error: str | None = None


@dataclass(slots=True)
class TestResult:
    __test__ = False
    name: str
    results: list[Result] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)


@dataclass(slots=True)
class SuiteResult:
    path: str
    kind: str
    tests: list[TestResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.tests)

    def counts(self) -> tuple[int, int]:
        """(assertions passed, assertions in all)."""
        results = [r for t in self.tests for r in t.results]
        return sum(r.passed for r in results), len(results)


def run_suite(suite: Suite, *, now: float | None = None) -> SuiteResult:
    """Evaluate every assertion of ``suite``; never raises for a wrong answer, only reports it."""
    engine = SchemaEngine(suite.schema)
    moment = time.time() if now is None else now
    out = SuiteResult(suite.path, suite.kind)
    for test in suite.tests:
        out.tests.append(_run_test(engine, suite, test, moment))
    return out


def _run_test(engine: SchemaEngine, suite: Suite, test: TestCase, now: float) -> TestResult:
    result = TestResult(test.name)
    reads = MemoryReads()
    refused = _load(suite, (*suite.tuples, *test.tuples), reads)
    if refused:
        result.results.append(Result(test.name, False, "every tuple written", "refused", refused))
        return result
    for assertion in test.assertions:
        try:
            result.results.append(_judge(engine, suite.kind, reads, assertion, now))
        except TenantGuardError as exc:
            result.results.append(Result(assertion.where, False, _expected(assertion), "error", str(exc)))
    return result


def _load(suite: Suite, tuples: Iterable[TupleSpec], reads: MemoryReads) -> str | None:
    for spec in tuples:
        meta = spec.meta
        try:
            check_tuple(suite.schema, spec.object, spec.relation, spec.subject,
                        condition=meta.condition if meta else None,
                        expires=bool(meta and meta.expires_at is not None))
        except TenantGuardError as exc:
            return f"{spec.object}#{spec.relation}@{spec.subject}: {exc}"
        reads.write(spec.object, spec.relation, spec.subject, meta)
    return None


def _expected(a: Assertion) -> str:
    if isinstance(a, CheckAssertion):
        return a.expected
    if isinstance(a, (ListObjectsAssertion, ListUsersAssertion)):
        return _shown(a.expected)
    return _shown(s.subject for s in a.subjects)


def _shown(items: Iterable[str]) -> str:
    return "[" + ", ".join(sorted(items)) + "]"


def _judge(engine: SchemaEngine, kind: str, reads: MemoryReads, a: Assertion, now: float) -> Result:
    if isinstance(a, CheckAssertion):
        answer = engine.check(reads, a.object, a.relation, a.subject, context=dict(a.context), now=now)
        got = answer.decision.value
        if kind == "fga" and got == "conditional":
            return Result(a.where, False, a.expected, got, "missing context parameters: "
                          + ", ".join(sorted(answer.missing)))
        return Result(a.where, got == a.expected, a.expected, got)
    if isinstance(a, ListObjectsAssertion):
        items = _all_pages(lambda cursor: engine.lookup_resources(
            reads, a.object_type, a.relation, a.subject, context=dict(a.context), now=now,
            page_size=PAGE, cursor=cursor))
        return _compare_sets(a.where, a.expected, items)
    if isinstance(a, ListUsersAssertion):
        found: list[tuple[str, str]] = []
        for wanted in a.user_filter:
            subject_type, _, subject_relation = wanted.partition("#")
            found += _all_pages(lambda cursor, t=subject_type, r=subject_relation: engine.lookup_subjects(
                reads, a.object, a.relation, t, r or None, context=dict(a.context), now=now,
                page_size=PAGE, cursor=cursor))
        return _compare_sets(a.where, a.expected, found)
    return _judge_expected(engine, reads, a, now)


def _all_pages(fetch) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Every (item, decision) of a paged lookup."""
    items: list[tuple[str, str]] = []
    cursor = None
    while True:
        page = fetch(cursor)
        items += [(item.id, item.decision.value) for item in page.items]
        cursor = page.cursor
        if not cursor:
            return items


def _compare_sets(where: str, expected: frozenset[str], found: list[tuple[str, str]]) -> Result:
    conditional = sorted(item for item, decision in found if decision == "conditional")
    got = {item for item, decision in found if decision == "allowed"}
    if conditional:
        return Result(where, False, _shown(expected), _shown(got),
                      "conditional (context missing): " + ", ".join(conditional))
    return Result(where, got == expected, _shown(expected), _shown(got))


def _judge_expected(engine: SchemaEngine, reads: MemoryReads, a: ExpectedRelations, now: float) -> Result:
    tree = engine.expand(reads, a.object, a.relation, now=now)
    found = found_subjects(tree)
    problems = []
    for want in a.subjects:
        have = found.get(want.subject)
        if have is None:
            problems.append(f"missing expected subject {want.subject}")
            continue
        if have.via != want.via:
            problems.append(f"{want.subject}: expected via {_shown(want.via)}, found via {_shown(have.via)}")
        if have.caveated != want.caveated:
            problems.append(f"{want.subject}: caveat mismatch")
        if have.exceptions != want.exceptions:
            problems.append(f"{want.subject}: expected exceptions {_shown(want.exceptions)}, "
                            f"found {_shown(have.exceptions)}")
    extra = sorted(set(found) - {w.subject for w in a.subjects})
    problems += [f"subject {s} found but missing from specified" for s in extra]
    return Result(a.where, not problems, _expected(a), _shown(found), "; ".join(problems) or None)
