"""SpiceDB validation files, read as ``zed validate`` reads them.

Keys: ``schema`` (inline) or ``schemaFile``, ``relationships`` (one per line),
``assertions`` (``assertTrue`` / ``assertCaveated`` / ``assertFalse``: relationships,
optionally ``with {json context}``) and ``validation`` (expected relations: for each
``object#permission``, exactly which subjects reach it and through which relationships,
``[user:anne] is <doc:1#viewer>``; ``[user:bob[...]]`` marks a caveated subject and
``[user:* - {user:bob}]`` a wildcard with exceptions). ``assertions`` and ``validation``
may also be YAML text blocks, as the playground writes them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tenantguard.schema import SchemaError, load
from tenantguard.schema.model import Schema
from tenantguard.schema.modeltest.cases import (
    Assertion,
    CheckAssertion,
    Expected,
    ExpectedRelations,
    ExpectedSubject,
    Suite,
    TestCase,
    TupleSpec,
)
from tenantguard.schema.modeltest.errors import TestFileError
from tenantguard.schema.modeltest.files import (
    MAX_ASSERTIONS,
    MAX_TUPLES,
    expect_list,
    expect_mapping,
    read_text,
    read_yaml,
    relative,
)
from tenantguard.schema.modeltest.tuples import ZED_RELATIONSHIP, zed_relationship

_ASSERT_KINDS: dict[str, Expected] = {"assertTrue": "allowed", "assertCaveated": "conditional",
                                      "assertFalse": "denied"}
_EXPECTED = re.compile(r"\[(?P<subject>.+)\](?:\s+is\s+(?P<via>.+))?")
_ONR = re.compile(r"(?P<object>[a-z][a-z0-9_/]*:[^\s#@]+)#(?P<relation>[a-z][a-z0-9_]*)")


def read_validation_file(path: Path) -> Suite:
    """Parse ``path`` (a zed validation YAML file) into a one-test Suite; raises TestFileError.
    A file without assertions still tests its schema and relationships (as ``zed validate`` does)."""
    doc = expect_mapping(read_yaml(path), str(path), "a validation file")
    schema = _schema(path, doc)
    tuples = _relationships(path, doc.get("relationships"))
    assertions: list[Assertion] = []
    block = _block(path, doc.get("assertions"), "assertions")
    for key, expected in _ASSERT_KINDS.items():
        for i, text in enumerate(expect_list(block.get(key), f"{path}: {key}", key)):
            assertions.append(_assertion(f"{path}: {key}[{i}]", text, expected))
    unknown = set(block) - set(_ASSERT_KINDS)
    if unknown:
        raise TestFileError(f"{path}: assertions", f"unknown key {sorted(unknown)[0]!r} (assertTrue, "
                            "assertCaveated, assertFalse)", rule="syntax")
    for onr, lines in _block(path, doc.get("validation"), "validation").items():
        assertions.append(_expected_relations(f"{path}: validation {onr}", onr, lines))
    if len(assertions) > MAX_ASSERTIONS:
        raise TestFileError(str(path), f"more than {MAX_ASSERTIONS} assertions", rule="too_large")
    return Suite(str(path), "zed", schema, tuple(tuples), (TestCase(path.name, (), tuple(assertions)),),
                 name=path.name)


def _schema(path: Path, doc: dict[str, Any]) -> Schema:
    inline, ref = doc.get("schema"), doc.get("schemaFile")
    if (inline is None) == (ref is None):
        raise TestFileError(str(path), "give schema or schemaFile (exactly one)", rule="missing_model")
    if inline is not None:
        if not isinstance(inline, str):
            raise TestFileError(str(path), "schema must be the schema's text", rule="syntax")
        text, label = inline, f"{path}: schema"
    else:
        file = relative(path, ref, str(path))
        text, label = read_text(file, str(path)), str(file)
    try:
        schema = load(text, "schema.zed")
    except SchemaError as exc:
        raise TestFileError(label, exc.message, rule=exc.rule) from None
    return schema


def _relationships(path: Path, value: object) -> list[TupleSpec]:
    if value is None:
        return []
    if not isinstance(value, str):
        raise TestFileError(f"{path}: relationships", "relationships must be text, one per line", rule="syntax")
    out = []
    for n, line in enumerate(value.splitlines(), start=1):
        line = line.strip()
        if line and not line.startswith("//"):
            out.append(zed_relationship(f"{path}: relationships line {n}", line))
    if len(out) > MAX_TUPLES:
        raise TestFileError(f"{path}: relationships", f"over {MAX_TUPLES} relationships", rule="too_large")
    return out


def _block(path: Path, value: object, key: str) -> dict[str, Any]:
    """A mapping, or YAML text holding one (the playground writes blocks as text)."""
    if isinstance(value, str):
        value = read_yaml(Path(f"{path} ({key})"), value)
    return expect_mapping(value, f"{path}: {key}", key)


def _assertion(where: str, text: object, expected: Expected) -> CheckAssertion:
    if not isinstance(text, str):
        raise TestFileError(where, "an assertion is a relationship string", rule="syntax")
    relationship, sep, context_text = text.partition(" with ")
    context: dict[str, Any] = {}
    if sep:
        try:
            context = json.loads(context_text)
        except json.JSONDecodeError as exc:
            raise TestFileError(where, f"the context after 'with' is not JSON: {exc.msg}", rule="syntax") from None
        context = expect_mapping(context, where, "the context after 'with'")
    spec = zed_relationship(where, relationship)
    if spec.meta is not None:
        raise TestFileError(where, f"cannot specify a caveat on an assertion: {text!r}", rule="syntax")
    return CheckAssertion(spec.object, spec.relation, spec.subject, expected, context, f"{where}: {text}")


def _expected_relations(where: str, onr: str, lines: object) -> ExpectedRelations:
    m = _ONR.fullmatch(onr)
    if m is None:
        raise TestFileError(where, f"{onr!r} is not object:id#relation", rule="syntax")
    subjects = []
    for i, line in enumerate(expect_list(lines, where, "expected subjects")):
        at = f"{where} [{i}]"
        parsed = _EXPECTED.fullmatch(line.strip()) if isinstance(line, str) else None
        if parsed is None:
            raise TestFileError(at, f"{line!r} is not '[subject] is <object#relation>'", rule="syntax")
        via = frozenset()
        if parsed["via"]:
            via = frozenset(part.strip().strip("<>") for part in re.split(r">\s*/\s*<", parsed["via"].strip()))
        subjects.append(_expected_subject(at, parsed["subject"].strip(), via))
    return ExpectedRelations(m["object"], m["relation"], tuple(subjects), where)


def _expected_subject(where: str, text: str, via: frozenset[str]) -> ExpectedSubject:
    base, sep, rest = text.partition(" - ")
    exceptions: frozenset[str] = frozenset()
    if sep:
        rest = rest.strip()
        if not (rest.startswith("{") and rest.endswith("}")):
            raise TestFileError(where, "wildcard exceptions are written '- {type:id, ...}'", rule="syntax")
        exceptions = frozenset(p.strip() for p in rest[1:-1].split(",") if p.strip())
    caveated = base.endswith("[...]")
    subject = base.removesuffix("[...]").strip()
    if subject.endswith("#..."):
        subject = subject.removesuffix("#...")
    if ZED_RELATIONSHIP.fullmatch(f"x:x#x@{subject}") is None:
        raise TestFileError(where, f"{subject!r} is not a subject (type:id, type:*, type:id#relation)",
                            rule="syntax")
    return ExpectedSubject(subject, caveated, exceptions, via, where)
