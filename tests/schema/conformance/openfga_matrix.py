"""OpenFGA's test matrices (``openfga/matrix/``, Go files vendored unchanged) on the schema engine.

Beside the YAML suites, OpenFGA tests its engine with two matrices written as Go data: the
check matrix (``tests/check``: one model of every construct, 93 stages, each assertion asked
as Check, then as ListObjects and ListUsers) and the ListObjects matrix (``tests/listobjects``:
another model, 29 tests). ``read_check_matrix``/``read_list_objects_matrix`` read the Go
composite literals those files hold (strings, numbers, booleans, nested ``T{...}``, a few
``structpb`` helpers and package-level names); ``run_*`` judge them as the Go runners do:

- every stage or test gets its own store holding the one model and its tuples;
- check: ``Expectation`` or ``ErrorCode``; ListObjects from a check assertion: the object is
  listed or not (``ListObjectsErrorCode``, else ``ErrorCode``, means an error, except in the
  stages named ``usersets_userset_cond_to_computed_cond``, where OpenFGA lists without one);
  ListUsers for the user's type (and relation): the user listed or not, or ``type:*`` listed
  for an expected one (``ListUsersErrorCode``, else ``ErrorCode``, means an error);
- ListObjects matrix: ``Expectation`` as a set, or ``ErrorCode``.

An error expected is met by a refusal (``openfga_suite`` says what counts). The models name
types with hyphens (``directs-user``), which tenantguard's relationship format refuses, so
the tuples go to the engine as the schema admits them (``check_tuple``), not through the
format: this measures the engine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from tenantguard.errors import TenantGuardError
from tenantguard.relations.reads import MemoryReads, TupleMeta
from tenantguard.schema import load
from tenantguard.schema.admission import check_tuple
from tenantguard.schema.engine import Decision, SchemaEngine

from tests.schema.conformance.openfga_suite import Verdict

MATRIX = Path(__file__).parent / "openfga" / "matrix"
_TOKEN = re.compile(r"""\s+|//[^\n]*|/\*.*?\*/|(?P<raw>`[^`]*`)|(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?\d+(?:\.\d+)?)
                    |(?P<id>[A-Za-z_][\w.]*)|(?P<punct>[{}\[\]():,&*])|(?P<other>\S)""", re.S | re.X)
_UNWRAP = {"structpb.NewStringValue", "structpb.NewNumberValue", "structpb.NewBoolValue", "MustNewStruct"}


class _GoData:
    """A recursive-descent reader of Go composite literals: ``T{k: v}`` is a dict, ``T{v, ...}`` a list."""

    def __init__(self, text: str, names: dict[str, Any]) -> None:
        self.tokens = [(m.lastgroup, m.group(m.lastgroup)) for m in _TOKEN.finditer(text) if m.lastgroup]
        self.i = 0
        self.names = names

    def peek(self, ahead: int = 0) -> tuple[str | None, str | None]:
        at = self.i + ahead
        return self.tokens[at] if at < len(self.tokens) else (None, None)

    def take(self, expected: str | None = None) -> str:
        _, text = self.tokens[self.i]
        if expected is not None and text != expected:
            raise SyntaxError(f"expected {expected!r}, found {text!r}")
        self.i += 1
        return text

    def skip_type(self) -> None:  # []*T, map[K]V, *T, pkg.T
        if self.peek()[1] == "[":
            self.take("[")
            self.take("]")
            return self.skip_type()
        if self.peek()[1] == "*":
            self.take("*")
            return self.skip_type()
        if self.take() == "map":
            self.take("[")
            self.skip_type()
            self.take("]")
            self.skip_type()
        return None

    def value(self) -> Any:
        kind, text = self.peek()
        if text == "&":
            self.take()
            return self.value()
        if kind in ("str", "raw", "num") or text in ("true", "false", "nil"):
            self.take()
            if kind == "raw":
                return text[1:-1]
            return None if text == "nil" else json.loads(text)
        if text == "{":
            return self.body()
        if kind == "id" and self.peek(1)[1] == "(":
            self.take()
            self.take("(")
            args = []
            while self.peek()[1] != ")":
                args.append(self.value())
                if self.peek()[1] == ",":
                    self.take()
            self.take(")")
            if text not in _UNWRAP:
                raise SyntaxError(f"call of {text}")
            return args[0]
        if kind == "id" and text in self.names and self.peek(1)[1] != "{":
            self.take()
            return self.names[text]
        self.skip_type()
        return self.body()

    def body(self) -> Any:
        self.take("{")
        keyed: dict[str, Any] = {}
        items: list[Any] = []
        while self.peek()[1] != "}":
            if self.peek(1)[1] == ":" and self.peek()[0] in ("id", "str"):
                key = self.take()
                self.take(":")
                keyed[json.loads(key) if key.startswith('"') else key] = self.value()
            else:
                items.append(self.value())
            if self.peek()[1] == ",":
                self.take()
        self.take("}")
        return keyed or items


def _var(path: Path, name: str, names: dict[str, Any]) -> Any:
    """The value of ``var name = ...`` in the Go file at ``path``, added to ``names``."""
    text = path.read_text()
    start = text.index(f"var {name} =") + len(f"var {name} =")
    names[name] = _GoData(text[start:], names).value()
    return names[name]


def _raw_string(text: str, after: str) -> str:
    start = text.index(after) + len(after)
    return text[start:text.index("`", start)]


def read_check_matrix() -> tuple[str, list[dict[str, Any]]]:
    """(model, stages) of the check matrix, in the order ``runTestMatrix`` runs them."""
    folder, names = MATRIX / "check", {}
    check = (folder / "check.go").read_text()
    model = _raw_string(check[check.index("func runTestMatrix"):], "model := `")
    stages = list(_var(folder / "check.go", "matrix", names)["Stages"])
    for file, name in (("check_ttu.go", "ttuCompleteTestingModelTest"),
                       ("complexity_three.go", "complexityThreeTestingModelTest"),
                       ("check_complexity4.go", "complexityFourTestingModelTest"),
                       ("check_userset.go", "usersetCompleteTestingModelTest")):
        stages += _var(folder / file, name, names)
    return model, stages


def read_list_objects_matrix() -> tuple[str, list[dict[str, Any]]]:
    """(model, tests) of the ListObjects matrix (``slices.Concat(directs, usersets, ttus)``)."""
    folder, names = MATRIX / "listobjects", {}
    model = _raw_string((folder / "matrix.go").read_text(), "Model: `")
    for name in ("xCond", "validConditionContext", "invalidConditionContext"):
        _var(folder / "matrix_directs.go", name, names)
    tests = [*_var(folder / "matrix_directs.go", "directs", names),
             *_var(folder / "matrix_usersets.go", "usersets", names),
             *_var(folder / "matrix_ttus.go", "ttus", names)]
    return model, tests


def engine_for(model: str) -> SchemaEngine:
    return SchemaEngine(load(model, "model.fga"))


def _reads(engine: SchemaEngine, *groups: list[dict[str, Any]] | None) -> MemoryReads:
    reads = MemoryReads()
    for group in groups:
        for t in group or ():
            condition = t.get("Condition")
            meta = TupleMeta(condition["Name"], dict(condition.get("Context") or {})) if condition else None
            check_tuple(engine.schema, t["Object"], t["Relation"], t["User"], condition=meta and meta.condition)
            reads.write(t["Object"], t["Relation"], t["User"], meta)
    return reads


def _context(value: Any) -> dict[str, Any]:
    """A ``structpb.Struct{Fields: ...}`` or ``MustNewStruct(map...)`` as a plain mapping."""
    value = value or {}
    return dict(value.get("Fields", value))


def _listed(pages: Iterator[Any]) -> tuple[set[str], bool]:
    allowed: set[str] = set()
    conditional = False
    for page in pages:
        for item in page.items:
            if item.decision is Decision.ALLOWED:
                allowed.add(item.id)
            else:
                conditional = True
    return allowed, conditional


def _all(fetch: Any) -> Iterator[Any]:
    """Every page of ``fetch(cursor=...)``."""
    cursor = None
    while True:
        page = fetch(cursor=cursor)
        yield page
        cursor = page.cursor
        if not cursor:
            return


def _verdict(label: str, code: int, expected: str, ask: Any) -> Verdict:
    """Runs ``ask`` (-> (answer shown, conditional)) and judges it against ``code`` or ``expected``."""
    want = f"error {code}" if code else expected
    try:
        got, conditional = ask()
    except TenantGuardError as exc:
        return Verdict(label, want, f"refused ({getattr(exc, 'rule', None) or exc.code})", refused=True)
    if conditional:
        return Verdict(label, want, f"conditional ({got})", refused=True, conditional=True)
    return Verdict(label, want, got, refused=False)


def _check(engine: SchemaEngine, reads: MemoryReads, obj: str, relation: str, user: str,
           context: dict[str, Any]) -> tuple[str, bool]:
    answer = engine.check(reads, obj, relation, user, context=context)
    return str(answer.allowed).lower(), answer.decision is Decision.CONDITIONAL


def _object_listed(engine: SchemaEngine, reads: MemoryReads, obj: str, relation: str, user: str,
                   context: dict[str, Any]) -> tuple[str, bool]:
    objects, conditional = _listed(_all(partial(engine.lookup_resources, reads, obj.partition(":")[0], relation, user,
                                                context=context, page_size=1000)))
    return str(obj in objects).lower(), conditional


def _user_listed(engine: SchemaEngine, reads: MemoryReads, obj: str, relation: str, user: str,
                 context: dict[str, Any], *, wildcard_counts: bool) -> tuple[str, bool]:
    subject, _, subject_relation = user.partition("#")
    users, conditional = _listed(_all(partial(engine.lookup_subjects, reads, obj, relation, subject.partition(":")[0],
                                              subject_relation or None, context=context, page_size=1000)))
    wildcard = wildcard_counts and any(u.endswith(":*") for u in users)
    return str(user in users or wildcard).lower(), conditional


def run_check_stage(engine: SchemaEngine, stage: dict[str, Any]) -> list[Verdict]:
    """Each check assertion of ``stage`` asked as Check, ListObjects and ListUsers."""
    out: list[Verdict] = []
    answer_only = "usersets_userset_cond_to_computed_cond" in stage["Name"]
    for a in stage.get("CheckAssertions") or ():
        reads = _reads(engine, stage.get("Tuples"), a.get("ContextualTuples"))
        t, name = a["Tuple"], a["Name"]
        question = (engine, reads, t["Object"], t["Relation"], t["User"], _context(a.get("Context")))
        expected = str(bool(a.get("Expectation"))).lower()
        code = a.get("ErrorCode") or 0
        out.append(_verdict(f"{name}: check", code, expected, partial(_check, *question)))
        listed = _verdict(f"{name}: list objects", a.get("ListObjectsErrorCode") or (0 if answer_only else code),
                          expected, partial(_object_listed, *question))
        if answer_only and not a.get("ListObjectsErrorCode"):  # OpenFGA's runner only requires an answer here
            listed = Verdict(listed.label, "an answer", listed.got if listed.refused else "an answer", listed.refused)
        out.append(listed)
        out.append(_verdict(f"{name}: list users", a.get("ListUsersErrorCode") or code, expected,
                            partial(_user_listed, *question, wildcard_counts=bool(a.get("Expectation")))))
    return out


def _objects(engine: SchemaEngine, reads: MemoryReads, request: dict[str, Any],
             context: dict[str, Any]) -> tuple[str, bool]:
    objects, conditional = _listed(_all(partial(engine.lookup_resources, reads, request["Type"], request["Relation"],
                                                request["User"], context=context, page_size=1000)))
    return _shown(objects), conditional


def run_list_objects_test(engine: SchemaEngine, test: dict[str, Any]) -> list[Verdict]:
    out: list[Verdict] = []
    for i, a in enumerate(test.get("ListObjectAssertions") or ()):
        reads = _reads(engine, test.get("Tuples"), a.get("ContextualTuples"))
        ask = partial(_objects, engine, reads, a["Request"], _context(a.get("Context")))
        out.append(_verdict(f"[{i}]", a.get("ErrorCode") or 0, _shown(a.get("Expectation") or ()), ask))
    return out


def _shown(items: Any) -> str:
    return "[" + ", ".join(sorted(set(items))) + "]"
