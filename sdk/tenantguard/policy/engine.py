"""The embedded Rego engine, behind a small protocol.

Prepare once, evaluate many: :meth:`PolicyEngine.prepare` compiles a bundle revision's
modules and data into an immutable :class:`PreparedPolicy`; a decision is one
:meth:`PreparedPolicy.evaluate` call. Swapping revisions is the caller's single
reference assignment (``self._policy = new``): a decision in flight keeps the object it
started with, and nothing is ever half-replaced.

The regorus implementation has to respect two facts about ``regorus.Engine``:

* An engine is *unsendable*: calling any method from a thread other than the one that
  created it, ``clone()`` included, raises ``pyo3_runtime.PanicException`` (a
  ``BaseException``), and dropping it on another thread leaks it and prints an error.
  So every thread builds its own engine from the prepared sources, lazily, at its
  first evaluation of a revision (~1 ms for the example bundle, ~70 ms with 100,000
  relations in data; :meth:`RegorusPreparedPolicy.warm` lets a thread pay it early),
  and engines are kept in a per-thread cache so they are always dropped by their own
  thread (see :class:`_ThreadEngines`).
* Data already loaded cannot be replaced in place (adding conflicting data is an
  error), so a new revision always means new engines. Disjoint data does merge, which
  is what lets a revision be built in slices (below).

Swapping revisions without stalling decisions. regorus holds the GIL for the whole of
each call (``add_data_json`` of 4 MB: ~70 ms), so preparing on a worker thread does not
keep the deciding thread running: it waits for the GIL, and then builds its own engine
anyway. The way to keep the gap between decisions small is to prepare *on the deciding
thread, in slices*: :meth:`RegorusEngine.prepare_steps` is a generator that does at most
~1 ms of work per ``next()`` (one group of modules, one ~32 KB slice of data, the
analysis pass), and its result is the policy, with that thread's engine already built::

    steps = engine.prepare_steps(modules, data, entrypoints=(decision,))
    while True:
        try:
            next(steps)
        except StopIteration as done:
            policy = done.value
            break
        await asyncio.sleep(0)          # decisions run between the slices
    self._policy = policy               # the swap

:meth:`RegorusEngine.prepare` runs the same steps without pausing, and loads the data
in one piece (less work in total, one long call).

Extensions (``tg.related(...)`` style builtins written in Python) are registered on
every engine. They receive only Rego arguments, so per-decision state such as the
tenant must be bound by the caller through a :class:`contextvars.ContextVar` set before
:meth:`~PreparedPolicy.evaluate` (evaluation is synchronous, on the calling thread, so
the callback sees the caller's context)::

    current_tenant: ContextVar[str] = ContextVar("current_tenant")

    def related(obj: str, relation: str, subject: str) -> bool:
        return index.check(current_tenant.get(), obj, relation, subject)

    policy = RegorusEngine().prepare(modules, data,
                                     extensions={"tg.related": (3, related)})
    token = current_tenant.set("acme")
    try:
        result = policy.evaluate("data.tenantguard.decision", request)
    finally:
        current_tenant.reset(token)

An extension that raises makes the evaluation fail with :class:`PolicyEvaluationError`.
"""

from __future__ import annotations

import os

# regorus reports errors through anyhow, which captures a Rust backtrace whenever
# RUST_BACKTRACE (or RUST_LIB_BACKTRACE) is set: measured here, a failing evaluation
# then costs ~470 us instead of ~3 us and its message grows to ~2 KB of Rust frames.
# Rust reads the variables once, at the first capture, so they must be gone before
# regorus raises anything: hence here, before regorus is imported. (This also removes
# them from the environment of child processes started later by this process.)
os.environ.pop("RUST_BACKTRACE", None)
os.environ.pop("RUST_LIB_BACKTRACE", None)

import itertools
import json
import re
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import regorus

from tenantguard.errors import InvalidInput, PolicyError

__all__ = [
    "EntrypointInvalid",
    "Extension",
    "PolicyCompileError",
    "PolicyEngine",
    "PolicyEvaluationError",
    "PreparedPolicy",
    "RegorusEngine",
    "RegorusPreparedPolicy",
    "input_paths",
    "new_regorus_engine",
    "to_json_value",
    "validate_entrypoint",
]

#: ``(number of arguments, callable)`` for one Rego builtin written in Python.
Extension = tuple[int, Callable[..., Any]]

MAX_ENTRYPOINT_LENGTH = 256

# --------------------------------------------------------------------------- errors


class PolicyCompileError(PolicyError):
    """A module does not parse or the policy is unsafe; ``file``/``line`` locate it."""

    code = "policy_compile_error"

    def __init__(
        self, message: str, *, file: str | None, line: int | None = None, **detail: Any
    ) -> None:
        super().__init__(message, file=file, line=line, **detail)
        self.file = file
        self.line = line


class PolicyEvaluationError(PolicyError):
    """Evaluating an entrypoint failed (type error, conflict, extension error).

    Callers fail closed: an evaluation error is never an allow.
    """

    code = "policy_evaluation_error"


class EntrypointInvalid(InvalidInput):
    """The entrypoint is not a plain ``data.<identifier>...`` reference.

    Entrypoints may come from callers (the OPA Data API path), so anything that is
    not a reference is rejected before it reaches the engine: no query injection.
    """

    code = "entrypoint_invalid"


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class PreparedPolicy(Protocol):
    """One compiled bundle revision; immutable, safe to share between threads."""

    @property
    def packages(self) -> tuple[str, ...]:
        """The Rego packages it defines, e.g. ``("data.tenantguard", ...)``."""
        ...

    @property
    def pure(self) -> bool:
        """Whether the same input and data always give the same value (no clock, chance
        or network builtins); only pure policies' verdicts may be reused."""
        ...

    def evaluate(self, entrypoint: str, input: Mapping[str, Any]) -> Any:
        """The value of ``entrypoint`` for ``input``; ``None`` when it is undefined.

        Raises :class:`EntrypointInvalid` for a malformed entrypoint,
        :class:`InvalidInput` for input that is not a JSON-like value and
        :class:`PolicyEvaluationError` when evaluation fails.
        """
        ...


class PolicyEngine(Protocol):
    """Compiles bundle revisions into :class:`PreparedPolicy` objects."""

    def prepare(
        self,
        modules: Mapping[str, str],
        data: Mapping[str, Any],
        *,
        extensions: Mapping[str, Extension] | None = None,
        entrypoints: Sequence[str] = (),
    ) -> PreparedPolicy:
        """Compile ``modules`` (file name -> Rego source) with ``data``.

        ``entrypoints`` must each name a rule or document of the result; prepare fails
        otherwise, so a bundle whose manifest names a missing decision is rejected at
        activation rather than at every decision. Raises :class:`PolicyCompileError`.
        """
        ...


# --------------------------------------------------------------------------- entrypoints

_ENTRYPOINT_RE = re.compile(r"data(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_REGO_KEYWORDS = frozenset(
    {"as", "contains", "default", "else", "every", "false", "if", "import", "in", "not"}
    | {"null", "package", "some", "true", "with"}
)


def validate_entrypoint(entrypoint: str) -> str:
    """Return ``entrypoint`` if it is ``data.`` followed by identifier segments.

    Raises :class:`EntrypointInvalid` otherwise (wrong type, too long, brackets,
    operators, whitespace, keywords as segments).
    """
    if (
        not isinstance(entrypoint, str)
        or len(entrypoint) > MAX_ENTRYPOINT_LENGTH
        or not _ENTRYPOINT_RE.fullmatch(entrypoint)
    ):
        raise EntrypointInvalid(
            "entrypoint must look like data.package.rule", entrypoint=str(entrypoint)[:80]
        )
    if any(segment in _REGO_KEYWORDS for segment in entrypoint.split(".")[1:]):
        raise EntrypointInvalid("entrypoint segment is a Rego keyword", entrypoint=entrypoint)
    return entrypoint


# Entrypoints already validated: a decision names one of a handful, and the regular
# expression costs ~1 us of the ~20 us an evaluation takes. Bounded, since entrypoints
# may come from callers; past the bound, entrypoints are simply validated every time.
_VALID_ENTRYPOINTS: set[str] = set()
_MAX_REMEMBERED_ENTRYPOINTS = 256


def _checked_entrypoint(entrypoint: str) -> str:
    if type(entrypoint) is str and entrypoint in _VALID_ENTRYPOINTS:
        return entrypoint
    validate_entrypoint(entrypoint)
    if len(_VALID_ENTRYPOINTS) < _MAX_REMEMBERED_ENTRYPOINTS:
        _VALID_ENTRYPOINTS.add(entrypoint)
    return entrypoint


# --------------------------------------------------------------------------- values


def to_json_value(value: Any) -> Any:
    """Rego results as plain JSON values: sets become sorted lists, as OPA renders them."""
    if isinstance(value, dict):
        return {key: to_json_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_json_value(item) for item in value]
    if isinstance(value, (set, frozenset)):
        items = [to_json_value(item) for item in value]
        try:
            return sorted(items)
        except TypeError:  # mixed types: keep a stable, if arbitrary, order
            return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    return value


_SCALARS = frozenset({str, bool, int, float, type(None)})


def _result_value(value: Any) -> Any:
    """:func:`to_json_value` for a value fresh from regorus: converted in place.

    regorus builds a new Python object for every result, so nothing else holds it, and
    a decision (a dict of scalars and a list of strings) is returned without copying.
    """
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is dict:
        for key, item in value.items():
            if type(item) not in _SCALARS:
                value[key] = _result_value(item)
        return value
    if cls is list:
        for index, item in enumerate(value):
            if type(item) not in _SCALARS:
                value[index] = _result_value(item)
        return value
    return to_json_value(value)


_NO_TEXT = frozenset({int, float, bool, type(None)})  # values with no string inside
_BYTES = (bytes, bytearray, memoryview)  # regorus reads these as arrays of numbers


def has_unencodable_text(value: Any) -> bool:
    """True when a string (value or key) anywhere in ``value`` is not valid Unicode text.

    Python's ``json`` turns escapes like ``\\ud800`` into lone surrogates; regorus's
    ``set_input`` crashes the whole process (SIGSEGV) on one, so every input is checked
    first, through every container regorus converts: mappings, sequences and sets (not
    only dicts, lists and tuples), and ``str`` subclasses by their text. Only non-ASCII
    strings are encoded; a stack, not recursion, walks the value, and the members of a
    dict, list or tuple are tested in place so that scalars and ASCII strings are never
    pushed (about 3.5 us for a typical decision input, paid only when the policy is
    evaluated).
    """
    stack = [value]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict or kind is list or kind is tuple:
            if kind is dict:
                for key in item:
                    if type(key) is not str or not key.isascii():
                        push(key)
                item = item.values()
            for member in item:  # tested in place: scalars and ASCII strings are never pushed
                member_kind = type(member)
                if member_kind is str:
                    if not member.isascii():
                        push(member)
                elif member_kind not in _NO_TEXT:
                    push(member)
        elif kind in _NO_TEXT:
            continue
        elif isinstance(item, str):  # str or a subclass: its text, whatever __str__ says
            if not str.isascii(item):
                try:
                    str.encode(item)
                except UnicodeEncodeError:
                    return True
        elif isinstance(item, Mapping):
            extend(item.keys())
            extend(item.values())
        elif isinstance(item, _BYTES):
            continue
        elif isinstance(item, (Sequence, AbstractSet)):  # sets, deques, named tuples, arrays, ...
            extend(item)
    return False


# --------------------------------------------------------------------------- regorus errors

_LOCATION_RE = re.compile(r"-->\s*(?P<file>.+?):(?P<line>\d+):(?P<column>\d+)")
_NOT_A_RULE = "not a valid rule path"


def _error_text(exc: BaseException) -> str:
    """The ``error: ...`` line of a regorus message (or its last line)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error:"):
            return line.removeprefix("error:").strip()
    return lines[-1] if lines else type(exc).__name__


def _error_location(exc: BaseException) -> tuple[str | None, int | None, int | None]:
    match = _LOCATION_RE.search(str(exc))
    if match is None:
        return None, None, None
    return match["file"], int(match["line"]), int(match["column"])


def _compile_error(exc: BaseException, default_file: str | None) -> PolicyCompileError:
    file, line, column = _error_location(exc)
    file = file or default_file
    text = _error_text(exc)
    where = f"{file}:{line}:{column}" if line is not None else (file or "policy")
    return PolicyCompileError(f"{where}: {text}", file=file, line=line, column=column)


def _evaluation_error(exc: BaseException, entrypoint: str) -> PolicyEvaluationError:
    file, line, column = _error_location(exc)
    text = _error_text(exc)
    where = f"{file}:{line}:{column}: " if file is not None else ""
    return PolicyEvaluationError(
        f"evaluating {entrypoint} failed: {where}{text}",
        entrypoint=entrypoint,
        file=file,
        line=line,
        column=column,
    )


def _is_panic(exc: BaseException) -> bool:
    """A Rust panic surfaced by pyo3 (``pyo3_runtime.PanicException``, a BaseException)."""
    return type(exc).__name__ == "PanicException"


# --------------------------------------------------------------------------- building engines


# Builtins whose value is not a function of input and data: the clock, chance, the
# network, the runtime (io.jwt.decode_verify and the x509 verifier read the clock when no
# time is given). Naming one anywhere, a comment included, makes a policy impure: its
# verdicts are never reused (tenantguard.decision.verdicts). Erring towards "impure" costs speed only.
_IMPURE_BUILTINS = re.compile(
    r"\b(time\.now_ns|rand\.intn|uuid\.rfc4122|http\.send|net\.lookup_ip_addr|opa\.runtime"
    r"|io\.jwt\.decode_verify|crypto\.x509\.parse_and_verify_certificates\w*)\b"
)


def impure_builtins(modules: Mapping[str, str]) -> tuple[str, ...]:
    """The clock, chance or network builtins the modules name (sorted, each once)."""
    return tuple(sorted({m.group(1) for source in modules.values() for m in _IMPURE_BUILTINS.finditer(source)}))


# ``input`` followed by a member name, or alone. A policy reads ``input.relations`` unless
# every mention of ``input`` is ``input.<another member>``: a bare ``input``, ``input[...]``
# or a mention in a comment or string counts as reading it. Erring towards "reads" costs
# speed only; erring the other way would change decisions, which this rule cannot do.
_INPUT_MENTION = re.compile(r"\binput\b(?:\s*\.\s*([A-Za-z_]\w*))?")


def reads_input_relations(modules: Mapping[str, str]) -> bool:
    """Whether the modules may read ``input.relations`` (see ``_INPUT_MENTION``)."""
    return any(m.group(1) in (None, "relations") for source in modules.values()
               for m in _INPUT_MENTION.finditer(source))


_RELATED_CALL = re.compile(r"\btg\s*\.\s*related\b")


def calls_related(modules: Mapping[str, str]) -> bool:
    """Whether the modules may call ``tg.related`` (a mention in a comment counts: erring
    towards "calls" costs speed only)."""
    return any(_RELATED_CALL.search(source) for source in modules.values())


#: The whole input (``input_paths``): a module reads ``input`` as a value somewhere.
WHOLE_INPUT: tuple[str, ...] = ()

# Rego's lexical pieces that matter for finding ``input`` references: comments, strings
# ("..." with escapes, `raw`), identifiers (with a dotted tail), anything else one char.
_REGO_TOKEN = re.compile(
    r'(?P<comment>#[^\n]*)|(?P<string>"(?:[^"\\\n]|\\.)*"|`[^`]*`)'
    r"|(?P<ref>(?<![\w.])input(?!\w)(?:\s*\.\s*[A-Za-z_]\w*)*)|(?P<word>[A-Za-z_]\w*)|(?P<other>\S)"
)
_WITH_TARGET = re.compile(r"\s*as\b")


def input_paths(modules: Mapping[str, str]) -> tuple[tuple[str, ...], ...]:
    """The members of ``input`` the modules can read, as paths (``("subject", "id")``).

    A policy's value is a function of these members alone (and data, and its builtins): a
    member no module names, however deep, cannot change it. The verdict memo keys on them
    (``tenantguard.decision.verdicts.projected_key``), so a question that differs only in a member
    the bundle never reads (a resource id, a token's jti) reuses the verdict; and a rule
    added anywhere that reads another member widens the key with no other change.

    Read from the sources, conservatively: ``input.a.b`` names ``("a", "b")`` and all
    below it; ``input`` alone, ``input[...]`` or ``input`` passed as a value names the whole
    input (the result is then ``(WHOLE_INPUT,)``). Comments and strings are skipped, and so
    is the target of ``with input... as`` (it replaces the input, it does not read it).
    Paths below another path are left out; the result is sorted.
    """
    found: set[tuple[str, ...]] = set()
    for source in modules.values():
        previous = ""
        for match in _REGO_TOKEN.finditer(source):
            kind = match.lastgroup
            if kind == "ref":
                text = match.group()
                if previous == "with" and _WITH_TARGET.match(source, match.end()):
                    pass  # `with input.x as v`: replaced for that expression, not read
                else:
                    found.add(tuple(part.strip() for part in text.split(".")[1:]))
                previous = "input"
            elif kind in ("word", "other"):
                previous = match.group()
    if WHOLE_INPUT in found:
        return (WHOLE_INPUT,)
    return tuple(sorted(path for path in found if not any(path[:n] in found for n in range(1, len(path)))))


def _checked_modules(modules: Mapping[str, str]) -> Mapping[str, str]:
    if not modules:
        raise PolicyCompileError("a policy needs at least one module", file=None)
    for name, source in modules.items():
        if not isinstance(name, str) or not isinstance(source, str):
            raise PolicyCompileError("module names and sources must be strings", file=str(name))
    return MappingProxyType(dict(modules))


_EXTENSION_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _checked_extensions(
    extensions: Mapping[str, Extension] | None,
) -> tuple[tuple[str, int, Callable[..., Any]], ...]:
    checked = []
    for name, (nargs, function) in (extensions or {}).items():
        if not _EXTENSION_NAME_RE.fullmatch(name):
            raise PolicyCompileError(f"extension name {name!r} is not a Rego reference", file=None)
        if not isinstance(nargs, int) or nargs < 0 or not callable(function):
            raise PolicyCompileError(f"extension {name!r} needs (nargs >= 0, callable)", file=None)
        checked.append((name, nargs, function))
    return tuple(checked)


#: Data is loaded in slices of about this many bytes of JSON (see prepare_steps).
DATA_SLICE_BYTES = 32 * 1024
#: prepare_steps pauses once a step has worked this long.
STEP_SECONDS = 0.0005


def _json(value: Any) -> str:
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def _key_json(key: Any) -> str:
    """A key as json.dumps writes it (it turns int, float, bool and None keys into strings)."""
    return _json(key) if type(key) is str else _json({key: None})[1:-6]


def _probably_larger(obj: dict[Any, Any], limit: int) -> bool:
    """Whether ``obj`` is probably more than ``limit`` bytes of JSON, judged by its first
    two levels (~32 bytes an entry): cheap, and only used to choose where to slice."""
    entries = len(obj)
    for item in obj.values():
        if type(item) is dict or type(item) is list:
            entries += len(item)
    return entries * 32 > limit


def _data_slices(data: Mapping[str, Any], limit: int | None = DATA_SLICE_BYTES) -> Iterator[str]:
    """JSON texts whose deep merge is ``data``: each holds disjoint keys, most ~``limit`` bytes.

    It serialises the data, once, piece by piece (no single json.dumps of a large
    subtree), so a caller can pause between slices; loading the slices one after the
    other into a regorus engine gives the same data as loading the whole at once.
    Serialising also snapshots the caller's dict: later changes cannot leak into the
    revision. With ``limit=None``, the one text of a single json.dumps (about twice as
    fast in total, but one long call). Raises :class:`PolicyCompileError` for data that
    is not JSON.
    """
    if not isinstance(data, Mapping):
        raise PolicyCompileError("data must be a JSON object", file="data.json")
    try:
        if limit is None or type(data) is not dict:
            yield _json(data)  # json.dumps takes only dicts; this raises as it always did
            return
        whole = yield from _slices_of(data, (), limit)
        if whole is not None:
            yield whole
    except (TypeError, ValueError) as exc:
        raise PolicyCompileError(f"data is not JSON: {exc}", file="data.json") from None


def _slices_of(
    obj: dict[Any, Any], path: tuple[str, ...], limit: int
) -> Generator[str, None, str | None]:
    """Yield slices of ``obj`` (at ``path``) that are too large to return; return the rest
    as one JSON text, or None when all of it was yielded."""
    members: list[str] = []
    size = 0
    sliced = False
    for key, item in obj.items():
        key_json = _key_json(key)
        text = None if type(item) is dict and item and _probably_larger(item, limit) else _json(item)
        if text is None or (len(text) > limit and type(item) is dict and item):
            text = yield from _slices_of(item, (*path, key_json), limit)
            if text is None:
                sliced = True
                continue
        members.append(f"{key_json}:{text}")
        size += len(key_json) + len(text) + 2
        if size >= limit:
            yield _wrapped(path, members)
            members, size, sliced = [], 0, True
    if not sliced:
        return "{" + ",".join(members) + "}"
    if members:
        yield _wrapped(path, members)
    return None


def _wrapped(path: tuple[str, ...], members: list[str]) -> str:
    text = "{" + ",".join(members) + "}"
    for key_json in reversed(path):
        text = f"{{{key_json}:{text}}}"
    return text


def _encode_data(data: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(_data_slices(data))


def _build_steps(
    modules: Mapping[str, str],
    data_slices: Iterator[str] | Sequence[str],
    extensions: Sequence[tuple[str, int, Callable[..., Any]]],
    *,
    coverage: bool = False,
    gather_prints: bool = False,
) -> Generator[None, None, regorus.Engine]:
    """Build a regorus engine on the calling thread, compiled and analysed, pausing
    (yielding) whenever a step has worked for :data:`STEP_SECONDS`; returns the engine.

    Each regorus call holds the GIL throughout, so the pauses are what let other work on
    this thread (decisions) run between the slices. The longest steps are one data
    slice (~0.5-1 ms) and the analysis pass (~0.5-1 ms for the example bundle).
    """
    clock = time.perf_counter
    engine = regorus.Engine()
    if coverage:
        engine.set_enable_coverage(True)
    if gather_prints:
        engine.set_gather_prints(True)
    for name, nargs, function in extensions:
        try:
            engine.add_extension(name, nargs, function)
        except RuntimeError as exc:
            raise PolicyCompileError(f"extension {name!r}: {_error_text(exc)}", file=None) from None
    started = clock()
    for file, source in modules.items():
        try:
            engine.add_policy(file, source)
        except RuntimeError as exc:
            raise _compile_error(exc, file) from None
        if clock() - started > STEP_SECONDS:
            yield
            started = clock()
    for text in data_slices:
        try:
            engine.add_data_json(text)
        except RuntimeError as exc:
            raise PolicyCompileError(f"data: {_error_text(exc)}", file="data.json") from None
        if clock() - started > STEP_SECONDS:
            yield
            started = clock()
    yield
    try:
        # regorus analyses the whole program (unsafe variables, ...) at the first
        # evaluation; do it now so such errors reject the revision, not a decision.
        # Undefined functions and rule conflicts are still only found when the rule
        # is evaluated: the Rego tests (`tenantguard bundle test`) are what catch them.
        engine.eval_query("true")
    except RuntimeError as exc:
        raise _compile_error(exc, None) from None
    return engine


def _run(steps: Generator[None, None, Any]) -> Any:
    """Drive a step generator to its end without pausing; its return value."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def _build_engine(
    modules: Mapping[str, str],
    data_slices: Sequence[str],
    extensions: Sequence[tuple[str, int, Callable[..., Any]]],
    *,
    coverage: bool = False,
    gather_prints: bool = False,
) -> regorus.Engine:
    """A fresh regorus engine on the calling thread, compiled and analysed."""
    return _run(
        _build_steps(
            modules, data_slices, extensions, coverage=coverage, gather_prints=gather_prints
        )
    )


def new_regorus_engine(
    modules: Mapping[str, str],
    data: Mapping[str, Any],
    *,
    extensions: Mapping[str, Extension] | None = None,
    coverage: bool = False,
    gather_prints: bool = False,
) -> regorus.Engine:
    """A raw regorus engine for tools that need more than the protocol (coverage, prints).

    Usable only on the calling thread. Raises :class:`PolicyCompileError`.
    """
    return _build_engine(
        _checked_modules(modules),
        _encode_data(data),
        _checked_extensions(extensions),
        coverage=coverage,
        gather_prints=gather_prints,
    )


# --------------------------------------------------------------------------- per-thread engines


class _ThreadEngines(threading.local):
    """Each thread's engines, keyed by the prepared policy they belong to.

    Deliberately one module-level cache rather than a ``threading.local`` per policy:
    when a policy-owned local is released, CPython drops every thread's entry on the
    releasing thread, and a regorus engine dropped off its own thread leaks and prints
    an error. Here an engine is only ever dropped by its own thread: when that thread
    builds or stores another engine (stale entries, whose policy is gone, are swept
    then) or when it exits. An idle thread may keep one stale engine until then.
    """

    def __init__(self) -> None:
        self.slots: dict[int, tuple[weakref.ref[RegorusPreparedPolicy], regorus.Engine]] = {}

    def get(self, key: int) -> regorus.Engine | None:
        slot = self.slots.get(key)
        return None if slot is None else slot[1]

    def put(self, policy: RegorusPreparedPolicy, engine: regorus.Engine) -> None:
        self.sweep()
        self.slots[policy.key] = (weakref.ref(policy), engine)

    def drop(self, key: int) -> None:
        self.slots.pop(key, None)

    def sweep(self) -> bool:
        """Drop this thread's engines whose policy is gone; whether there were any."""
        stale = [key for key, (ref, _) in self.slots.items() if ref() is None]
        for key in stale:
            del self.slots[key]
        return bool(stale)


_THREAD_ENGINES = _ThreadEngines()
_KEYS = itertools.count(1)  # never reused, unlike id()


# --------------------------------------------------------------------------- regorus implementation


@dataclass(frozen=True, slots=True, weakref_slot=True, eq=False)
class RegorusPreparedPolicy:
    """A bundle revision compiled for regorus. Frozen: share it, swap it, never mutate it.

    Built by :meth:`RegorusEngine.prepare`; holds the sources (not engines), from
    which each thread builds its own engine on first use. ``data_slices`` is the data
    as JSON texts that are loaded one after the other (see :func:`_data_slices`).
    """

    modules: Mapping[str, str] = field(repr=False)
    data_slices: tuple[str, ...] = field(repr=False)
    extensions: tuple[tuple[str, int, Callable[..., Any]], ...] = field(repr=False)
    packages: tuple[str, ...]
    impure_builtins: tuple[str, ...] = ()
    reads_relations: bool = True  # False: no module can see input.relations, so it need not be computed
    input_paths: tuple[tuple[str, ...], ...] = (WHOLE_INPUT,)  # what of the input it can read (input_paths)
    calls_related: bool = True  # False: no module names tg.related (calls_related)
    key: int = field(default_factory=lambda: next(_KEYS))

    @property
    def pure(self) -> bool:
        return not self.impure_builtins

    def evaluate(self, entrypoint: str, input: Mapping[str, Any]) -> Any:
        """The value of ``entrypoint`` for ``input`` (``None`` when undefined), as JSON values."""
        path = _checked_entrypoint(entrypoint)
        engine = _THREAD_ENGINES.slots.get(self.key)
        engine = self._engine() if engine is None else engine[1]
        if has_unencodable_text(input):  # regorus's set_input segfaults on these
            raise InvalidInput("input holds a lone UTF-16 surrogate, which is not text")
        try:
            engine.set_input(input)
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidInput(f"input is not a JSON-like value: {exc}") from None
        return _result_value(self._eval(engine, path))

    def warm(self) -> None:
        """Build this thread's engine now, so its first decision does not pay for it.

        Call it on each deciding thread after a swap if that first decision must be fast.
        """
        self._engine()

    def _engine(self) -> regorus.Engine:
        engine = _THREAD_ENGINES.get(self.key)
        if engine is None:
            engine = _build_engine(self.modules, self.data_slices, self.extensions)
            _THREAD_ENGINES.put(self, engine)
        return engine

    def _eval(self, engine: regorus.Engine, path: str) -> Any:
        try:
            return engine.eval_rule(path)
        except RuntimeError as exc:
            if _error_text(exc) != _NOT_A_RULE:
                raise _evaluation_error(exc, path) from None
        except BaseException as exc:
            if not _is_panic(exc):
                raise
            _THREAD_ENGINES.drop(self.key)  # do not trust an engine that panicked
            raise _evaluation_error(exc, path) from None
        return self._eval_document(engine, path)

    @staticmethod
    def _eval_document(engine: regorus.Engine, path: str) -> Any:
        """A package or a data document (OPA Data API semantics), via a query.

        Slower than ``eval_rule`` (~12 vs ~4 us) and only reached for paths that are
        not rules. ``path`` was validated, so the query is a plain reference.
        """
        try:
            results = engine.eval_query(path).get("result") or []
        except RuntimeError as exc:
            raise _evaluation_error(exc, path) from None
        if not results:
            return None
        return results[0]["expressions"][0]["value"]


class RegorusEngine:
    """:class:`PolicyEngine` backed by regorus (Rego v1 syntax)."""

    def prepare(
        self,
        modules: Mapping[str, str],
        data: Mapping[str, Any],
        *,
        extensions: Mapping[str, Extension] | None = None,
        entrypoints: Sequence[str] = (),
    ) -> RegorusPreparedPolicy:
        """Compile once on the calling thread; that thread's engine is kept for reuse.

        The work of :meth:`prepare_steps`, without pauses and with the data loaded in one
        piece (less work in total, but one long call: ~70 ms for 100,000 relations).
        """
        return _run(_prepare_steps(modules, data, extensions, entrypoints, slice_bytes=None))

    def prepare_steps(
        self,
        modules: Mapping[str, str],
        data: Mapping[str, Any],
        *,
        extensions: Mapping[str, Extension] | None = None,
        entrypoints: Sequence[str] = (),
    ) -> Generator[None, None, RegorusPreparedPolicy]:
        """:meth:`prepare`, one slice of work (~1 ms at most) per ``next()``.

        A generator whose return value (``StopIteration.value``) is the prepared policy,
        with the calling thread's engine built, so that thread's first decision on it is
        as fast as any other. Drive it to the end (or ``close()`` it) on one thread:
        between two ``next()`` calls that thread is free to keep deciding on the current
        revision. Raises :class:`PolicyCompileError` from the step that finds the problem.
        """
        return (yield from _prepare_steps(modules, data, extensions, entrypoints, DATA_SLICE_BYTES))


def _prepare_steps(
    modules: Mapping[str, str],
    data: Mapping[str, Any],
    extensions: Mapping[str, Extension] | None,
    entrypoints: Sequence[str],
    slice_bytes: int | None,
) -> Generator[None, None, RegorusPreparedPolicy]:
    checked_modules = _checked_modules(modules)
    checked_extensions = _checked_extensions(extensions)
    checked_entrypoints = [validate_entrypoint(entrypoint) for entrypoint in entrypoints]
    if _THREAD_ENGINES.sweep():
        # Freeing an engine is a step of its own: ~5 ms for 100,000 relations in data.
        yield
    slices: list[str] = []

    def recorded() -> Iterator[str]:
        for text in _data_slices(data, slice_bytes):
            slices.append(text)
            yield text

    engine = yield from _build_steps(checked_modules, recorded(), checked_extensions)
    policy = RegorusPreparedPolicy(
        modules=checked_modules,
        data_slices=tuple(slices),
        extensions=checked_extensions,
        packages=tuple(sorted(set(engine.get_packages()))),
        impure_builtins=impure_builtins(checked_modules),
        reads_relations=reads_input_relations(checked_modules),
        input_paths=input_paths(checked_modules),
        calls_related=calls_related(checked_modules),
    )
    for entrypoint in checked_entrypoints:
        yield
        _require_entrypoint(engine, entrypoint)
    _THREAD_ENGINES.put(policy, engine)
    return policy


def _require_entrypoint(engine: regorus.Engine, path: str) -> None:
    """Fail unless ``path`` names a rule or a document (evaluated with empty input)."""
    engine.set_input({})
    try:
        engine.eval_rule(path)
        return
    except RuntimeError as exc:
        if _error_text(exc) != _NOT_A_RULE:
            raise _compile_error(exc, None) from None
    try:
        found = bool(engine.eval_query(path).get("result"))
    except RuntimeError as exc:
        raise _compile_error(exc, None) from None
    if not found:
        raise PolicyCompileError(f"entrypoint {path} is not defined by the policy", file=None)
