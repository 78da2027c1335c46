"""SpiceDB's own integration test configs (``spicedb/``, copied unchanged) on tenantguard's engine.

Each file must pass as ``zed validate`` passes it (schema, relationships, assertions and
expected relations, through ``tenantguard model test``'s runner), and check must agree with
both lookups over every resource, permission and subject the file names: the rule SpiceDB's
consistency suite holds its own engine to. No file is skipped and none is expected to fail.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from tenantguard.relations.reads import MemoryReads
from tenantguard.schema.engine import EngineError, SchemaEngine
from tenantguard.schema.modeltest import read_suite
from tenantguard.schema.modeltest.cases import Suite
from tenantguard.schema.modeltest.run import run_suite

SUITE = Path(__file__).parent / "spicedb"
FILES = sorted(SUITE.glob("*.yaml"))
NOW = 1_900_000_000.0  # fixed, so expiring relationships in the files judge the same every run


def test_the_whole_suite_is_here() -> None:
    assert len(FILES) == 73


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_assertions_hold(path: Path) -> None:
    result = run_suite(read_suite(path), now=NOW)
    failed = [(r.where, r.expected, r.got, r.error) for t in result.tests for r in t.results if not r.passed]
    assert not failed


def _answer(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except EngineError as e:
        return ("error", type(e).__name__)


def _reads(suite: Suite) -> MemoryReads:
    reads = MemoryReads()
    for spec in (*suite.tuples, *(t for test in suite.tests for t in test.tuples)):
        reads.write(spec.object, spec.relation, spec.subject, spec.meta)
    return reads


def _objects(suite: Suite) -> dict[str, set[str]]:
    """Every object the file names, as a resource or as a subject, by type."""
    out: dict[str, set[str]] = {t: set() for t in suite.schema.types}
    for spec in (*suite.tuples, *(t for test in suite.tests for t in test.tuples)):
        for obj in (spec.object, spec.subject.partition("#")[0]):
            t = obj.partition(":")[0]
            if not obj.endswith(":*") and t in out:
                out[t].add(obj)
    return out


def _listed(page: Any) -> dict[str, str] | None:
    """A lookup's answer as {id: decision}, or None when it failed (a depth error)."""
    return None if isinstance(page, tuple) else {i.id: i.decision.value for i in page.items}


def _agrees(check: Any, listed: dict[str, str], item: str, wildcard: str | None = None) -> bool:
    """A lookup's listing of ``item`` against check: a failed check is never listed, a listed item
    has check's decision, and an unlisted one is denied (or granted through a listed wildcard)."""
    if isinstance(check, tuple):
        return item not in listed
    if item in listed:
        return listed[item] == check
    return check == "denied" or (wildcard is not None and wildcard in listed)


def _one_relation(engine: SchemaEngine, reads: MemoryReads, tname: str, rname: str,
                  resources: list[str], subjects: list[str]) -> int:
    checks = {(o, s): _answer(partial(_decision, engine, reads, o, rname, s)) for o in resources for s in subjects}
    for s in subjects:
        listed = _listed(_answer(partial(engine.lookup_resources, reads, tname, rname, s, now=NOW, page_size=1000)))
        if listed is None:  # failed: check fails the same for some resource
            assert any(isinstance(checks[(o, s)], tuple) for o in resources) or not resources, (rname, s)
            continue
        for o in resources:
            assert _agrees(checks[(o, s)], listed, o), (o, rname, s, listed.get(o), checks[(o, s)])
    for o in resources:
        for stype in sorted({s.partition(":")[0] for s in subjects}):
            listed = _listed(_answer(partial(engine.lookup_subjects, reads, o, rname, stype, now=NOW, page_size=1000)))
            if listed is None:
                continue
            for s in (s for s in subjects if s.startswith(stype + ":")):
                assert _agrees(checks[(o, s)], listed, s, f"{stype}:*"), (o, rname, s, listed.get(s), checks[(o, s)])
    return len(checks)


def _decision(engine: SchemaEngine, reads: MemoryReads, obj: str, rel: str, subject: str) -> str:
    return engine.check(reads, obj, rel, subject, now=NOW).decision.value


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_check_agrees_with_both_lookups(path: Path) -> None:
    suite = read_suite(path)
    engine, reads = SchemaEngine(suite.schema), _reads(suite)
    objects = _objects(suite)
    subjects = sorted(o for objs in objects.values() for o in objs)
    asked = sum(_one_relation(engine, reads, tname, rname, sorted(objects[tname]), subjects)
                for tname, t in suite.schema.types.items() for rname in t.relations)
    assert asked or not any(objects.values())
