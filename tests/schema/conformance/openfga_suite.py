"""Runs OpenFGA's conformance suites (``openfga/*.yaml``) on tenantguard's schema engine.

The format is OpenFGA's internal integration-test format (``tests/check``,
``tests/listobjects`` and ``tests/listusers`` of openfga/openfga read it), not a file users
keep, so the adapter lives with the tests rather than in ``tenantguard model test``. It follows
those runners:

- A test is a list of stages run in **one store**: each stage writes its model, then its tuples
  under that model; tuples accumulate across stages, and an earlier stage's tuples the current
  model no longer admits are skipped at read time (the engine's own rule). Every write must
  succeed (the runners ``require.NoError`` it).
- Each assertion may bring ``contextualTuples``: checked like written tuples, visible to that
  one query only. ``context`` is the request's condition context.
- ``checkAssertions``: ``expectation`` true/false (absent is false, Go's zero value), or
  ``errorCode``. ``listObjectsAssertions`` and ``listUsersAssertions``: ``expectation`` a
  list, compared as a set (absent or null is empty), or ``errorCode``; ListUsers asks once
  per ``filters`` entry (``type`` or ``type#relation``) and lists wildcards as ``type:*``.
- An ``errorCode`` is met when tenantguard refuses too (a ``TenantGuardError``: an invalid
  query, unknown type or relation, a tuple the model does not admit, the depth limit), not by
  matching OpenFGA's number. A missing condition parameter is OpenFGA's 2000; tenantguard
  answers it "conditional" (SpiceDB's caveated answer), which never grants, so for 2000 a
  conditional answer counts as the refusal.

OpenFGA runs every single-stage test a second time (``<name>_ctxTuples``) with the stage's
tuples sent as contextual tuples of every assertion instead of written, unless the stage has
over 100 (the API's limit); ``run_test(contextual=True)`` is that variant.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from tenantguard.errors import TenantGuardError
from tenantguard.relations.model import Relationship
from tenantguard.relations.reads import MemoryReads, TupleMeta
from tenantguard.schema import load
from tenantguard.schema.admission import check_relationship, check_tuple
from tenantguard.schema.engine import Decision, SchemaEngine
from tenantguard.schema.model import Schema

SUITES = Path(__file__).parent / "openfga"
FILES = ("consolidated_1_1_tests.yaml", "abac_tests.yaml")
TENANT = "conformance"
PAGE = 1000
MAX_CONTEXTUAL = 100  # OpenFGA's limit on contextual tuples per request: the _ctxTuples variant skips past it
MISSING_PARAMETER = 2000  # OpenFGA's validation_error, what a condition without its parameters answers

Stored = tuple[str, str, str, TupleMeta | None]


@dataclass(frozen=True, slots=True)
class Verdict:
    """One assertion: ``label`` (``stage0.check[3]``), what OpenFGA expects (``true``, ``[a, b]``,
    ``error 2027``) and what we answered. ``refused``: we gave no answer (an error, or
    ``conditional``, which never grants); ``conditional`` says which."""

    label: str
    expected: str
    got: str
    refused: bool
    conditional: bool = False

    @property
    def passed(self) -> bool:
        if self.expected.startswith("error"):
            return self.refused and (not self.conditional or self.expected == f"error {MISSING_PARAMETER}")
        return self.expected == self.got


def load_tests() -> dict[str, dict[str, Any]]:
    """Every test of both suites by name; a name met again gets ``#2`` (the consolidated suite
    holds ``immediate_cycle_through_computed_userset`` twice, both copies the same)."""
    tests: dict[str, dict[str, Any]] = {}
    for name in FILES:
        for test in yaml.safe_load((SUITES / name).read_text())["tests"]:
            key, n = test["name"], 1
            while key in tests:
                n += 1
                key = f"{test['name']}#{n}"
            tests[key] = test
    return tests


def has_contextual_variant(test: Mapping[str, Any]) -> bool:
    """Whether OpenFGA runs ``test`` again with its tuples as contextual tuples."""
    stages = test["stages"]
    return len(stages) == 1 and len(stages[0].get("tuples") or ()) <= MAX_CONTEXTUAL


def run_test(test: Mapping[str, Any], *, contextual: bool = False, wire: bool = True) -> list[Verdict]:
    """Every assertion of every stage of ``test``, in order. ``contextual``: the stage's tuples
    go with each assertion as contextual tuples instead of being written. ``wire=False`` hands
    the engine tuples the schema admits without the relationship format's own checks (names and
    ids): what the engine answers for a test the format refuses."""
    stored: list[Stored] = []
    verdicts: list[Verdict] = []
    admit = _admitted if wire else _admitted_by_schema
    for n, stage in enumerate(test["stages"]):
        at = f"stage{n}"
        extra = list(stage.get("tuples") or ()) if contextual else []
        try:
            schema = load(stage["model"], "model.fga")
            stored += [] if contextual else [admit(schema, t) for t in stage.get("tuples") or ()]
        except TenantGuardError as exc:
            verdicts.append(Verdict(f"{at}.write", "written", _refusal(exc), refused=True))
            return verdicts  # OpenFGA's runner stops the test at a failed write too
        engine = SchemaEngine(schema)
        for kind, ask in (("check", _check), ("list_objects", _list_objects), ("list_users", _list_users)):
            key = {"check": "checkAssertions", "list_objects": "listObjectsAssertions",
                   "list_users": "listUsersAssertions"}[kind]
            for i, assertion in enumerate(stage.get(key) or ()):
                verdicts.append(_judge(f"{at}.{kind}[{i}]", engine, stored, assertion, ask, admit, extra))
    return verdicts


def _admitted(schema: Schema, item: Mapping[str, Any]) -> Stored:
    """A tuple as the plane's write path takes it: well-formed, then admitted by the schema."""
    rel = Relationship(TENANT, item["object"], item["relation"], item["user"], _meta(item))
    check_relationship(schema, rel)
    return rel.object, rel.relation, rel.subject, rel.meta


def _admitted_by_schema(schema: Schema, item: Mapping[str, Any]) -> Stored:
    """A tuple the schema admits, whatever the relationship format says of its names and ids."""
    meta = _meta(item)
    check_tuple(schema, item["object"], item["relation"], item["user"], condition=meta and meta.condition)
    return item["object"], item["relation"], item["user"], meta


def _meta(item: Mapping[str, Any]) -> TupleMeta | None:
    condition = item.get("condition")
    return TupleMeta(condition["name"], dict(condition.get("context") or {})) if condition else None


def _refusal(exc: TenantGuardError) -> str:
    return f"refused ({getattr(exc, 'rule', None) or exc.code})"


def _judge(label: str, engine: SchemaEngine, stored: list[Stored], assertion: Mapping[str, Any], ask: Any,
           admit: Any, extra: list[Mapping[str, Any]]) -> Verdict:
    code = assertion.get("errorCode") or 0
    expected = f"error {code}" if code else _expected(ask, assertion.get("expectation"))
    try:
        contextual = [*(assertion.get("contextualTuples") or ()), *extra]
        reads = MemoryReads([*stored, *(admit(engine.schema, t) for t in contextual)])
        got, conditional = ask(engine, reads, assertion, dict(assertion.get("context") or {}))
    except TenantGuardError as exc:
        return Verdict(label, expected, _refusal(exc), refused=True)
    if conditional:
        return Verdict(label, expected, f"conditional ({got})", refused=True, conditional=True)
    return Verdict(label, expected, got, refused=False)


def _expected(ask: Any, expectation: Any) -> str:
    if ask is _check:
        return str(bool(expectation)).lower()
    return _shown(expectation or ())


def _shown(items: Iterable[str]) -> str:
    return "[" + ", ".join(sorted(set(items))) + "]"


def _check(engine: SchemaEngine, reads: MemoryReads, a: Mapping[str, Any], context: dict[str, Any]) -> tuple[str, bool]:
    t = a["tuple"]
    answer = engine.check(reads, t["object"], t["relation"], t["user"], context=context)
    if answer.decision is Decision.CONDITIONAL:
        return "missing " + ", ".join(answer.missing), True
    return str(answer.allowed).lower(), False


def _pages(fetch: Any) -> tuple[list[str], bool]:
    """A lookup's every page: the allowed items, and whether any item was conditional."""
    allowed: list[str] = []
    conditional = False
    cursor = None
    while True:
        page = fetch(cursor)
        for item in page.items:
            if item.decision is Decision.ALLOWED:
                allowed.append(item.id)
            else:
                conditional = True
        cursor = page.cursor
        if not cursor:
            return allowed, conditional


def _list_objects(engine: SchemaEngine, reads: MemoryReads, a: Mapping[str, Any],
                  context: dict[str, Any]) -> tuple[str, bool]:
    r = a["request"]
    found, conditional = _pages(lambda cursor: engine.lookup_resources(
        reads, r["type"], r["relation"], r["user"], context=context, page_size=PAGE, cursor=cursor))
    return _shown(found), conditional


def _list_users(engine: SchemaEngine, reads: MemoryReads, a: Mapping[str, Any],
                context: dict[str, Any]) -> tuple[str, bool]:
    r = a["request"]
    found: list[str] = []
    conditional = False
    for wanted in r["filters"]:
        subject_type, _, subject_relation = wanted.partition("#")
        users, maybe = _pages(lambda cursor, t=subject_type, s=subject_relation: engine.lookup_subjects(
            reads, r["object"], r["relation"], t, s or None, context=context, page_size=PAGE, cursor=cursor))
        found += users
        conditional = conditional or maybe
    return _shown(found), conditional
