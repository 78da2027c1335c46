"""Check, compiled: each (type, relation)'s rewrite turned into nested closures once per schema.

The interpreter (``check.Evaluation``) is the reference, and this is the same walk, step for
step: for each node the same depth check, step spent, identity rule, reachability prune and
cycle rule of its dialect; for each rewrite the same reads in the same order, the same tuple
filter, conditions evaluated in the same order, and the same short-circuits and deferral of
depth errors. What it saves is the interpreting: the dispatch on the rewrite's class at every
level, the per-node lookups of a node's rewrite, reach and tuple shapes (bound into each
closure here), the tuple-shape test of a tuple without meta (a set lookup of its kind), and
the accumulators a union allocates before it knows it needs one.

Only what a single check meets on its hot path is compiled; the rest is handed to the
interpreter over the same ``Evaluation``, so it runs as the reference does: a SpiceDB-dialect
walk that gets ``TRACK_FROM`` levels deep is asked again by the interpreter with its path
tracked (as ``Evaluation.ask`` does), and a tuple naming a relation the schema does not define
(``UnknownRelation``) is entered through ``Evaluation.check``. No memo: a single check runs
without one (``SchemaEngine.check``); lookups and ``check_relations`` use the interpreter and
its memo. ``tests/schema/engine/test_compiled.py`` holds compiled equal to interpreted over
random models of both dialects.
"""

from __future__ import annotations

from collections.abc import Callable

from tenantguard.schema.engine.check import Evaluation, Retrack, arrow_target
from tenantguard.schema.engine.errors import ResolutionTooComplex
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
from tenantguard.schema.engine.subjects import Subject
from tenantguard.schema.model import Arrow, Computed, Direct, Exclusion, Expr, Intersection, Nil, Union

Step = Callable[[Evaluation, str, Subject, int], Outcome]  # (evaluation, object, subject, depth)
ALLOWED = Decision.ALLOWED


def _too_deep(ev: Evaluation) -> ResolutionTooComplex:
    return ResolutionTooComplex(f"resolution deeper than {ev.max_depth} levels", limit=ev.max_depth)


class CompiledCheck:
    """One schema's check walk as closures: ``ask(ev, object, relation, subject)``."""

    def __init__(self, prepared: Prepared) -> None:
        self.p = prepared
        self.openfga = prepared.schema.dialect == "openfga"
        # type -> relation -> the node's entry; filled after every closure exists (they refer to each other)
        self.nodes: dict[str, dict[str, Step]] = {t: {} for t in prepared.schema.types}
        for (tname, rname), (rewrite, reach) in prepared.nodes.items():
            self.nodes[tname][rname] = self._node(tname, rname, rewrite, reach)

    def ask(self, ev: Evaluation, obj: str, relation: str, subject: Subject) -> Outcome:
        """``Evaluation.ask`` (a top-level question), compiled until a walk gets deep enough to need
        its path tracked; then the interpreter asks again, as it would have."""
        entry = self.nodes.get(obj.partition(":")[0], {}).get(relation)
        if entry is None or ev.memo is not None or ev.tracking:
            return ev.ask(obj, relation, subject)
        try:
            return entry(ev, obj, subject, 0)
        except Retrack:
            ev.tracking = True
            ev.entered.clear()
            return ev.check(obj, relation, subject, 0)

    def enter(self, ev: Evaluation, obj: str, relation: str, subject: Subject, depth: int) -> Outcome:
        """``Evaluation.check`` of a node known only when the walk reaches it (a userset subject, an
        arrow's target); one the schema does not define is the interpreter's to refuse."""
        entry = self.nodes.get(obj.partition(":")[0], {}).get(relation)
        if entry is None:
            return ev.check(obj, relation, subject, depth)
        return entry(ev, obj, subject, depth)

    # -- nodes -----------------------------------------------------------------------------

    def _node(self, tname: str, rname: str, rewrite: Expr, reach: frozenset[tuple[str, str | None]]) -> Step:
        body = self._expr(tname, rname, rewrite)
        if self.openfga:
            def node(ev: Evaluation, obj: str, subject: Subject, depth: int) -> Outcome:
                if depth >= ev.max_depth:
                    raise _too_deep(ev)
                budget = ev.budget
                budget.left -= 1
                if budget.left < 0:
                    budget.spend(0)  # raises QueryTooBroad
                if subject.relation == rname and subject.object == obj:
                    return ALLOW
                if subject.kind not in reach:
                    return DENY
                key = (obj, rname, subject.text)
                path = ev.path
                if key in path:
                    return DENY_CYCLE
                path.add(key)
                try:
                    return body(ev, obj, subject, depth)
                finally:
                    path.discard(key)
            return node

        def spicedb_node(ev: Evaluation, obj: str, subject: Subject, depth: int) -> Outcome:
            if depth >= ev.max_depth:
                raise _too_deep(ev)
            budget = ev.budget
            budget.left -= 1
            if budget.left < 0:
                budget.spend(0)  # raises QueryTooBroad
            if subject.relation == rname and subject.object == obj:
                return ALLOW
            if subject.kind not in reach:
                return DENY
            failed = ev.failed
            if failed:
                failed_at = failed.get((obj, rname, subject.text))
                if failed_at is not None and depth >= failed_at:
                    raise _too_deep(ev)
            if depth >= ev.track_from:  # ev.tracking is False here (ask hands a tracked walk over)
                raise Retrack
            cuts = ev.cuts
            try:
                return body(ev, obj, subject, depth)
            except ResolutionTooComplex:
                key = (obj, rname, subject.text)
                if ev.cuts == cuts and depth < failed.get(key, ev.max_depth):
                    failed[key] = depth
                raise
        return spicedb_node

    # -- rewrites --------------------------------------------------------------------------

    def _expr(self, tname: str, rname: str, expr: Expr) -> Step:
        kind = type(expr)
        if kind is Direct:
            return self._direct(tname, rname)
        if kind is Computed:
            return self._computed(tname, expr.relation)  # type: ignore[attr-defined]
        if kind is Arrow:
            return self._arrow(tname, expr)  # type: ignore[arg-type]
        if isinstance(expr, Union):
            return self._union([self._expr(tname, rname, c) for c in expr.children])
        if isinstance(expr, Intersection):
            return self._intersection([self._expr(tname, rname, c) for c in expr.children])
        if isinstance(expr, Exclusion):
            return self._exclusion(self._expr(tname, rname, expr.base), self._expr(tname, rname, expr.subtract))
        if isinstance(expr, Nil):
            return lambda ev, obj, subject, depth: DENY
        raise TypeError(f"unknown rewrite {expr!r}")

    def _computed(self, tname: str, relation: str) -> Step:
        relations = self.nodes[tname]  # filled by the time any query runs

        def computed(ev: Evaluation, obj: str, subject: Subject, depth: int) -> Outcome:
            entry = relations.get(relation)
            if entry is None:  # not defined for the type: the interpreter's UnknownRelation
                return ev.check(obj, relation, subject, depth + 1)
            return entry(ev, obj, subject, depth + 1)
        return computed

    def _union(self, children: list[Step]) -> Step:
        def union(ev: Evaluation, obj: str, subject: Subject, depth: int) -> Outcome:
            acc: AnyOf | None = None  # only a conditional or cycle-marked branch needs one
            error: ResolutionTooComplex | None = None
            for child in children:
                try:
                    o = child(ev, obj, subject, depth)
                except ResolutionTooComplex as e:
                    error = ev.defer(error, e)
                    continue
                if o.decision is ALLOWED:
                    return ALLOW
                if o is not DENY:
                    acc = acc or AnyOf()
                    acc.add(o)
            if error is not None:
                raise error
            return DENY if acc is None else acc.result()
        return union

    def _intersection(self, children: list[Step]) -> Step:
        def intersection(ev: Evaluation, obj: str, subject: Subject, depth: int) -> Outcome:
            missing: set[str] = set()
            error: ResolutionTooComplex | None = None
            for child in children:
                try:
                    o = child(ev, obj, subject, depth)
                except ResolutionTooComplex as e:
                    error = ev.defer(error, e)
                    continue
                if o.denied:
                    return o
                missing |= o.missing
            if error is not None:
                raise error
            return conditional(frozenset(missing)) if missing else ALLOW
        return intersection

    def _exclusion(self, base: Step, subtract: Step) -> Step:
        def exclusion(ev: Evaluation, obj: str, subject: Subject, depth: int) -> Outcome:
            b = base(ev, obj, subject, depth)
            if b.denied:
                return b
            return exclude(b, subtract(ev, obj, subject, depth))
        return exclusion

    def _direct(self, tname: str, rname: str) -> Step:
        """``Evaluation.direct``: the subject's own tuple and its type's wildcard by point reads, then
        the usersets, followed one level deeper."""
        kinds, follows = self.p.direct_shapes[(tname, rname)]
        accepts = self.p.accepts.get((tname, rname), frozenset())
        # the kinds a tuple without meta may have here (a kind whose restrictions all name a
        # condition admits only tuples that carry it): Evaluation.valid for meta None
        plain = frozenset((st, sr) for st, sr, cond in accepts if cond is None)
        enter = self.enter

        def direct(ev: Evaluation, obj: str, subject: Subject, depth: int) -> Outcome:
            acc: AnyOf | None = None
            reads, budget = ev.reads, ev.budget
            for named, kind in subject.grantees:
                if kind not in kinds:
                    continue  # no tuple of that shape can count here: nothing to read
                budget.spend()
                found = reads.find(obj, rname, named)
                if found is None:
                    continue
                meta = found[1]
                if meta is None:
                    own, _, srel = named.partition("#")
                    if (own.partition(":")[0], "*" if own.endswith(":*") else srel or None) in plain:
                        return ALLOW
                    continue
                if not ev.valid(tname, rname, named, meta):
                    continue
                acc = acc or AnyOf()
                if acc.add(ev.condition(meta)):
                    return ALLOW
            if not follows:
                return DENY if acc is None else acc.result()
            usersets: list[tuple[str, str, Outcome]] = []
            text = subject.text
            for other, meta in reads.usersets(obj, rname):
                budget.left -= 1
                if budget.left < 0:
                    budget.spend(0)  # raises QueryTooBroad
                if other == text:
                    continue  # the subject itself (a userset asked about) was read above
                s_obj, _, s_rel = other.partition("#")
                if meta is None:
                    stype = s_obj.partition(":")[0]
                    if (stype, "*" if s_obj.endswith(":*") else s_rel or None) not in plain:
                        continue
                    usersets.append((s_obj, s_rel, ALLOW))
                elif ev.valid(tname, rname, other, meta):
                    usersets.append((s_obj, s_rel, ev.condition(meta)))
            error: ResolutionTooComplex | None = None
            for s_obj, s_rel, cond in usersets:
                if cond.denied:
                    continue
                try:
                    o = enter(ev, s_obj, s_rel, subject, depth + 1)
                except ResolutionTooComplex as e:
                    error = ev.defer(error, e)
                    continue
                if o.decision is ALLOWED and cond is ALLOW:
                    return ALLOW
                acc = acc or AnyOf()
                if acc.add(o if cond is ALLOW else both(cond, o)):
                    return ALLOW
            if error is not None:
                raise error
            return DENY if acc is None else acc.result()
        return direct

    def _arrow(self, tname: str, expr: Arrow) -> Step:
        """``Evaluation.arrow``: each subject of the tupleset (a userset subject's object, SpiceDB),
        then ``computed`` on it one level deeper; ``.all`` asks every one."""
        tupleset, computed, every = expr.tupleset, expr.computed, expr.all
        accepts = self.p.accepts.get((tname, tupleset), frozenset())
        plain = frozenset((st, sr) for st, sr, cond in accepts if cond is None)
        nodes = self.nodes

        def arrow(ev: Evaluation, obj: str, subject: Subject, depth: int) -> Outcome:
            parents: list[tuple[Step, str, Outcome]] = []
            budget = ev.budget
            for other, meta in ev.reads.subjects(obj, tupleset):
                budget.left -= 1
                if budget.left < 0:
                    budget.spend(0)  # raises QueryTooBroad
                if other.endswith(":*"):
                    continue
                if meta is None:
                    target, _, s_rel = other.partition("#")
                    if (target.partition(":")[0], s_rel or None) not in plain:  # wildcards were skipped above
                        continue
                elif not ev.valid(tname, tupleset, other, meta):
                    continue
                else:
                    target = arrow_target(other)
                entry = nodes.get(target.partition(":")[0], {}).get(computed)
                if entry is None:
                    if every:
                        return DENY  # SpiceDB: a parent whose type lacks the relation has no members
                    continue
                parents.append((entry, target, ALLOW if meta is None else ev.condition(meta)))
            if every:
                if not parents:
                    return DENY
                missing: set[str] = set()
                error: ResolutionTooComplex | None = None
                for entry, parent, cond in parents:
                    try:
                        o = both(cond, entry(ev, parent, subject, depth + 1))
                    except ResolutionTooComplex as e:
                        error = ev.defer(error, e)
                        continue
                    if o.denied:
                        return o
                    missing |= o.missing
                if error is not None:
                    raise error
                return conditional(frozenset(missing)) if missing else ALLOW
            acc: AnyOf | None = None
            error = None
            for entry, parent, cond in parents:
                if cond.denied:
                    continue
                try:
                    o = entry(ev, parent, subject, depth + 1)
                except ResolutionTooComplex as e:
                    error = ev.defer(error, e)
                    continue
                if o.decision is ALLOWED and cond is ALLOW:
                    return ALLOW
                acc = acc or AnyOf()
                if acc.add(o if cond is ALLOW else both(cond, o)):
                    return ALLOW
            if error is not None:
                raise error
            return DENY if acc is None else acc.result()
        return arrow
