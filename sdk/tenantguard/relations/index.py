"""The sidecar's local, tenant-partitioned relationship index.

Layout per tenant partition (all strings interned, so an id held by many tuples is
stored once)::

    fwd     object -> relation -> members(subject)           check(), list()
    rev     subject -> object -> sorted tuple(relation)      relations_of()
    nested  object -> relation -> members(userset subject)   the usersets check() expands
    grouped object -> members(relation)                      which "object#relation" are subjects

``members`` is a tuple up to 8 items and a set beyond: most collections are tiny, a
tuple costs 40 + 8n bytes where an empty set already costs 216, and scanning 8 short
strings costs about what hashing one does. Relation tuples in ``rev`` are shared between
entries through a small per-index cache. This took a million tuples from 345 MB to
about 245 MB of process RSS (bench/bench_relations.py).

Concurrency: one writer, any number of lock-free readers. Every published state is
immutable. ``apply`` builds the next state by path copying (copy on first write, per
batch: the tenant map, then only the containers a change touches) and publishes it with
one reference assignment, which is atomic in CPython. A reader takes that reference once
per call, so it sees a whole batch or none of it, never blocks, and cannot hit "changed
size during iteration". The price is a copy of each touched container once per batch (a
hot 100,000-member group costs a few milliseconds per batch that changes it), paid by the
writer only; a lock serialises writers in case two threads call ``apply``. Any failure
before the reference is swapped leaves the index exactly as it was, so batches are
all-or-nothing by construction.

Every query takes the tenant first and works on that tenant's partition only; there is no
operation that spans tenants except the digest and the snapshot export.
"""

from __future__ import annotations

import builtins
import hashlib
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import ChangeBatchInvalid, SequenceGap
from .model import ChangeBatch, Relationship

MAX_DEPTH = 3
"""Userset hops followed: direct, via a group, and two more levels of nesting."""

_RELTUPLE_CACHE_LIMIT = 4096
_DIGEST_HEADER = b"tenantguard.relations.digest/1\n"

_SMALL = 8  # members kept as a tuple up to this many, as a set beyond

Members = tuple[str, ...] | set[str]
Fwd = dict[str, dict[str, Members]]
Rev = dict[str, dict[str, tuple[str, ...]]]


@dataclass(slots=True)
class _Partition:
    """One tenant's tuples. Never mutated once published."""

    fwd: Fwd = field(default_factory=dict)
    rev: Rev = field(default_factory=dict)
    nested: Fwd = field(default_factory=dict)
    grouped: dict[str, Members] = field(default_factory=dict)
    count: int = 0


@dataclass(frozen=True, slots=True)
class _State:
    tenants: dict[str, _Partition]
    seq: int
    count: int


_EMPTY = _State({}, 0, 0)


# --------------------------------------------------------------------------- reads


def _check(part: _Partition | None, obj: str, relation: str, subject: str) -> bool:
    """Breadth-first over usersets, so the depth bound means "shortest path <= MAX_DEPTH"."""
    if part is None:
        return False
    frontier = [(obj, relation)]
    seen = {(obj, relation)}
    for depth in range(MAX_DEPTH + 1):
        following: list[tuple[str, str]] = []
        for o, r in frontier:
            subjects = part.fwd.get(o, {}).get(r)
            if subjects is None:
                continue
            if subject in subjects:
                return True
            if depth < MAX_DEPTH:
                for userset in part.nested.get(o, {}).get(r, ()):
                    o2, _, r2 = userset.partition("#")
                    if (o2, r2) not in seen:
                        seen.add((o2, r2))
                        following.append((o2, r2))
        if not following:
            return False
        frontier = following
    return False


def _merge(acc: dict[str, tuple[str, ...]], held: dict[str, tuple[str, ...]]) -> None:
    for obj, rels in held.items():
        current = acc.get(obj)
        if current is None:
            acc[obj] = rels
        elif current is not rels and not set(rels) <= set(current):
            acc[obj] = tuple(sorted(set(current) | set(rels)))


def _relations_of(part: _Partition | None, subject: str) -> dict[str, builtins.list[str]]:
    """What ``subject`` holds, directly or through up to MAX_DEPTH userset hops."""
    if part is None:
        return {}
    direct = part.rev.get(subject)
    if not direct:
        return {}
    acc = dict(direct)
    frontier = [direct]
    seen = {subject}
    for _ in range(MAX_DEPTH):
        following = []
        for held in frontier:
            for obj, rels in held.items():
                usable = part.grouped.get(obj)
                if usable is None:
                    continue
                for rel in rels:
                    if rel not in usable:
                        continue
                    userset = f"{obj}#{rel}"
                    if userset not in seen:
                        seen.add(userset)
                        more = part.rev.get(userset)
                        if more:
                            following.append(more)
                            _merge(acc, more)
        if not following:
            break
        frontier = following
    return {obj: list(rels) for obj, rels in acc.items()}



class WalkTooBroad(Exception):
    """Internal: a walk visited more nodes than its budget; the caller raises its typed error."""

    def __init__(self, visited: int) -> None:
        self.visited = visited


def _objects_of(part: _Partition | None, subject: str, prefix: str, budget: int) -> Iterator[str]:
    """Objects named ``prefix...`` the subject holds any relation on: ``_relations_of``'s
    walk, lazily, in an order fixed by the (immutable) state, each object once."""
    if part is None:
        return
    direct = part.rev.get(subject)
    if not direct:
        return
    yielded: set[str] = set()
    seen = {subject}
    frontier = [direct]
    visited = 0
    for depth in range(MAX_DEPTH + 1):
        following = []
        for held in frontier:
            for obj, rels in held.items():
                visited += 1
                if visited > budget:
                    raise WalkTooBroad(visited)
                if obj.startswith(prefix) and obj not in yielded:
                    yielded.add(obj)
                    yield obj
                if depth == MAX_DEPTH:
                    continue
                usable = part.grouped.get(obj)
                if usable is None:
                    continue
                for rel in rels:
                    if rel in usable:
                        userset = f"{obj}#{rel}"
                        if userset not in seen:
                            seen.add(userset)
                            more = part.rev.get(userset)
                            if more:
                                following.append(more)
        if not following:
            return
        frontier = following


def _subjects_of(part: _Partition | None, obj: str, prefix: str, budget: int) -> Iterator[str]:
    """Direct subjects named ``prefix...`` holding any relation on ``obj``, usersets expanded
    as ``_check`` expands them (MAX_DEPTH hops), lazily, each subject once."""
    if part is None:
        return
    rels = part.fwd.get(obj)
    if not rels:
        return
    frontier = [(obj, r) for r in rels]
    seen = set(frontier)
    yielded: set[str] = set()
    visited = 0
    for depth in range(MAX_DEPTH + 1):
        following: list[tuple[str, str]] = []
        for o, r in frontier:
            for member in part.fwd.get(o, {}).get(r, ()):
                visited += 1
                if visited > budget:
                    raise WalkTooBroad(visited)
                if "#" in member:
                    if depth < MAX_DEPTH:
                        o2, _, r2 = member.partition("#")
                        if (o2, r2) not in seen:
                            seen.add((o2, r2))
                            following.append((o2, r2))
                elif member.startswith(prefix) and member not in yielded:
                    yielded.add(member)
                    yield member
        if not following:
            return
        frontier = following


def _scan(keys: Iterable[str], prefix: str, budget: int) -> Iterator[str]:
    """Every key named ``prefix...`` (no ``#``: usersets are not objects or subjects)."""
    for visited, key in enumerate(keys, 1):
        if visited > budget:
            raise WalkTooBroad(visited)
        if key.startswith(prefix) and "#" not in key:
            yield key


def _iter_partition(tenant: str, part: _Partition) -> Iterator[tuple[str, str, str, str]]:
    for obj in sorted(part.fwd):
        rels = part.fwd[obj]
        for rel in sorted(rels):
            for subject in sorted(rels[rel]):
                yield tenant, obj, rel, subject


# --------------------------------------------------------------------------- writes


class _PartitionWriter:
    """Copy-on-first-write editor of one partition inside one batch."""

    __slots__ = ("_fresh", "_owned", "_reltuples", "count", "fwd", "grouped", "nested", "rev")

    def __init__(self, old: _Partition | None, reltuples: dict[tuple[str, ...], tuple[str, ...]]):
        self._fresh = old is None  # a new partition owns every container it holds
        self._owned: dict[int, object] = {}  # id -> container, kept alive so ids stay unique
        self._reltuples = reltuples
        base = old or _Partition()
        self.fwd, self.rev = dict(base.fwd), dict(base.rev)
        self.nested, self.grouped = dict(base.nested), dict(base.grouped)
        self.count = base.count

    def _child(self, parent: dict[str, Any], key: str, factory: type) -> Any:
        """``parent[key]``, copied first unless this batch created it."""
        current = parent.get(key)
        if current is not None and (self._fresh or id(current) in self._owned):
            return current
        child = factory() if current is None else current.copy()
        if not self._fresh:
            self._owned[id(child)] = child
        parent[key] = child
        return child

    def _reltuple(self, rels: Iterable[str]) -> tuple[str, ...]:
        key = tuple(sorted(rels))
        shared = self._reltuples.get(key)
        if shared is None:
            if len(self._reltuples) >= _RELTUPLE_CACHE_LIMIT:
                self._reltuples.clear()  # only an optimisation; never grows without bound
            shared = self._reltuples[key] = key
        return shared

    def add(self, obj: str, rel: str, subject: str) -> bool:
        existing = self.fwd.get(obj, {}).get(rel)
        if existing is not None and subject in existing:
            return False
        self._add_member(self._child(self.fwd, obj, dict), rel, subject)
        held = self._child(self.rev, subject, dict)
        held[obj] = self._reltuple((*held.get(obj, ()), rel))
        if "#" in subject:
            self._add_member(self._child(self.nested, obj, dict), rel, subject)
            group, _, group_rel = subject.partition("#")
            self._add_member(self.grouped, group, group_rel)
        self.count += 1
        return True

    def remove(self, obj: str, rel: str, subject: str) -> bool:
        existing = self.fwd.get(obj, {}).get(rel)
        if existing is None or subject not in existing:
            return False
        self._discard(self.fwd, obj, rel, subject)
        held = self._child(self.rev, subject, dict)
        remaining = tuple(r for r in held[obj] if r != rel)
        if remaining:
            held[obj] = self._reltuple(remaining)
        else:
            del held[obj]
        if "#" in subject:
            self._discard(self.nested, obj, rel, subject)
        if not held:
            del self.rev[subject]
            if "#" in subject:
                group, _, group_rel = subject.partition("#")
                self._remove_member(self.grouped, group, group_rel)
        self.count -= 1
        return True

    def _add_member(self, parent: dict[str, Members], key: str, item: str) -> None:
        """Add to the members at ``parent[key]``: a new tuple while small, else an owned set."""
        current = parent.get(key)
        if current is None:
            parent[key] = (item,)
        elif item in current:
            return
        elif type(current) is tuple and len(current) < _SMALL:
            parent[key] = (*current, item)
        elif type(current) is tuple:
            grown = {*current, item}
            if not self._fresh:
                self._owned[id(grown)] = grown
            parent[key] = grown
        else:
            self._child(parent, key, set).add(item)

    def _remove_member(self, parent: dict[str, Members], key: str, item: str) -> None:
        """Remove from ``parent[key]``, dropping the key when empty; shrink back to a tuple."""
        current = parent[key]
        if type(current) is tuple:
            rest: Members = tuple(x for x in current if x != item)
        else:
            owned: set[str] = self._child(parent, key, set)
            owned.discard(item)
            rest = tuple(owned) if len(owned) <= _SMALL // 2 else owned
        if rest:
            parent[key] = rest
        else:
            del parent[key]

    def _discard(self, tree: Fwd, obj: str, rel: str, subject: str) -> None:
        rels = self._child(tree, obj, dict)
        self._remove_member(rels, rel, subject)
        if not rels:
            del tree[obj]

    def finish(self) -> _Partition:
        return _Partition(self.fwd, self.rev, self.nested, self.grouped, self.count)


class _Transaction:
    """The next state under construction; published only by :meth:`commit`."""

    def __init__(self, state: _State, reltuples: dict[tuple[str, ...], tuple[str, ...]]):
        self._state = state
        self._reltuples = reltuples
        self._writers: dict[str, _PartitionWriter] = {}

    def writer(self, tenant: str) -> _PartitionWriter:
        w = self._writers.get(tenant)
        if w is None:
            w = self._writers[tenant] = _PartitionWriter(
                self._state.tenants.get(tenant), self._reltuples
            )
        return w

    def write(self, tenant: str, obj: str, rel: str, subject: str) -> None:
        intern = sys.intern
        self.writer(intern(tenant)).add(intern(obj), intern(rel), intern(subject))

    def delete(self, tenant: str, obj: str, rel: str, subject: str) -> None:
        w = self._writers.get(tenant)
        if w is not None or tenant in self._state.tenants:
            self.writer(tenant).remove(obj, rel, subject)

    def commit(self, seq: int) -> _State:
        if not self._writers:
            return _State(self._state.tenants, seq, self._state.count)
        tenants = dict(self._state.tenants)
        count = self._state.count
        for tenant, w in self._writers.items():
            old = tenants.get(tenant)
            count += w.count - (old.count if old else 0)
            if w.count:
                tenants[tenant] = w.finish()
            else:
                tenants.pop(tenant, None)
        return _State(tenants, seq, count)


# --------------------------------------------------------------------------- public


class TenantRelations:
    """Reads bound to one tenant and one published state, e.g. for one decision.

    A policy builtin holding this object cannot reach another tenant, and every query it
    makes during a decision sees the same state.
    """

    __slots__ = ("_part", "seq", "tenant")

    def __init__(self, tenant: str, part: _Partition | None, seq: int) -> None:
        self.tenant = tenant
        self.seq = seq
        self._part = part

    def check(self, object: str, relation: str, subject: str) -> bool:
        return _check(self._part, object, relation, subject)

    def relations_of(self, subject: str) -> dict[str, builtins.list[str]]:
        return _relations_of(self._part, subject)

    # Candidate walks for search (tenantguard.search): lazy, in an order fixed by this
    # state, each item once; ``budget`` bounds the nodes visited (WalkTooBroad beyond).

    def objects_of(self, subject: str, object_type: str, budget: int) -> Iterator[str]:
        """Objects of ``object_type`` the subject holds any relation on, through usersets."""
        return _objects_of(self._part, subject, f"{object_type}:", budget)

    def subjects_of(self, object: str, subject_type: str, budget: int) -> Iterator[str]:
        """Direct subjects of ``subject_type`` holding any relation on ``object``, through usersets."""
        return _subjects_of(self._part, object, f"{subject_type}:", budget)

    def all_objects(self, object_type: str, budget: int) -> Iterator[str]:
        """Every object of ``object_type`` in this tenant's tuples."""
        return _scan(self._part.fwd if self._part else (), f"{object_type}:", budget)

    def all_subjects(self, subject_type: str, budget: int) -> Iterator[str]:
        """Every direct subject of ``subject_type`` in this tenant's tuples."""
        return _scan(self._part.rev if self._part else (), f"{subject_type}:", budget)

    def holds(self, object: str) -> bool:
        """Whether any tuple of this tenant names ``object`` as its object or its subject."""
        part = self._part
        return part is not None and (object in part.fwd or object in part.rev or object in part.grouped)


class IndexView:
    """One published state, immutable: what snapshots and digests are computed from."""

    __slots__ = ("__weakref__", "_state")

    def __init__(self, state: _State) -> None:
        self._state = state

    @property
    def seq(self) -> int:
        return self._state.seq

    @property
    def count(self) -> int:
        return self._state.count

    @property
    def applied_seq(self) -> int:
        """As ``RelationIndex.applied_seq``: a view is a relation source pinned to one state."""
        return self._state.seq

    def tenant(self, tenant: str) -> TenantRelations:
        """Reads bound to ``tenant`` in this state (what a pinned search decides on)."""
        return TenantRelations(tenant, self._state.tenants.get(tenant), self._state.seq)

    def tenants(self) -> builtins.list[str]:
        return sorted(self._state.tenants)

    def rows(self, tenant: str) -> Iterator[tuple[str, builtins.list[tuple[str, builtins.list[str]]]]]:
        """``(object, [(relation, sorted subjects), ...])`` in canonical order."""
        part = self._state.tenants.get(tenant)
        if part is None:
            return
        for obj in sorted(part.fwd):
            rels = part.fwd[obj]
            yield obj, [(rel, sorted(rels[rel])) for rel in sorted(rels)]

    def digest(self) -> str:
        """SHA-256 over ``seq`` and every tuple, one canonical line each, sorted."""
        h = hashlib.sha256(_DIGEST_HEADER)
        h.update(f"seq={self.seq}\ncount={self.count}\n".encode())
        for tenant in self.tenants():
            for obj, rels in self.rows(tenant):
                head = f"{tenant}/{obj}#"
                lines = [f"{head}{rel}@{s}\n" for rel, subjects in rels for s in subjects]
                h.update("".join(lines).encode())
        return h.hexdigest()


class RelationIndex:
    """Tenant-partitioned tuples with userset expansion; see the module docstring."""

    def __init__(self) -> None:
        self._state = _EMPTY
        self._write_lock = threading.Lock()
        self._reltuples: dict[tuple[str, ...], tuple[str, ...]] = {}

    @property
    def applied_seq(self) -> int:
        """The sequence of the last batch applied (the consistency token); 0 when empty."""
        return self._state.seq

    def apply(self, batch: ChangeBatch) -> bool:
        """Apply the next batch atomically; False for one already applied.

        Raises :class:`SequenceGap` when batches are missing in between.
        """
        with self._write_lock:
            state = self._state
            if batch.seq <= state.seq:
                return False
            if batch.seq != state.seq + 1:
                raise SequenceGap(expected=state.seq + 1, got=batch.seq)
            txn = _Transaction(state, self._reltuples)
            for i, change in enumerate(batch.changes):
                rel = change.rel
                if change.op == "write":
                    txn.write(rel.tenant, rel.object, rel.relation, rel.subject)
                elif change.op == "delete":
                    txn.delete(rel.tenant, rel.object, rel.relation, rel.subject)
                else:
                    raise ChangeBatchInvalid(f"changes[{i}]: unknown op {change.op!r}", index=i)
            self._state = txn.commit(batch.seq)
            return True

    @classmethod
    def from_trusted(
        cls, seq: int, tuples: Iterable[tuple[str, str, str, str]]
    ) -> RelationIndex:
        """Build an index at ``seq`` from ``(tenant, object, relation, subject)`` tuples in
        one pass, without per-batch copying. Nothing is validated here: the caller must
        have checked every part (the snapshot reader does), hence the name."""
        index = cls()
        txn = _Transaction(_EMPTY, index._reltuples)
        for tenant, obj, rel, subject in tuples:
            txn.write(tenant, obj, rel, subject)
        index._state = txn.commit(seq)
        return index

    def check(self, tenant: str, object: str, relation: str, subject: str) -> bool:
        """Does ``subject`` hold ``relation`` on ``object`` in ``tenant`` (usersets expanded)?

        Arguments are not validated on this hot path: only valid tuples can be stored, so
        a malformed string simply matches nothing.
        """
        return _check(self._state.tenants.get(tenant), object, relation, subject)

    def relations_of(self, tenant: str, subject: str) -> dict[str, builtins.list[str]]:
        """``object -> sorted relations`` the subject holds directly or via usersets.

        This is the policy's ``input.relations``; a fresh dict the caller may keep.
        """
        return _relations_of(self._state.tenants.get(tenant), subject)

    def tenant(self, tenant: str) -> TenantRelations:
        """Reads bound to ``tenant`` and to the state published right now."""
        state = self._state
        return TenantRelations(tenant, state.tenants.get(tenant), state.seq)

    def view(self) -> IndexView:
        """The current state, frozen (for snapshots, digests, exports)."""
        return IndexView(self._state)

    def count(self, tenant: str | None = None) -> int:
        """Tuples in the whole index, or in one tenant."""
        state = self._state
        if tenant is None:
            return state.count
        part = state.tenants.get(tenant)
        return part.count if part else 0

    def digest(self) -> str:
        """SHA-256 of the canonical state and sequence, to compare replicas."""
        return self.view().digest()

    def list(
        self,
        tenant: str,
        object: str | None = None,
        relation: str | None = None,
        subject: str | None = None,
    ) -> builtins.list[Relationship]:
        """Stored tuples of one tenant matching the given parts, sorted; no expansion."""
        part = self._state.tenants.get(tenant)
        if part is None:
            return []
        return [Relationship(*t) for t in sorted(_select(tenant, part, object, relation, subject))]


def _select(
    tenant: str, part: _Partition, obj: str | None, rel: str | None, subject: str | None
) -> Iterator[tuple[str, str, str, str]]:
    """Walk the forward or reverse map when an object or subject narrows the search."""
    if obj is not None:
        for r, subjects in part.fwd.get(obj, {}).items():
            if rel in (None, r):
                yield from ((tenant, obj, r, s) for s in subjects if subject in (None, s))
    elif subject is not None:
        for o, rels in part.rev.get(subject, {}).items():
            yield from ((tenant, o, r, subject) for r in rels if rel in (None, r))
    else:
        yield from (t for t in _iter_partition(tenant, part) if rel in (None, t[2]))
