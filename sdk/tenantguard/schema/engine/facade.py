"""``SchemaEngine``: one schema prepared once, queried many times over any ``RelationReads``.

Preparing compiles every condition (CEL) and precomputes reachability and reverse edges
(``prepared``); each query gets its own ``Evaluation`` (budget, depth limit, clock,
context), so one engine is safe to share between threads. Queries name only types and
relations the schema defines (``UnknownRelation`` otherwise, a 400), and every failure is a
typed ``EngineError`` with a ``rule``: never a partial answer, never an allow.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tenantguard.relations.reads import RelationReads
from tenantguard.schema.engine.check import TRACK_FROM, Evaluation
from tenantguard.schema.engine.conditions import compile_all
from tenantguard.schema.engine.errors import InvalidQuery, UnknownRelation
from tenantguard.schema.engine.expand import expand
from tenantguard.schema.engine.limits import Budget, Limits
from tenantguard.schema.engine.lookup import resource_candidates, subject_candidates
from tenantguard.schema.engine.outcome import Decision, Outcome
from tenantguard.schema.engine.paging import Item, Page, decode, paginate, query_digest
from tenantguard.schema.engine.prepared import prepare
from tenantguard.schema.engine.subjects import Subject, parse_object, parse_subject
from tenantguard.schema.model import Schema


@dataclass(frozen=True, slots=True)
class CheckResult:
    decision: Decision
    missing: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOWED


_NEVER_EXPIRED = float("-inf")  # the clock of a proposal: no tuple has expired yet


def _result(o: Outcome) -> CheckResult:
    return CheckResult(o.decision, tuple(sorted(o.missing)))


class SchemaEngine:
    """check / lookup_resources / lookup_subjects / expand for one schema."""

    def __init__(self, schema: Schema, limits: Limits | None = None, *, memo: bool = True,
                 cut_cycles: bool = True, track_from: int = TRACK_FROM) -> None:
        """``memo=False`` evaluates every sub-check afresh, ``cut_cycles=False`` walks SpiceDB's
        cycles to the depth limit: the references the memo and the cycle cut are tested against.
        ``track_from`` is the depth at which a SpiceDB-dialect walk starts again with its path
        tracked (tests lower it to exercise the cut under small depth limits)."""
        self.schema = schema
        self.memo = memo
        self.cut_cycles = cut_cycles
        self.track_from = track_from
        self.limits = limits or Limits()
        self.max_depth = self.limits.depth_for(schema.dialect)
        self._prepared = prepare(schema)
        self._conditions = compile_all(schema.conditions, max_chars=self.limits.max_expression_chars,
                                       require_all=schema.dialect == "openfga")

    def _evaluation(self, reads: RelationReads, context: Mapping[str, Any] | None, now: float | None,
                    max_steps: int | None = None, *, memo: bool = True) -> Evaluation:
        if context is not None and not isinstance(context, Mapping):
            raise InvalidQuery("context must be an object")
        if context is not None and len(context) > self.limits.max_context_items:
            raise InvalidQuery(f"context has over {self.limits.max_context_items} members", rule="context_too_large")
        return Evaluation(self._prepared, self._conditions, reads, context=context, now=now,
                          budget=Budget(self._steps(max_steps)), max_depth=self.max_depth,
                          max_context_items=self.limits.max_context_items, memo=self.memo and memo,
                          cut_cycles=self.cut_cycles, track_from=self.track_from)

    def _known(self, type_name: str, relation: str | None = None) -> None:
        if type_name not in self.schema.types:
            raise UnknownRelation(f"type {type_name!r} is not defined", rule="undefined_type", type=type_name)
        if relation is not None and self.schema.relation(type_name, relation) is None:
            raise UnknownRelation(f"relation {relation!r} undefined for type {type_name!r}",
                                  type=type_name, relation=relation)

    def _subject(self, text: str) -> Subject:
        """The asked subject, of a known type; a wildcard is a question OpenFGA answers (is the
        object public to the type?) and SpiceDB refuses ("wildcard not allowed"), so each dialect
        does what its original does."""
        subject = parse_subject(text)
        self._known(subject.type, subject.relation)
        if subject.wildcard and self.schema.dialect == "spicedb":
            raise InvalidQuery(f"subject {text!r}: a wildcard cannot be asked about in SpiceDB's dialect "
                               "(ask about one subject)", rule="wildcard_subject")
        return subject

    def _conditions_on_walk(self) -> bool:
        """Whether a lookup first walks every candidate evaluating conditions: OpenFGA's ListObjects
        and ListUsers fail when a tuple on their walk lacks a condition parameter, even where Check
        allows another way, so an OpenFGA-dialect lookup does too (a schema without conditions
        cannot meet one, and pages without the extra walk)."""
        return self.schema.dialect == "openfga" and bool(self.schema.conditions)

    def _steps(self, max_steps: int | None) -> int:
        return self.limits.max_steps if max_steps is None else min(max_steps, self.limits.max_steps)

    def _page_size(self, page_size: int) -> int:
        bad = not isinstance(page_size, int) or isinstance(page_size, bool)
        if bad or not 1 <= page_size <= self.limits.max_page_size:
            raise InvalidQuery(f"page_size must be 1..{self.limits.max_page_size}", rule="bad_page_size")
        return page_size

    def check(self, reads: RelationReads, object: str, relation: str, subject: str, *,
              context: Mapping[str, Any] | None = None, now: float | None = None) -> CheckResult:
        type_name, _ = parse_object(object)
        self._known(type_name, relation)
        subj = self._subject(subject)
        # one question: the memo's bookkeeping costs more than the diamonds it would save (bench_schema.py)
        ev = self._evaluation(reads, context, now, memo=False)
        return _result(ev.ask(object, relation, subj))

    def check_relations(self, reads: RelationReads, object: str, relations: Iterable[str], subject: str, *,
                        context: Mapping[str, Any] | None = None, now: float | None = None) -> dict[str, CheckResult]:
        """``check`` for several relations of one object in one evaluation: permissions of a
        type share their sub-checks (``viewer`` inside ``edit`` and ``view``), walked once."""
        type_name, _ = parse_object(object)
        names = list(relations)
        for name in names:
            self._known(type_name, name)
        subj = self._subject(subject)
        ev = self._evaluation(reads, context, now)
        return {name: _result(ev.ask(object, name, subj)) for name in names}

    def lookup_resources(self, reads: RelationReads, object_type: str, relation: str, subject: str, *,
                         context: Mapping[str, Any] | None = None, now: float | None = None,
                         page_size: int = 100, cursor: str | None = None) -> Page:
        self._known(object_type, relation)
        subj = self._subject(subject)
        size = self._page_size(page_size)
        digest = query_digest("resources", object_type, relation, subject, dict(context or {}))
        offset = decode(cursor, digest)
        if self._conditions_on_walk():  # ListObjects fails when a condition on its walk lacks context
            for _ in resource_candidates(self._evaluation(reads, context, now), object_type, relation, subj,
                                         conditions=True):
                pass
        ev = self._evaluation(reads, context, now)

        def decide(obj: str) -> Item | None:
            o = ev.ask(obj, relation, subj)
            return None if o.denied else Item(obj, o.decision, tuple(sorted(o.missing)))

        return paginate(resource_candidates(ev, object_type, relation, subj), decide, offset, size, digest)

    def lookup_subjects(self, reads: RelationReads, object: str, relation: str, subject_type: str,
                        subject_relation: str | None = None, *, context: Mapping[str, Any] | None = None,
                        now: float | None = None, page_size: int = 100, cursor: str | None = None) -> Page:
        type_name, _ = parse_object(object)
        self._known(type_name, relation)
        self._known(subject_type, subject_relation)
        size = self._page_size(page_size)
        digest = query_digest("subjects", object, relation, subject_type, subject_relation, dict(context or {}))
        offset = decode(cursor, digest)
        if self._conditions_on_walk():  # ListUsers fails when a condition on its walk lacks context
            for _ in subject_candidates(self._evaluation(reads, context, now), object, relation, subject_type,
                                        subject_relation, conditions=True):
                pass
        ev = self._evaluation(reads, context, now)

        def decide(text: str) -> Item | None:
            o = ev.ask(object, relation, parse_subject(text))
            return None if o.denied else Item(text, o.decision, tuple(sorted(o.missing)))

        return paginate(subject_candidates(ev, object, relation, subject_type, subject_relation), decide,
                        offset, size, digest)

    # -- candidates of every relation of a type (search proposes, its policy decides) ----------

    def resource_candidates(self, reads: RelationReads, object_type: str, subject: str, *,
                            max_steps: int | None = None) -> Iterator[str]:
        """Objects of ``object_type`` on which ``subject`` may hold any relation or permission,
        each once, lazily, in an order fixed by ``reads`` (unlike ``lookup_resources`` nothing
        is decided here: the caller decides every candidate).

        An over-approximation that ignores expiry and conditions, so it is a function of the
        tuples alone: over one frozen state a re-walk gives the same order (offset cursors).
        ``max_steps`` narrows the step budget (``QueryTooBroad`` past it, while iterating)."""
        self._known(object_type)
        subj = self._subject(subject)
        ev = self._evaluation(reads, None, _NEVER_EXPIRED, max_steps)
        return resource_candidates(ev, object_type, None, subj)

    def subject_candidates(self, reads: RelationReads, object: str, subject_type: str, *,
                           max_steps: int | None = None) -> Iterator[str]:
        """Plain subjects of ``subject_type`` that may hold any relation or permission on
        ``object``, each once, lazily (as :meth:`resource_candidates`); a wildcard tuple's
        ``type:*`` is left out: it names no subject (a grant to every subject is the
        caller's to find, e.g. by deciding a subject no tuple names)."""
        type_name, _ = parse_object(object)
        self._known(type_name)
        self._known(subject_type)
        ev = self._evaluation(reads, None, _NEVER_EXPIRED, max_steps)
        wildcard = f"{subject_type}:*"
        return (s for s in subject_candidates(ev, object, None, subject_type, None) if s != wildcard)

    def expand(self, reads: RelationReads, object: str, relation: str, *, now: float | None = None) -> dict[str, Any]:
        type_name, _ = parse_object(object)
        self._known(type_name, relation)
        return expand(self._evaluation(reads, None, now), object, relation)
