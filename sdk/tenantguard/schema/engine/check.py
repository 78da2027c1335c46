"""Check: does ``subject`` have ``relation`` on ``object``? Depth-first over the rewrite tree.

Follows openfga ``internal/graph/check.go`` (``ResolveCheck``): every dispatch (computed
relation, arrow, userset tuple) goes one level deeper and fails with ``ResolutionTooComplex``
at the dialect's limit; ``object#rel`` asked about itself is allowed; in OpenFGA a node seen
again on the same path is a cycle (false, with the cycle bit), while SpiceDB has no cycle
detection and a cycle runs into its depth limit (an error). Tuples whose shape the relation no
longer accepts and expired tuples do not exist. Evaluation is sequential and short-circuits:
a union stops at the first allowed branch, an intersection at the first denied one.

A branch that runs into the depth limit does not decide alone (both originals evaluate branches
side by side): a union is still allowed by another branch, an intersection still denied by
another, and only when no other branch decides is the error raised.

SpiceDB's dialect gives the same answers as SpiceDB without walking its cycles to the depth
limit (which costs seconds of CPU on cyclic data): a node met again on its own path is cut at
once with the depth error its walk would end in. That never changes an answer. Errors are the
bottom of a flat order (error below every value) and every combinator is monotone in it (a
union is allowed by any allowed branch, an intersection denied by any denied one), so a node's
result only gains definiteness with more levels; the re-entered node sits k levels below
itself, and if the walk below it decided anything, the same walk from a shallower copy of the
cycle decided it without the re-entry, so the cut copy contributes nothing the top result
needs (Bekic's principle over a flat domain). ``tests/schema/engine/test_cycle_cut.py`` holds
cut equal to uncut over random cyclic models. Tracking the path costs ~15% of a check,
so a SpiceDB-dialect question is first walked untracked; only a walk that gets ``TRACK_FROM``
levels deep (where real hierarchies rarely go and cycles always do) is asked again from the top
with its path tracked (cutting any subset of re-entries gives the same answer, so it does not
matter where tracking starts). A node that failed at some depth *without* a cut
below it fails again at that depth or deeper from anywhere (fewer levels left, and cuts only
remove answers), so it is not walked again: without that, a chain through two parents per
level would be walked 2^depth times before failing.

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
from collections.abc import Callable, Mapping
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

TRACK_FROM = 12  # SpiceDB dialect: a walk this deep is asked again with its path tracked (cycles cut)
MEMO_MAX_TOUCHED = 64  # an entry touching more nodes than this is not kept (its set costs more than it saves)

Key = tuple[str, str, str]  # (object, relation, subject)


class Retrack(Exception):
    """A SpiceDB-dialect walk got ``TRACK_FROM`` levels deep untracked: ask again, tracking the path."""


class Memo(NamedTuple):
    outcome: Outcome
    height: int  # levels below the entry's own depth that its evaluation reached
    touched: frozenset[Key]  # every node it entered (OpenFGA: the cycle rule's inputs)


def arrow_target(subject: str) -> str:
    """The object an arrow walks to from a tupleset subject: a userset subject's object
    (SpiceDB: ``folder:f#parent`` on ``doc#folder`` makes ``folder->view`` ask ``folder:f``;
    its ``arrowoversametype`` and ``linuxfoundation`` suites hold that; OpenFGA refuses
    usersets on a tupleset, so its models never meet the case)."""
    return subject.partition("#")[0]


class Evaluation:
    """One query's state: reads, context, clock, budget, depth limit and the current path."""

    def __init__(self, prepared: Prepared, conditions: Mapping[str, CompiledCondition], reads: RelationReads, *,
                 context: Mapping[str, Any] | None, now: float | None, budget: Budget, max_depth: int,
                 max_context_items: int, memo: bool = True, cut_cycles: bool = True,
                 track_from: int = TRACK_FROM) -> None:
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
        self.deferred = 0  # depth errors a combinator has set aside so far (no memo entry spans one)
        self.failed: dict[Key, int] = {}  # SpiceDB dialect: node -> the smallest depth it failed at, no cut below
        self.cuts = 0  # SpiceDB dialect: re-entries cut so far (a failure after one is path-dependent)
        self.cut = cut_cycles  # False walks SpiceDB's cycles to the depth limit (the cut's reference)
        self.track_from = track_from if cut_cycles else max_depth  # untracked below this depth
        self.tracking = False  # SpiceDB dialect: the path is kept and re-entries cut (see ask)

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
    def ask(self, obj: str, relation: str, subject: Subject) -> Outcome:
        """A top-level question (see the module docstring on when the path is tracked)."""
        try:
            return self.check(obj, relation, subject, 0)
        except Retrack:
            self.tracking = True  # for the rest of this query too: it met a deep walk once
            self.entered.clear()
            return self.check(obj, relation, subject, 0)

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
        if not self.openfga:
            failed_at = self.failed.get(key)
            if failed_at is not None and depth >= failed_at:
                raise ResolutionTooComplex(f"resolution deeper than {self.max_depth} levels", limit=self.max_depth)
            if depth >= self.track_from and not self.tracking:
                raise Retrack
        if self.memo is None:  # evaluate(), inlined: this is the hot path of a single check
            if not self.openfga:
                return self.spicedb_rewrite(key, type_name, rewrite, subject, depth)
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
        start, deepest, deferred = len(self.entered), self.deepest, self.deferred
        self.deepest = depth
        try:
            outcome = self.evaluate(key, type_name, rewrite, subject, depth)
        finally:
            reached, self.deepest = self.deepest, max(deepest, self.deepest)
        if self.deferred == deferred and len(self.entered) - start <= MEMO_MAX_TOUCHED:
            seen = frozenset(self.entered[start:])
            if self.path.isdisjoint(seen):  # nothing it touched was cut by the path above it
                self.memo[key] = Memo(outcome, reached - depth, seen)
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
        return self.spicedb_rewrite(key, type_name, rewrite, subject, depth)

    def spicedb_rewrite(self, key: Key, type_name: str, rewrite: Expr, subject: Subject, depth: int) -> Outcome:
        """``key``'s rewrite under SpiceDB's rule: a re-entry on the path ends in the depth error
        (cut at once), and a failure with no cut below it is remembered with its depth."""
        if self.tracking:
            if key in self.path:
                self.cuts += 1
                raise ResolutionTooComplex(f"resolution deeper than {self.max_depth} levels", limit=self.max_depth)
            self.path.add(key)
        cuts = self.cuts
        try:
            return self.rewrite(key[0], type_name, key[1], rewrite, subject, depth)
        except ResolutionTooComplex:
            if self.cuts == cuts and depth < self.failed.get(key, self.max_depth):
                self.failed[key] = depth
            raise
        finally:
            if self.tracking:
                self.path.discard(key)

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
            error: ResolutionTooComplex | None = None
            for child in expr.children:
                try:
                    o = self.rewrite(obj, type_name, relation, child, subject, depth)
                except ResolutionTooComplex as e:
                    error = self.defer(error, e)
                    continue
                if o.decision is Decision.ALLOWED:
                    return ALLOW
                if o is not DENY:
                    acc = acc or AnyOf()
                    acc.add(o)
            if error is not None:
                raise error
            return DENY if acc is None else acc.result()
        if isinstance(expr, Intersection):
            return self.all_of([lambda c=child: self.rewrite(obj, type_name, relation, c, subject, depth)
                                for child in expr.children])
        if isinstance(expr, Exclusion):
            base = self.rewrite(obj, type_name, relation, expr.base, subject, depth)
            if base.denied:
                return base
            return exclude(base, self.rewrite(obj, type_name, relation, expr.subtract, subject, depth))
        if isinstance(expr, Nil):
            return DENY
        raise TypeError(f"unknown rewrite {expr!r}")

    def direct(self, obj: str, type_name: str, relation: str, subject: Subject, depth: int) -> Outcome:
        """The tuples written on ``obj#relation``: the subject's own and its type's wildcard by point
        reads (a relation may have thousands of subjects; a check never reads them all), then
        the usersets, followed one level deeper."""
        acc = AnyOf()
        reads, budget = self.reads, self.budget
        kinds, follows = self.p.direct_shapes[(type_name, relation)]
        for named, kind in subject.grantees:
            if kind not in kinds:
                continue  # no tuple of that shape can count here: nothing to read
            budget.spend()
            found = reads.find(obj, relation, named)
            if found is None or not self.valid(type_name, relation, named, found[1]):
                continue
            if found[1] is None or acc.add(self.condition(found[1])):
                return ALLOW
        usersets: list[tuple[str, str, Outcome]] = []
        for other, meta in reads.usersets(obj, relation) if follows else ():
            budget.left -= 1
            if budget.left < 0:
                budget.spend(0)  # raises QueryTooBroad
            if other == subject.text or not self.valid(type_name, relation, other, meta):
                continue  # the subject itself (a userset asked about) was read above
            s_obj, _, s_rel = other.partition("#")
            usersets.append((s_obj, s_rel, ALLOW if meta is None else self.condition(meta)))
        error: ResolutionTooComplex | None = None
        for s_obj, s_rel, cond in usersets:
            if cond.denied:
                continue
            try:
                o = self.check(s_obj, s_rel, subject, depth + 1)
            except ResolutionTooComplex as e:
                error = self.defer(error, e)
                continue
            if acc.add(o if cond is ALLOW else both(cond, o)):
                return ALLOW
        if error is not None:
            raise error
        return acc.result()

    def arrow(self, obj: str, type_name: str, expr: Arrow, subject: Subject, depth: int) -> Outcome:
        parents: list[tuple[str, Outcome]] = []
        for other, meta in self.reads.subjects(obj, expr.tupleset):
            self.budget.spend()
            if other.endswith(":*") or not self.valid(type_name, expr.tupleset, other, meta):
                continue
            target = arrow_target(other)
            if (target.partition(":")[0], expr.computed) not in self.p.nodes:
                continue
            parents.append((target, ALLOW if meta is None else self.condition(meta)))
        if expr.all:
            if not parents:
                return DENY
            return self.all_of([lambda p=parent, c=cond: both(c, self.check(p, expr.computed, subject, depth + 1))
                                for parent, cond in parents])
        acc = AnyOf()
        error: ResolutionTooComplex | None = None
        for parent, cond in parents:
            if cond.denied:
                continue
            try:
                o = self.check(parent, expr.computed, subject, depth + 1)
            except ResolutionTooComplex as e:
                error = self.defer(error, e)
                continue
            if acc.add(o if cond is ALLOW else both(cond, o)):
                return ALLOW
        if error is not None:
            raise error
        return acc.result()

    def all_of(self, branches: list[Callable[[], Outcome]]) -> Outcome:
        """An intersection: the first denied branch decides, even past a branch that failed."""
        missing: set[str] = set()
        error: ResolutionTooComplex | None = None
        for branch in branches:
            try:
                o = branch()
            except ResolutionTooComplex as e:
                error = self.defer(error, e)
                continue
            if o.denied:
                return o
            missing |= o.missing
        if error is not None:
            raise error
        return conditional(frozenset(missing)) if missing else ALLOW

    def defer(self, first: ResolutionTooComplex | None, error: ResolutionTooComplex) -> ResolutionTooComplex:
        """Sets a branch's depth error aside until the other branches have had their say."""
        self.deferred += 1
        return first or error
