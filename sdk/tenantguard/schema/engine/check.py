"""Check: does ``subject`` have ``relation`` on ``object``? Depth-first over the rewrite tree.

Follows openfga ``internal/graph/check.go`` (``ResolveCheck``): every dispatch (computed
relation, arrow, userset tuple) goes one level deeper and fails with ``ResolutionTooComplex``
at the dialect's limit; ``object#rel`` asked about itself is allowed; in OpenFGA a node seen
again on the same path is a cycle (false, with the cycle bit), while SpiceDB has no cycle
detection and a cycle runs into its depth limit (an error). Tuples whose shape the relation no
longer accepts and expired tuples do not exist. Evaluation is sequential and short-circuits:
a union stops at the first allowed branch, an intersection at the first denied one.

Memo: within one query (one check, or one lookup deciding many candidates), a sub-check's
outcome is kept and reused, which is what lets a lookup decide 10,000 documents under one
folder without walking the folder's ancestry again for each. Reuse never changes an answer:
an entry records the nodes its evaluation touched and how much deeper it went, and is
reused only where the evaluation would run identically: no touched node on the current path
(OpenFGA's cycle rule tests exactly those) and the depth limit not reached from here.
``tests/schema/engine/test_memo.py`` holds memo-on equal to memo-off over random models.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from tenantguard.relations.reads import RelationReads, TupleMeta
from tenantguard.schema.engine.conditions import CompiledCondition
from tenantguard.schema.engine.errors import ConditionError, ResolutionTooComplex, UnknownRelation
from tenantguard.schema.engine.limits import Budget
from tenantguard.schema.engine.outcome import (
    ALLOW,
    DENY,
    DENY_CYCLE,
    AnyOf,
    Decision,
    Outcome,
    both,
    conditional,
    exclude,
)
from tenantguard.schema.engine.prepared import Prepared
from tenantguard.schema.engine.subjects import Subject, split
from tenantguard.schema.model import Arrow, Computed, Direct, Exclusion, Expr, Intersection, Nil, Union

MEMO_MAX_TOUCHED = 64  # an entry touching more nodes than this is not kept (its set costs more than it saves)

Key = tuple[str, str, str]  # (object, relation, subject)


class Memo(NamedTuple):
    outcome: Outcome
    height: int  # levels below the entry's own depth that its evaluation reached
    touched: frozenset[Key]  # every node it entered (OpenFGA: the cycle rule's inputs)


class Evaluation:
    """One query's state: reads, context, clock, budget, depth limit and the current path."""

    def __init__(self, prepared: Prepared, conditions: Mapping[str, CompiledCondition], reads: RelationReads, *,
                 context: Mapping[str, Any] | None, now: float | None, budget: Budget, max_depth: int,
                 max_context_items: int, memo: bool = True) -> None:
        self.p = prepared
        self.schema = prepared.schema
        self.openfga = prepared.schema.dialect == "openfga"
        self.conditions = conditions
        self.reads = reads
        self.context = context
        self.now = time.time() if now is None else now
        self.budget = budget
        self.max_depth = max_depth
        self.max_context_items = max_context_items
        self.path: set[Key] = set()
        self.memo: dict[Key, Memo] | None = {} if memo else None
        self.entered: list[Key] = []  # nodes entered, in order (what a memo entry touched)
        self.deepest = 0

    # -- tuples -------------------------------------------------------------------------
    def valid(self, type_name: str, relation: str, subject: str, meta: TupleMeta | None) -> bool:
        """A tuple exists for the engine: not expired, and of a shape the relation accepts."""
        if meta is None:
            obj, _, srel = subject.partition("#")
            shape = (obj.partition(":")[0], "*" if obj.endswith(":*") else srel or None, None)
            return shape in self.p.accepts.get((type_name, relation), ())
        condition = None
        if meta is not None:
            if meta.expired(self.now):
                return False
            condition = meta.condition
        obj, stype, srel = split(subject)
        if obj.endswith(":*"):
            srel = "*"
        return (stype, srel, condition) in self.p.accepts.get((type_name, relation), ())

    def condition(self, meta: TupleMeta | None) -> Outcome:
        if meta is None or meta.condition is None:
            return ALLOW
        compiled = self.conditions.get(meta.condition)
        if compiled is None:
            raise ConditionError(f"tuple names undefined condition {meta.condition!r}", rule="condition_undefined")
        return compiled.evaluate(meta.context, self.context, self.max_context_items)

    # -- check ----------------------------------------------------------------------------
    def check(self, obj: str, relation: str, subject: Subject, depth: int) -> Outcome:
        if depth >= self.max_depth:
            raise ResolutionTooComplex(f"resolution deeper than {self.max_depth} levels", limit=self.max_depth)
        self.budget.spend()
        if subject.relation == relation and subject.object == obj:
            return ALLOW
        type_name = obj.partition(":")[0]
        node = self.p.nodes.get((type_name, relation))
        if node is None:
            raise UnknownRelation(f"relation {relation!r} undefined for type {type_name!r}",
                                  type=type_name, relation=relation)
        rewrite, reach = node
        if subject.kind not in reach:
            return DENY
        key = (obj, relation, subject.text)
        if self.memo is None:  # evaluate(), inlined: this is the hot path of a single check
            if not self.openfga:
                return self.rewrite(obj, type_name, relation, rewrite, subject, depth)
            path = self.path
            if key in path:
                return DENY_CYCLE
            path.add(key)
            try:
                return self.rewrite(obj, type_name, relation, rewrite, subject, depth)
            finally:
                path.discard(key)
        hit = self.memo.get(key)
        if hit is not None and depth + hit.height < self.max_depth and self.path.isdisjoint(hit.touched):
            if depth:
                self.entered.extend(hit.touched)
            self.deepest = max(self.deepest, depth + hit.height)
            return hit.outcome
        start, deepest = len(self.entered), self.deepest
        self.deepest = depth
        outcome = self.evaluate(key, type_name, rewrite, subject, depth)
        if len(self.entered) - start <= MEMO_MAX_TOUCHED:
            seen = frozenset(self.entered[start:])
            if self.path.isdisjoint(seen):  # nothing it touched was cut by the path above it
                self.memo[key] = Memo(outcome, self.deepest - depth, seen)
        self.deepest = max(deepest, self.deepest)
        if depth == 0:
            self.entered.clear()  # a top-level question: nothing above it needs the record
        return outcome

    def evaluate(self, key: Key, type_name: str, rewrite: Expr, subject: Subject, depth: int) -> Outcome:
        """``key``'s rewrite, with OpenFGA's rule that a node already on the path is a cycle."""
        obj, relation, _ = key
        self.entered.append(key)
        if self.openfga:
            if key in self.path:
                return DENY_CYCLE
            self.path.add(key)
            try:
                return self.rewrite(obj, type_name, relation, rewrite, subject, depth)
            finally:
                self.path.discard(key)
        return self.rewrite(obj, type_name, relation, rewrite, subject, depth)

    def rewrite(self, obj: str, type_name: str, relation: str, expr: Expr, subject: Subject, depth: int) -> Outcome:
        kind = type(expr)
        if kind is Direct:
            return self.direct(obj, type_name, relation, subject, depth)
        if kind is Computed:
            return self.check(obj, expr.relation, subject, depth + 1)  # type: ignore[attr-defined]
        if kind is Arrow:
            return self.arrow(obj, type_name, expr, subject, depth)  # type: ignore[arg-type]
        if isinstance(expr, Union):
            acc: AnyOf | None = None  # only a conditional or cycle-marked branch needs one
            for child in expr.children:
                o = self.rewrite(obj, type_name, relation, child, subject, depth)
                if o.decision is Decision.ALLOWED:
                    return ALLOW
                if o is not DENY:
                    acc = acc or AnyOf()
                    acc.add(o)
            return DENY if acc is None else acc.result()
        if isinstance(expr, Intersection):
            missing: set[str] = set()
            for child in expr.children:
                o = self.rewrite(obj, type_name, relation, child, subject, depth)
                if o.denied:
                    return o
                missing |= o.missing
            return conditional(frozenset(missing)) if missing else ALLOW
        if isinstance(expr, Exclusion):
            base = self.rewrite(obj, type_name, relation, expr.base, subject, depth)
            if base.denied:
                return base
            return exclude(base, self.rewrite(obj, type_name, relation, expr.subtract, subject, depth))
        if isinstance(expr, Nil):
            return DENY
        raise TypeError(f"unknown rewrite {expr!r}")

    def direct(self, obj: str, type_name: str, relation: str, subject: Subject, depth: int) -> Outcome:
        acc = AnyOf()
        usersets: list[tuple[str, str, Outcome]] = []
        budget = self.budget
        for other, meta in self.reads.subjects(obj, relation):
            budget.left -= 1
            if budget.left < 0:
                budget.spend(0)  # raises QueryTooBroad
            if not self.valid(type_name, relation, other, meta):
                continue
            if other == subject.text or (
                    subject.relation is None and other.endswith(":*") and other[:-2] == subject.type):
                if meta is None or acc.add(self.condition(meta)):
                    return ALLOW
                continue
            s_obj, _, s_rel = other.partition("#")
            if s_rel:
                usersets.append((s_obj, s_rel, ALLOW if meta is None else self.condition(meta)))
        for s_obj, s_rel, cond in usersets:
            if cond.denied:
                continue
            o = self.check(s_obj, s_rel, subject, depth + 1)
            if acc.add(o if cond is ALLOW else both(cond, o)):
                return ALLOW
        return acc.result()

    def arrow(self, obj: str, type_name: str, expr: Arrow, subject: Subject, depth: int) -> Outcome:
        parents: list[tuple[str, Outcome]] = []
        for other, meta in self.reads.subjects(obj, expr.tupleset):
            self.budget.spend()
            if "#" in other or other.endswith(":*") or not self.valid(type_name, expr.tupleset, other, meta):
                continue
            if (other.partition(":")[0], expr.computed) not in self.p.nodes:
                continue
            parents.append((other, ALLOW if meta is None else self.condition(meta)))
        if expr.all:
            if not parents:
                return DENY
            missing: set[str] = set()
            for parent, cond in parents:
                o = both(cond, self.check(parent, expr.computed, subject, depth + 1))
                if o.denied:
                    return o
                missing |= o.missing
            return conditional(frozenset(missing)) if missing else ALLOW
        acc = AnyOf()
        for parent, cond in parents:
            if cond.denied:
                continue
            o = self.check(parent, expr.computed, subject, depth + 1)
            if acc.add(o if cond is ALLOW else both(cond, o)):
                return ALLOW
        return acc.result()
