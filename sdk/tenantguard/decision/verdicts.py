"""Policy verdicts, and a memo that reuses them for a question asked again.

A policy evaluation is the costliest step of a decision (~20 µs of ~30 µs here), and
services ask the same question often (the same user, action and resource on every
page load or retry). The verdict of a *pure* policy is a function of exactly:

* the policy revision (modules and data; a new bundle is a new ``PolicyRevision``),
* the relations state (``input.relations`` and every ``tg.related`` call read it; a
  ``RelationIndex`` publishes a new sequence number with every applied batch, and a
  resynchronised index is a new object),
* the question (subject, action, resource, context) and the verified claims.

So a :class:`VerdictMemo` keeps verdicts for one *epoch* — one revision object, one
relations object at one sequence — and drops them all the moment any of the three
changes. There is no time-to-live because nothing else can change a pure verdict;
policies that read the clock, chance or the network are never memoized (see
``tenantguard.policy.engine.impure_builtins``).

What the memo never skips: token verification (expiry, revocation, audience happen
before the core), the tenant kill switch, high-risk confirmation, a fresh decision id
and the decision-log record. Only the Rego evaluation is reused.

Keys are exact, never hashes of hashes: ``repr`` of the question's four parts, taken
only when every value in them is a plain JSON type (``dict`` with ``str`` keys,
``list``, ``str``, ``int``, ``float``, ``bool``, ``None``), where ``repr`` is injective;
anything else is evaluated every time. Claims are matched by identity (the verifier's
cache hands out one ``Claims`` object per token), held by the entry so an identity can
never be reused while the entry lives.

A verdict is also kept under a second, wider key (:func:`projected_key`): the tenant, the
subject and the members of the policy input that the bundle's modules can read at all
(``tenantguard.policy.engine.input_paths``, derived from the sources of whatever bundle is
active). Two questions that differ only in members no rule names (a resource id, a
token's ``jti`` or expiry: every exchanged token is a new one) get the same verdict, and
the second reuses it. Nothing is written by hand: a rule added anywhere in the bundle
that reads another member makes that member part of the key.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

DEFAULT_MEMO_SIZE = 10_000
MAX_KEY_CHARS = 4096  # bigger questions are evaluated every time: the memo's memory stays bounded


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the policy (and the built-in tenant check with ``act_as``) concluded."""

    allow: bool
    reasons: tuple[str, ...]
    high_risk: bool = False
    act_as: bool = False


_SCALARS = frozenset({str, int, bool, float, type(None)})


def _plain(value: Any) -> bool:
    """Only JSON types, with ``str`` keys: the values whose ``repr`` is an exact key.

    Plain loops, not ``all()``: half the cost on the decision path.
    """
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or (type(item) not in _SCALARS and not _plain(item)):
                return False
        return True
    if kind is list:
        for item in value:  # noqa: SIM110
            if type(item) not in _SCALARS and not _plain(item):
                return False
        return True
    return False


def question_key(subject: Mapping[str, Any], action: Mapping[str, Any], resource: Mapping[str, Any],
                 context: Mapping[str, Any]) -> str | None:
    """The exact key of a question, or None when it cannot have one (then: no memo)."""
    parts = (subject, action, resource, context)
    try:
        if not (_plain(subject) and _plain(action) and _plain(resource) and _plain(context)):
            return None
        key = repr(parts)
    except RecursionError:  # absurdly deep: evaluate it (the engine will say what it thinks)
        return None
    return key if len(key) <= MAX_KEY_CHARS else None


_ABSENT = "absent"
_BELOW = "below"


def _projection(doc: Mapping[str, Any], path: tuple[str, ...]) -> tuple[Any, ...]:
    """What a policy reading ``input.<path>`` (and everything below it) can see of ``doc``:
    the value; that it is absent (and where); or the value above it that is not an object."""
    value: Any = doc
    for depth, name in enumerate(path):
        if type(value) is not dict:
            return (_BELOW, depth, value)
        if name not in value:
            return (_ABSENT, depth)
        value = value[name]
    return (value,)


def projected_key(tenant: str, subject: str, doc: Mapping[str, Any],
                  paths: tuple[tuple[str, ...], ...]) -> str | None:
    """The key of a verdict on ``doc`` for a policy that reads only ``paths`` of its input,
    or None when there is none (the whole input is read, or a value is not plain JSON).

    ``input.relations`` is left out of ``doc``'s part: it is a function of the tenant, the
    subject and the relations state, which the key and the epoch hold.
    """
    if not paths or paths[0] == ():
        return None
    parts: list[Any] = [tenant, subject]
    for path in paths:
        if path[0] == "relations":
            continue
        seen = _projection(doc, path)
        if not _plain(seen[-1]):
            return None
        parts.append(seen)
    try:
        key = repr(parts)
    except RecursionError:
        return None
    return key if len(key) <= MAX_KEY_CHARS else None


class _Epoch:
    """Verdicts valid for one revision and one relations state; replaced, never updated.

    The relations index is held weakly: a replaced index (possibly millions of tuples)
    is freed at once, not when the next decision moves the memo on.
    """

    __slots__ = ("relations", "revision", "seq", "verdicts")

    def __init__(self, revision: object, relations: object, seq: int, size: int) -> None:
        self.revision = revision
        self.relations = weakref.ref(relations)
        self.seq = seq
        # (id(claims), question) -> (claims, verdict); (None, projected key) -> (None, verdict)
        self.verdicts: LRUCache[tuple[int | None, str], tuple[object, Verdict]] = LRUCache(maxsize=size)

    def holds(self, revision: object, relations: object, seq: int) -> bool:
        return self.revision is revision and self.relations() is relations and self.seq == seq


class VerdictMemo:
    """Bounded (LRU) memo of verdicts for the current epoch; thread-safe.

    ``hits``/``misses`` count lookups of memoizable questions (``projected_hits``: the
    hits on the projected key, :func:`projected_key`); ``epochs`` counts how often the memo
    was emptied because the policy or the relations moved on.
    """

    def __init__(self, size: int = DEFAULT_MEMO_SIZE) -> None:
        if size < 1:
            raise ValueError("memo size must be at least 1 (disable the memo by not creating one)")
        self.size = size
        self.hits = 0
        self.misses = 0
        self.projected_hits = 0
        self.epochs = 0
        self._lock = threading.Lock()
        self._epoch: _Epoch | None = None

    def epoch(self, revision: object, relations: object, seq: int) -> _Epoch:
        """The memo for this state; a new, empty one when anything it depends on changed.

        A decision takes its epoch once, at the start, and stores into that one only:
        a verdict computed while the state moved on lands in a discarded epoch.
        """
        current = self._epoch
        if current is not None and current.holds(revision, relations, seq):
            return current
        with self._lock:
            current = self._epoch
            if current is None or not current.holds(revision, relations, seq):
                current = self._epoch = _Epoch(revision, relations, seq, self.size)
                self.epochs += 1
            return current

    def get(self, epoch: _Epoch, key: str, claims: object) -> Verdict | None:
        with self._lock:
            entry = epoch.verdicts.get((id(claims), key))
            if entry is not None and entry[0] is claims:
                self.hits += 1
                return entry[1]
            self.misses += 1
            return None

    def put(self, epoch: _Epoch, key: str, claims: object, verdict: Verdict) -> None:
        with self._lock:
            epoch.verdicts[(id(claims), key)] = (claims, verdict)

    def get_projected(self, epoch: _Epoch, key: str) -> Verdict | None:
        """The verdict under a :func:`projected_key`, after :meth:`get` missed: a hit is
        counted as one (not a miss as well), a miss was already counted."""
        with self._lock:
            entry = epoch.verdicts.get((None, key))
            if entry is None:
                return None
            self.misses -= 1
            self.hits += 1
            self.projected_hits += 1
            return entry[1]

    def put_projected(self, epoch: _Epoch, key: str, verdict: Verdict) -> None:
        with self._lock:
            epoch.verdicts[(None, key)] = (None, verdict)

    def __len__(self) -> int:
        epoch = self._epoch
        return len(epoch.verdicts) if epoch is not None else 0

    def stats(self) -> dict[str, int]:
        return {"size": self.size, "entries": len(self), "hits": self.hits, "misses": self.misses,
                "projected_hits": self.projected_hits, "epochs": self.epochs}
