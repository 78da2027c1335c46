"""Lookups: the candidates a lookup proposes, each then decided by ``check``.

Lookup resources (OpenFGA ListObjects, SpiceDB LookupResources) walks up from the subject:
the tuples naming it (and ``type:*`` for a plain subject), the usersets it is in, the
relations computed from those, and the objects whose arrows point at them, following only
(type, relation) pairs that can reach the subject's kind (``Prepared.reach``). Lookup
subjects (ListUsers, LookupSubjects) walks down from the object the same way. The walks
over-approximate (an intersection or exclusion is walked like a union), and every candidate
of the asked type is decided by ``check``: a lookup can never disagree with check, which is
the consistency rule SpiceDB's test suite holds its engine to. Walks are breadth-first in
read order and deduplicated, so the candidate order is a function of the store (paging).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from tenantguard.relations.reads import TupleMeta
from tenantguard.schema.engine.check import Evaluation, arrow_target
from tenantguard.schema.engine.errors import ConditionError
from tenantguard.schema.engine.outcome import Decision
from tenantguard.schema.engine.prepared import walk
from tenantguard.schema.engine.subjects import Subject, split
from tenantguard.schema.model import Arrow, Computed, Direct


def resource_candidates(ev: Evaluation, object_type: str, relation: str | None, subject: Subject, *,
                        conditions: bool = False) -> Iterator[str]:
    """Objects of ``object_type`` that may have ``relation`` for ``subject``, each once;
    ``relation`` None: any relation of the type. The nodes visited do not depend on the
    target (only on what reaches the subject's kind), so one walk gives the union of every
    relation's walk, in one deterministic order.

    ``conditions`` (``relation`` given): OpenFGA's ListObjects walk, which reads only tuples
    on the relations ``relation`` can reach, evaluates each one's condition, follows those met
    and fails the query on one it cannot evaluate (openfga ``reverseexpand``; ``fga model
    test`` answers the error even where Check allows another way): a missing parameter
    raises ``ConditionError`` (rule ``missing_parameters``)."""
    p = ev.p
    kind = subject.kind
    below = _below(ev, object_type, relation) if conditions and relation is not None else None

    def followed(t: str, r: str, meta: TupleMeta | None) -> bool:
        return below is None or ((t, r) in below and _met(ev, meta))

    def target(type_name: str, rel: str) -> bool:
        return type_name == object_type and (relation is None or rel == relation)
    seen_nodes: set[tuple[str, str]] = set()  # (object, relation) reached
    emitted: set[str] = set()
    queue: deque[tuple[str, str]] = deque()

    def reached(obj: str, rel: str) -> Iterator[str]:
        if (obj, rel) in seen_nodes:
            return
        type_name = obj.partition(":")[0]
        if kind not in p.reach.get((type_name, rel), ()):
            return
        ev.budget.spend()
        seen_nodes.add((obj, rel))
        queue.append((obj, rel))
        if target(type_name, rel) and obj not in emitted:
            emitted.add(obj)
            yield obj

    def seed(text: str, sub_kind: tuple[str, str | None]) -> Iterator[str]:
        for t, r in p.direct_by_kind.get(sub_kind, ()):
            for obj, meta in ev.reads.objects(t, r, text):
                ev.budget.spend()
                if ev.valid(t, r, text, meta) and followed(t, r, meta):
                    yield from reached(obj, r)

    if subject.relation is not None:
        yield from reached(subject.object, subject.relation)
    yield from seed(subject.text, (subject.type, "*" if subject.wildcard else subject.relation))
    if subject.relation is None and not subject.wildcard:
        yield from seed(f"{subject.type}:*", (subject.type, "*"))
    while queue:
        obj, rel = queue.popleft()
        type_name = obj.partition(":")[0]
        # obj#rel as a userset subject of other tuples
        yield from seed(f"{obj}#{rel}", (type_name, rel))
        for other in p.computed_users.get((type_name, rel), ()):
            yield from reached(obj, other)
        for t, r, tupleset, via in p.arrow_users.get((type_name, rel), ()):
            named = obj if via is None else f"{obj}#{via}"
            for parent_obj, meta in ev.reads.objects(t, tupleset, named):
                ev.budget.spend()
                if ev.valid(t, tupleset, named, meta) and followed(t, r, meta):
                    yield from reached(parent_obj, r)


def subject_candidates(ev: Evaluation, obj: str, relation: str | None, subject_type: str,
                       subject_relation: str | None, *, conditions: bool = False) -> Iterator[str]:
    """Subjects of ``subject_type`` (``#subject_relation``) that may have ``relation`` on
    ``obj``, each once; ``type:*`` when a wildcard tuple may grant (plain subjects only).
    ``relation`` None: any relation of ``obj``'s type (one walk from all of them, in the
    type's sorted relation order: the union of every relation's walk).

    ``conditions``: OpenFGA's ListUsers walk, which evaluates the condition of every tuple it
    reads, follows only those met, and fails the whole query when one cannot be evaluated
    (openfga ``listusers`` ``expandDirect``/``expandTTU``), even where Check would have found
    another way: a missing parameter raises ``ConditionError`` (rule ``missing_parameters``)."""
    p = ev.p
    schema = ev.schema
    want = (subject_type, subject_relation)
    seen_nodes: set[tuple[str, str]] = set()
    emitted: set[str] = set()
    queue: deque[tuple[str, str]] = deque()

    def emit(text: str) -> Iterator[str]:
        if text not in emitted:
            emitted.add(text)
            yield text

    def reach(o: str, r: str) -> Iterator[str]:
        if (o, r) in seen_nodes:
            return
        t = o.partition(":")[0]
        if want not in p.reach.get((t, r), ()):
            return
        ev.budget.spend()
        seen_nodes.add((o, r))
        queue.append((o, r))
        if subject_relation is not None and (t, r) == want:
            yield from emit(f"{o}#{r}")

    starts = [relation] if relation is not None else sorted(schema.types[obj.partition(":")[0]].relations)
    for start in starts:
        yield from reach(obj, start)
    while queue:
        o, r = queue.popleft()
        t = o.partition(":")[0]
        rel = schema.relation(t, r)
        if rel is None:
            continue
        for e in walk(rel.rewrite):
            if isinstance(e, Direct):
                for other, meta in ev.reads.subjects(o, r):
                    ev.budget.spend()
                    if not ev.valid(t, r, other, meta) or (conditions and not _met(ev, meta)):
                        continue
                    s_obj, s_type, s_rel = split(other)
                    if s_rel is None:
                        if s_type == subject_type and subject_relation is None:
                            yield from emit(other)
                    else:
                        if (s_type, s_rel) == want:
                            yield from emit(other)
                        yield from reach(s_obj, s_rel)
            elif isinstance(e, Computed):
                yield from reach(o, e.relation)
            elif isinstance(e, Arrow):
                for other, meta in ev.reads.subjects(o, e.tupleset):
                    ev.budget.spend()
                    if other.endswith(":*") or not ev.valid(t, e.tupleset, other, meta):
                        continue
                    if conditions and not _met(ev, meta):
                        continue
                    target = arrow_target(other)
                    if schema.relation(target.partition(":")[0], e.computed) is not None:
                        yield from reach(target, e.computed)


def _below(ev: Evaluation, object_type: str, relation: str) -> set[tuple[str, str]]:
    """The (type, relation) pairs evaluating ``object_type#relation`` can read tuples of."""
    schema = ev.schema
    out: set[tuple[str, str]] = set()
    todo = [(object_type, relation)]
    while todo:
        node = todo.pop()
        rel = schema.relation(*node)
        if node in out or rel is None:
            continue
        out.add(node)
        for e in walk(rel.rewrite):
            if isinstance(e, Direct):
                todo += [(ref.type, ref.relation) for ref in rel.allowed if ref.relation]
            elif isinstance(e, Computed):
                todo.append((node[0], e.relation))
            elif isinstance(e, Arrow):
                tupleset = schema.relation(node[0], e.tupleset)
                todo += [(ref.type, e.computed) for ref in tupleset.allowed if not ref.wildcard] if tupleset else []
    return out


def _met(ev: Evaluation, meta: TupleMeta | None) -> bool:
    """Whether a tuple's condition holds under the query's context; one lacking parameters fails."""
    if meta is None or meta.condition is None:
        return True
    outcome = ev.condition(meta)
    if outcome.decision is Decision.CONDITIONAL:
        names = ", ".join(sorted(outcome.missing))
        raise ConditionError(f"condition {meta.condition!r} lacks context parameters: {names}",
                             rule="missing_parameters", condition=meta.condition, missing=sorted(outcome.missing))
    return outcome.allowed
