"""The sidecar's local, tenant-partitioned relationship index.

Layout per tenant partition. Every string is numbered once per partition (``ids``:
str -> int, ``names``: int -> str; relation names apart in ``rel_ids``/``rels``), and a
tuple is two packed integers in two sorted key sets::

    fwd   pair << (W + 1) | userset flag << W | subject     check(), list(), rows(), walks
    rev   subject << (R + W) | pair                         relations_of(), objects_of()

where ``pair = object << R | relation``. Every query is a range of one key set; a pair's
userset subjects (``group:eng#member``) carry the flag, so they sort after its direct
subjects and check() finds the usersets to expand next to the key it just probed (no
third key set). ``pairs`` (userset id -> the pair it names) and ``usersets`` (the reverse)
link the two for the expansions. A key set is a B+-tree of one level: a tuple of sorted
chunks of at most ``2 * _CHUNK`` keys, each an ``array('Q')`` (8 bytes a key, no object
per key), and ``*_max``, the last key of each chunk, kept only when there are several.
R = 10 and W = 26 (1,024 relation names and 67M other strings per tenant) fit 64 bits; a
partition that outgrows them is repacked once into the wide layout (R = W = 32, lists of
ints: correct, not compact).

Why, measured (``python bench/bench_relations.py --against 02bebf0 --rounds 3``: 1,000,000
tuples, 10,000 tenants; the figures are in BENCHMARKS.md). The nested dicts of interned
strings this replaced took 247 MB of process RSS, ~22.5 KB a 100-tuple partition, most of
it one dict per subject and per object; this layout takes ~110 MB, ~9 KB a partition:
the ~52 strings themselves 3.8 KB (kept: every query and result is strings), their table
2.1 KB (a dict and a list), the two key sets 2.0 KB, the userset links 0.6 KB, relation
names and the partition 0.45 KB. Not taken, each measured on the same data:
- a dict keyed by packed (object, relation) with an ``array`` of members, and one per
  subject for the reverse: 10.2 KB a partition for those two maps alone (vs 2.1 KB).
- pyroaring ``FrozenBitMap64``: a membership probe was ~100 ns against ~260 ns for a bisect
  on a 100-key array, but one holds 2.2 KB for 100 such keys (the array 0.9 KB), a change
  copies the whole bitmap, and range scans leave C per key; not worth a dependency.
- ``map``/``zip`` pipelines for the few keys a query touches: setting them up cost more than
  the loop they replace (``list(map(and_, keys, repeat(m)))`` 507 ns vs a comprehension's
  375 ns for three keys), so the hot paths are plain loops; rows() and digest() decode a
  whole one-chunk partition that way instead.
numpy was not tried (not a dependency, a C call per probe like pyroaring's).

A bisect on an ``array`` costs about twice one on a list (263 vs 143 ns for 100 keys: each
probe builds an int), so check() and relations_of() make no helper call while a key set is
one chunk (most partitions), probe once for a direct tuple, tell from the key after a miss
when a pair has no usersets, and walk a pair's usersets instead of bisecting for their end.
With that, check() and relations_of() take what they took with the dicts (less where a
query reaches many partitions: fewer cache lines per partition); see BENCHMARKS.md.

String tables (and ``pairs``/``usersets``) are append-only and shared by every published
state of the partition: a writer only appends, so an id means the same string in every
state, a reader of an old state that meets a newer string finds no key with that id, and
no reader iterates a table (CPython makes each ``dict.get``/``list`` index atomic). Strings
whose tuples are gone stay until the partition is compacted: a writer counts the strings it
orphans (and those a failed batch left) and rebuilds the partition with fresh tables once
that count exceeds the live strings plus an eighth of the tuples, so garbage stays bounded
by the live size and each rebuild is paid for by at least ``count / 8`` orphanings.

Concurrency: one writer, any number of lock-free readers. Every published state is
immutable (apart from the append-only tables above). ``apply`` builds the next state by
path copying (copy on first write, per batch: the tenant map, a touched partition's
``*_max`` and chunk tuples, and only the chunks a change touches) and publishes it with one
reference assignment, which is atomic in CPython. A reader takes that reference once per
call, so it sees a whole batch or none of it, never blocks, and cannot hit "changed size
during iteration". A chunk is at most 2 * _CHUNK keys, so a hot group costs a copy of a
few KB per batch, not of the group; a lock serialises writers in case two threads call
``apply``. Any failure before the reference is swapped leaves the index as it was (at most
a few unused strings in a table), so batches are all-or-nothing.

Every query takes the tenant first and works on that tenant's partition only; there is no
operation that spans tenants except the digest and the snapshot export.

Tuples with meta (a condition or an expiry, :class:`~tenantguard.relations.reads.TupleMeta`)
are rare and never sit in the key sets: a partition's ``meta`` side table (None when it has
none, so plain tuples cost exactly what they did) holds them by string, forward and reverse.
That keeps them out of everything that cannot evaluate a condition or a clock, by
construction: ``check``, ``relations_of`` (the policy's relation builtins) and the search
walks only read the key sets, so a conditional or expiring tuple never grants there; only
the schema engine, through :class:`TenantRelations`' ``RelationReads`` (``subjects``,
``objects``), sees them with their meta. A tuple is in exactly one of the two places: a write
with meta moves it to the side table, a write without moves it back, a delete removes it
from either. Wildcard subjects (``user:*``) are plain strings here: group expansion matches
subjects as written, so only a schema gives a wildcard its "every user" meaning.

The cyclic collector: a partition is 7 tracked objects however many tuples it holds (the
partition, two lists, two chunk tuples and their arrays, which CPython 3.11 tracks; the
string and int dicts are untracked). That is not fewer than the dicts left once a
collection had untracked those holding only strings: with 1,000,000 tuples, 69,989
tracked objects here against 40,019, one full collection 98 against 144 ms (one sample on
a loaded machine). The sidecar freezes the heap after loads (``settle_heap``) either way.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import threading
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, MutableSequence, Sequence
from dataclasses import dataclass
from itertools import chain, islice, repeat
from operator import and_, rshift

from tenantguard.relations.errors import ChangeBatchInvalid, SequenceGap
from tenantguard.relations.model import ChangeBatch, Relationship, meta_to_wire
from tenantguard.relations.reads import Fact, TupleMeta

MAX_DEPTH = 3
"""Userset hops followed: direct, via a group, and two more levels of nesting."""

_DIGEST_HEADER = b"tenantguard.relations.digest/1\n"

_CHUNK = 512  # keys per chunk after a split; a chunk splits beyond 2 * _CHUNK
_NARROW = (10, 26)  # (relation bits, id bits): 10 + 2 * 26 + 1 (userset flag) <= 64, array('Q')
_WIDE = (32, 32)  # beyond that, plain lists of ints

Keys = Sequence[int]  # one sorted chunk: array('Q') (narrow) or list[int] (wide)
Chunks = tuple[Keys, ...]
_NO_CHUNKS: Chunks = ()
_NO_MAXES: Keys = ()
_ONE_CHUNK: Keys = ()  # the maxes of a one-chunk key set (not kept: readers never need them)
_EAGER = 32  # a forward range of at most this many keys is decoded at once (see _facts)
_NO_LINKS: dict[int, int] = {}  # a partition without usersets (never written to: replaced)


MetaFwd = dict[tuple[str, str], dict[str, TupleMeta]]  # (object, relation) -> subject -> meta
MetaRev = dict[str, dict[tuple[str, str], TupleMeta]]  # subject -> (object, relation) -> meta


@dataclass(frozen=True, slots=True)
class _MetaTable:
    """One tenant's tuples with meta, by string (never in the key sets); immutable once published."""

    fwd: MetaFwd
    rev: MetaRev
    count: int


@dataclass(frozen=True, slots=True)
class _Partition:
    """One tenant's tuples. Never mutated once published (its string tables only grow)."""

    ids: dict[str, int]  # shared, append-only: object and subject strings -> id
    names: builtins.list[str]  # shared, append-only: id -> string
    rel_ids: dict[str, int]  # shared, append-only: relation name -> id
    rels: builtins.list[str]
    rbits: int  # R
    w: int  # W
    sw: int  # W + 1: forward keys are pair << sw | userset flag << W | subject
    osh: int  # R + W + 1: the object's shift in forward keys
    rw: int  # R + W: reverse keys are subject << rw | pair
    fwd_max: Keys
    fwd: Chunks
    rev_max: Keys
    rev: Chunks
    pairs: dict[int, int]  # shared, append-only: userset id -> its (object, relation) pair
    usersets: dict[int, int]  # shared, append-only: pair -> the id of "object#relation"
    count: int
    names_len: int  # len(names) when published (a longer table means a failed batch left garbage)
    orphans: int  # estimate of the strings in the tables that no tuple uses any more
    meta: _MetaTable | None  # tuples with a condition or an expiry (counted in ``count``), None: none


@dataclass(frozen=True, slots=True)
class _State:
    tenants: dict[str, _Partition]
    seq: int
    count: int


_EMPTY = _State({}, 0, 0)


# --------------------------------------------------------------------------- key sets


def _has(maxes: Keys, chunks: Chunks, key: int) -> bool:
    if len(chunks) == 1:  # most partitions: skip the bisect over maxes
        chunk = chunks[0]
        i = bisect_left(chunk, key)
        return i < len(chunk) and chunk[i] == key
    i = bisect_left(maxes, key)
    if i == len(maxes):
        return False
    chunk = chunks[i]
    return chunk[bisect_left(chunk, key)] == key  # maxes[i] >= key: the index is in range


def _first(maxes: Keys, chunks: Chunks, lo: int) -> int | None:
    """The smallest key >= ``lo``."""
    if len(chunks) == 1:
        chunk = chunks[0]
        i = bisect_left(chunk, lo)
        return chunk[i] if i < len(chunk) else None
    i = bisect_left(maxes, lo)
    if i == len(maxes):
        return None
    chunk = chunks[i]
    return chunk[bisect_left(chunk, lo)]


def _any(maxes: Keys, chunks: Chunks, lo: int, hi: int) -> bool:
    first = _first(maxes, chunks, lo)
    return first is not None and first < hi


def _slice(maxes: Keys, chunks: Chunks, lo: int, hi: int) -> Sequence[int]:
    """Keys in ``[lo, hi)``, ascending, as one sequence (for ranges the caller uses whole)."""
    if len(chunks) == 1:
        chunk = chunks[0]
        start = bisect_left(chunk, lo)
        return chunk[start : bisect_left(chunk, hi, start)]
    i = bisect_left(maxes, lo)
    if i == len(maxes):
        return _NO_MAXES
    chunk = chunks[i]
    start = bisect_left(chunk, lo)
    if maxes[i] < hi and i + 1 < len(maxes):  # the range goes on in the next chunk
        return builtins.list(_between(maxes, chunks, lo, hi))
    return chunk[start : bisect_left(chunk, hi, start)]


def _between(maxes: Keys, chunks: Chunks, lo: int, hi: int) -> Iterator[int]:
    """Keys in ``[lo, hi)``, ascending, lazily (for walks that may stop early)."""
    if len(chunks) == 1:
        chunk = chunks[0]
        for key in islice(chunk, bisect_left(chunk, lo), None):
            if key >= hi:
                return
            yield key
        return
    i = bisect_left(maxes, lo)
    n = len(maxes)
    if i == n:
        return
    chunk = chunks[i]
    start = bisect_left(chunk, lo)
    while True:
        for key in islice(chunk, start, None):
            if key >= hi:
                return
            yield key
        i += 1
        if i == n:
            return
        chunk, start = chunks[i], 0


def _prefixes(maxes: Keys, chunks: Chunks, shift: int) -> Iterator[int]:
    """The distinct ``key >> shift``, ascending, two bisects each however many keys share one."""
    lo = 0
    while (key := _first(maxes, chunks, lo)) is not None:
        prefix = key >> shift
        yield prefix
        lo = (prefix + 1) << shift


# --------------------------------------------------------------------------- reads


def _check(part: _Partition | None, obj: str, relation: str, subject: str) -> bool:
    """Breadth-first over usersets, so the depth bound means "shortest path <= MAX_DEPTH".

    The hot path makes no helper call while the key set is one chunk (most partitions):
    a bisect on an ``array`` costs twice what one on a list does, so every probe saved
    counts. A pair's userset subjects sort last in its range (their flag bit), so the key
    after a missed probe often shows there are none, and no second probe is needed."""
    if part is None:
        return False
    ids = part.ids
    o, s, r = ids.get(obj), ids.get(subject), part.rel_ids.get(relation)
    if o is None or s is None or r is None:
        return False
    sw, fwd = part.sw, part.fwd
    userset = "#" in subject
    if userset:
        s |= 1 << part.w
    pair = o << part.rbits | r
    lo = pair << sw
    key = lo | s
    if len(fwd) != 1:
        return _has(part.fwd_max, fwd, key) or _check_usersets(part, {pair}, [pair], s, MAX_DEPTH)
    chunk = fwd[0]
    n = len(chunk)
    i = bisect_left(chunk, key)
    if i < n:
        after = chunk[i]
        if after == key:
            return True
        if after >= lo + (1 << sw) and not userset:  # the pair has no more keys: no usersets
            return False
    elif not userset:
        return False
    # The first hop inline (the common nested case): walk the pair's usersets, probe each.
    flag = 1 << part.w
    i = bisect_left(chunk, lo | flag, 0 if userset else i)
    hi, pairs, mask = lo + (1 << sw), part.pairs, flag - 1
    hop = []
    while i < n and (found := chunk[i]) < hi:
        nxt = pairs[found & mask]
        key = nxt << sw | s
        j = bisect_left(chunk, key)
        if j < n and chunk[j] == key:
            return True
        hop.append(nxt)
        i += 1
    return bool(hop) and _check_usersets(part, {pair, *hop}, hop, s, MAX_DEPTH - 1)


def _check_usersets(part: _Partition, seen: set[int], frontier: builtins.list[int], s: int, hops: int) -> bool:
    """``_check`` past what was probed: ``hops`` more userset hops from ``frontier``."""
    sw, fwd, pairs = part.sw, part.fwd, part.pairs
    flag = 1 << part.w
    mask, span = flag - 1, 1 << sw
    single = fwd[0] if len(fwd) == 1 else None
    for _ in range(hops):  # hop n's pairs were probed; find and probe hop n + 1's
        following: list[int] = []
        for pair in frontier:
            lo = pair << sw
            if single is None:
                usersets: Sequence[int] = _slice(part.fwd_max, fwd, lo | flag, lo + span)
            else:  # a pair has few usersets: walk them rather than bisect for the end
                i, hi, n = bisect_left(single, lo | flag), lo + span, len(single)
                usersets = []
                while i < n and (found := single[i]) < hi:
                    usersets.append(found)
                    i += 1
            for found in usersets:
                nxt = pairs[found & mask]
                if nxt in seen:
                    continue
                seen.add(nxt)
                key = nxt << sw | s
                if single is None:
                    if _has(part.fwd_max, fwd, key):
                        return True
                else:
                    i = bisect_left(single, key)
                    if i < len(single) and single[i] == key:
                        return True
                following.append(nxt)
        if not following:
            return False
        frontier = following
    return False


def _held(part: _Partition, subject_id: int) -> builtins.list[int]:
    """The ``pair``s the subject holds directly (its reverse keys, subject stripped)."""
    rw = part.rw
    lo = subject_id << rw
    return [key - lo for key in _slice(part.rev_max, part.rev, lo, lo + (1 << rw))]


def _relations_of(part: _Partition | None, subject: str) -> dict[str, builtins.list[str]]:
    """What ``subject`` holds, directly or through up to MAX_DEPTH userset hops.

    Each (object, relation) is decoded once, straight into the result, which doubles as
    the "already reached" set (plain loops: for the few pairs a subject holds, ``map``
    and ``zip`` pipelines cost more to set up than they save)."""
    if part is None:
        return {}
    s = part.ids.get(subject)
    if s is None:
        return {}
    rw, rev = part.rw, part.rev
    lo = s << rw
    keys = _slice(part.rev_max, rev, lo, lo + (1 << rw))
    if not keys:
        return {}
    names, rels, rbits, usersets = part.names, part.rels, part.rbits, part.usersets
    rmask = (1 << rbits) - 1
    out: dict[str, builtins.list[str]] = {}
    frontier: builtins.list[int] = []
    for key in keys:
        pair = key - lo
        obj, rel = names[pair >> rbits], rels[pair & rmask]
        held = out.get(obj)
        if held is None:
            out[obj] = [rel]
        else:
            held.append(rel)
            held.sort()
        if usersets and (userset := usersets.get(pair)) is not None:
            frontier.append(userset)
    for _ in range(MAX_DEPTH):  # each pair is reached once, so each userset is expanded once
        if not frontier:
            break
        following: list[int] = []
        for userset in frontier:
            if userset == s:
                continue
            lo = userset << rw
            for key in _slice(part.rev_max, rev, lo, lo + (1 << rw)):
                pair = key - lo
                obj, rel = names[pair >> rbits], rels[pair & rmask]
                held = out.get(obj)
                if held is None:
                    out[obj] = [rel]
                elif rel in held:
                    continue
                else:
                    held.append(rel)
                    held.sort()
                if (nxt := usersets.get(pair)) is not None:
                    following.append(nxt)
        frontier = following
    return out


class WalkTooBroad(Exception):
    """Internal: a walk visited more nodes than its budget; the caller raises its typed error."""

    def __init__(self, visited: int) -> None:
        self.visited = visited


def _by_object(part: _Partition, pairs: Sequence[int]) -> Iterator[tuple[int, builtins.list[int]]]:
    """``(object id, [relation ids])`` from pairs sorted by object."""
    rbits, mask = part.rbits, (1 << part.rbits) - 1
    current, rels = -1, builtins.list[int]()
    for pair in pairs:
        o = pair >> rbits
        if o != current:
            if rels:
                yield current, rels
            current, rels = o, []
        rels.append(pair & mask)
    if rels:
        yield current, rels


def _objects_of(part: _Partition | None, subject: str, prefix: str, budget: int) -> Iterator[str]:
    """Objects named ``prefix...`` the subject holds any relation on: ``_relations_of``'s
    walk, lazily, in an order fixed by the (immutable) state, each object once."""
    if part is None:
        return
    s = part.ids.get(subject)
    if s is None:
        return
    direct = _held(part, s)
    if not direct:
        return
    names, rbits = part.names, part.rbits
    yielded: set[int] = set()
    seen = {s}
    frontier = [direct]
    visited = 0
    for depth in range(MAX_DEPTH + 1):
        following = []
        for held in frontier:
            for o, rels in _by_object(part, held):
                visited += 1
                if visited > budget:
                    raise WalkTooBroad(visited)
                if o not in yielded and names[o].startswith(prefix):
                    yielded.add(o)
                    yield names[o]
                if depth == MAX_DEPTH or not part.usersets:
                    continue
                for r in rels:
                    userset = part.usersets.get(o << rbits | r)
                    if userset is not None and userset not in seen:
                        seen.add(userset)
                        more = _held(part, userset)
                        if more:
                            following.append(more)
        if not following:
            return
        frontier = following


def _subjects_of(part: _Partition | None, obj: str, prefix: str, budget: int,
                 relation: str | None = None) -> Iterator[str]:
    """Direct subjects named ``prefix...`` holding any relation (or ``relation``) on ``obj``,
    usersets expanded as ``_check`` expands them (MAX_DEPTH hops), lazily, each subject once."""
    if part is None:
        return
    o = part.ids.get(obj)
    if o is None:
        return
    w, sw, rbits = part.w, part.sw, part.rbits
    fwd_max, fwd, names = part.fwd_max, part.fwd, part.names
    if relation is None:
        frontier = [o << rbits | r for r in _prefixes_between(part, o)]
    else:
        r = part.rel_ids.get(relation)
        if r is None:
            return
        frontier = [o << rbits | r]
    seen = set(frontier)
    yielded: set[int] = set()
    visited = 0
    mask = (1 << w) - 1
    for depth in range(MAX_DEPTH + 1):
        following: list[int] = []
        for pair in frontier:
            lo = pair << sw
            for key in _between(fwd_max, fwd, lo, lo + (1 << sw)):
                visited += 1
                if visited > budget:
                    raise WalkTooBroad(visited)
                s = key & mask
                member = names[s]
                if "#" in member:
                    if depth < MAX_DEPTH:
                        nxt = part.pairs[s]
                        if nxt not in seen:
                            seen.add(nxt)
                            following.append(nxt)
                elif s not in yielded and member.startswith(prefix):
                    yielded.add(s)
                    yield member
        if not following:
            return
        frontier = following


def _prefixes_between(part: _Partition, o: int) -> builtins.list[int]:
    """The relation ids ``o`` has forward keys under."""
    sw, mask = part.sw, (1 << part.rbits) - 1
    out = []
    lo, hi = o << part.osh, (o + 1) << part.osh
    while (key := _first(part.fwd_max, part.fwd, lo)) is not None and key < hi:
        out.append((key >> sw) & mask)
        lo = ((key >> sw) + 1) << sw
    return out


def _scan(part: _Partition | None, forward: bool, prefix: str, budget: int) -> Iterator[str]:
    """Every object (``forward``) or subject named ``prefix...`` (no ``#``: usersets are not
    objects or subjects)."""
    if part is None:
        return
    maxes, chunks, shift = (part.fwd_max, part.fwd, part.osh) if forward else (part.rev_max, part.rev, part.rw)
    names = part.names
    for visited, i in enumerate(_prefixes(maxes, chunks, shift), 1):
        if visited > budget:
            raise WalkTooBroad(visited)
        key = names[i]
        if key.startswith(prefix) and "#" not in key:
            yield key


def _decoded(part: _Partition) -> Iterator[tuple[str, str, str]]:
    """``(object, relation, subject)`` of a one-chunk partition, in key order, decoded in C."""
    chunk, names, rels = part.fwd[0], part.names.__getitem__, part.rels.__getitem__
    return zip(
        map(names, map(rshift, chunk, repeat(part.osh))),
        map(rels, map(and_, map(rshift, chunk, repeat(part.sw)), repeat((1 << part.rbits) - 1))),
        map(names, map(and_, chunk, repeat((1 << part.w) - 1))),
        strict=True,
    )


def _object_rows(part: _Partition) -> Iterator[tuple[str, builtins.list[tuple[str, builtins.list[str]]]]]:
    """``(object, [(relation, sorted subjects), ...])`` in canonical (string) order.

    One object at a time (a snapshot of a huge tenant never sits decoded in memory whole);
    a (object, relation)'s keys are one run, decoded by ``map`` in C."""
    names, rels, sw, osh = part.names, part.rels, part.sw, part.osh
    wmask, rmask = (1 << part.w) - 1, (1 << part.rbits) - 1
    name = names.__getitem__
    if len(part.fwd) == 1:  # a small partition: decode it in one pass
        rows: dict[str, dict[str, builtins.list[str]]] = {}
        for obj, rel, subject in _decoded(part):
            by_rel = rows.get(obj)
            if by_rel is None:
                rows[obj] = {rel: [subject]}
            elif (subjects := by_rel.get(rel)) is None:
                by_rel[rel] = [subject]
            else:
                subjects.append(subject)
        for obj in sorted(rows):
            by_rel = rows[obj]
            yield obj, [(rel, sorted(by_rel[rel])) for rel in sorted(by_rel)]
        return
    for o in sorted(_prefixes(part.fwd_max, part.fwd, osh), key=name):
        lo = o << osh
        keys = _slice(part.fwd_max, part.fwd, lo, lo + (1 << osh))
        row = []
        start, n = 0, len(keys)
        while start < n:
            pair = keys[start] >> sw
            end = bisect_left(keys, (pair + 1) << sw, start)
            row.append((rels[pair & rmask], sorted(map(name, map(and_, keys[start:end], repeat(wmask))))))
            start = end
        row.sort()
        yield names[o], row


def _iter_partition(tenant: str, part: _Partition) -> Iterator[tuple[str, str, str, str]]:
    for obj, rels in _object_rows(part):
        for rel, subjects in rels:
            for subject in subjects:
                yield tenant, obj, rel, subject


# --------------------------------------------------------------------------- writes


def _factory(rbits: int, w: int) -> Callable[[Iterable[int]], MutableSequence[int]]:
    return (lambda keys: array("Q", keys)) if rbits + 2 * w + 1 <= 64 else builtins.list


class _KeySet:
    """Copy-on-first-write editor of one published key set, inside one batch."""

    __slots__ = ("_new", "_owned", "_source", "chunks", "maxes")

    def __init__(self, maxes: Keys, chunks: Chunks, new: Callable[[Iterable[int]], MutableSequence[int]],
                 fresh: bool) -> None:
        self._source = (maxes, chunks)
        self.maxes: MutableSequence[int] | Keys = new([chunks[0][-1]]) if len(chunks) == 1 else maxes
        self.chunks: builtins.list[MutableSequence[int]] | Chunks = chunks
        self._new = new
        # None: every chunk here was made in this batch (a partition the batch created)
        self._owned: dict[int, object] | None = None if fresh else {}

    def _edit(self) -> tuple[MutableSequence[int], builtins.list[MutableSequence[int]]]:
        if type(self.chunks) is tuple:  # first edit: copy the published maxes and chunk tuple
            self.maxes = self._new(self.maxes)
            self.chunks = builtins.list(self.chunks)  # type: ignore[arg-type]
        return self.maxes, self.chunks  # type: ignore[return-value]

    def _own(self, chunks: builtins.list[MutableSequence[int]], i: int) -> MutableSequence[int]:
        chunk = chunks[i]
        owned = self._owned
        if owned is None or id(chunk) in owned:
            return chunk
        chunk = chunks[i] = chunk[:]
        owned[id(chunk)] = chunk
        return chunk

    def _made(self, keys: Iterable[int]) -> MutableSequence[int]:
        chunk = self._new(keys)
        if self._owned is not None:
            self._owned[id(chunk)] = chunk
        return chunk

    def add(self, key: int) -> bool:
        maxes, chunks = self.maxes, self.chunks
        i = bisect_left(maxes, key)
        if i < len(maxes):
            chunk = chunks[i]
            j = bisect_left(chunk, key)
            if chunk[j] == key:
                return False
        elif not maxes:
            maxes, chunks = self._edit()
            maxes.append(key)
            chunks.append(self._made((key,)))
            return True
        else:
            i -= 1
            j = len(chunks[i])
        maxes, chunks = self._edit()
        chunk = self._own(chunks, i)
        chunk.insert(j, key)
        if j == len(chunk) - 1:
            maxes[i] = key
        if len(chunk) > 2 * _CHUNK:
            half = len(chunk) // 2
            low, high = self._made(chunk[:half]), self._made(chunk[half:])
            chunks[i : i + 1] = [low, high]
            maxes[i : i + 1] = self._new((low[-1], high[-1]))
        return True

    def discard(self, key: int) -> bool:
        maxes = self.maxes
        i = bisect_left(maxes, key)
        if i == len(maxes):
            return False
        chunk = self.chunks[i]
        j = bisect_left(chunk, key)
        if chunk[j] != key:
            return False
        maxes, chunks = self._edit()
        if len(chunk) == 1:
            del chunks[i]
            del maxes[i]
            return True
        chunk = self._own(chunks, i)
        del chunk[j]
        maxes[i] = chunk[-1]
        if len(chunk) <= _CHUNK // 4 and i + 1 < len(chunks) and len(chunk) + len(chunks[i + 1]) <= _CHUNK:
            merged = self._made([*chunk, *chunks[i + 1]])
            chunks[i : i + 2] = [merged]
            maxes[i : i + 2] = self._new((merged[-1],))
        return True

    def any(self, lo: int, hi: int) -> bool:
        return _any(self.maxes, self.chunks, lo, hi)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[int]:
        for chunk in self.chunks:
            yield from chunk

    def frozen(self) -> tuple[Keys, Chunks]:
        if type(self.chunks) is tuple:
            return self._source
        return _ONE_CHUNK if len(self.chunks) == 1 else self.maxes, tuple(self.chunks)


class _PartitionWriter:
    """Copy-on-first-write editor of one partition inside one batch."""

    __slots__ = ("_meta_owned", "count", "fwd", "ids", "meta", "meta_fwd", "meta_rev", "names", "orphans", "osh",
                 "pairs", "rbits", "rel_ids", "rels", "rev", "rw", "sw", "usersets", "w")

    def __init__(self, old: _Partition | None, layout: tuple[int, int] | None = None) -> None:
        if old is None:
            self.ids: dict[str, int] = {}
            self.names: builtins.list[str] = []
            self.rel_ids: dict[str, int] = {}
            self.rels: builtins.list[str] = []
            self.pairs = self.usersets = _NO_LINKS
            self.count = self.orphans = 0
            self.meta: _MetaTable | None = None
            self._meta_owned: dict[int, object] | None = None
            rbits, w = layout or _NARROW
            self._layout(rbits, w)
            new = _factory(rbits, w)
            self.fwd, self.rev = (_KeySet(_NO_MAXES, _NO_CHUNKS, new, True) for _ in range(2))
            return
        self.ids, self.names, self.rel_ids, self.rels = old.ids, old.names, old.rel_ids, old.rels
        self.pairs, self.usersets = old.pairs, old.usersets
        self.count = old.count
        self.meta, self._meta_owned = old.meta, None
        self.orphans = old.orphans + len(old.names) - old.names_len  # a failed batch's strings
        self._layout(old.rbits, old.w)
        new = _factory(old.rbits, old.w)
        self.fwd = _KeySet(old.fwd_max, old.fwd, new, False)
        self.rev = _KeySet(old.rev_max, old.rev, new, False)

    def _layout(self, rbits: int, w: int) -> None:
        self.rbits, self.w, self.sw, self.osh, self.rw = rbits, w, w + 1, rbits + w + 1, rbits + w

    def _id(self, name: str) -> int:
        i = self.ids.get(name)
        if i is None:
            i = len(self.names)
            if i >> self.w:
                self._widen()
            self.names.append(name)
            self.ids[name] = i
        return i

    def _rel_id(self, rel: str) -> int:
        r = self.rel_ids.get(rel)
        if r is None:
            r = len(self.rels)
            if r >> self.rbits:
                self._widen()
            self.rels.append(rel)
            self.rel_ids[rel] = r
        return r

    def _widen(self) -> None:
        """Repack every key into the wide layout (same order, wider fields)."""
        if (self.rbits, self.w) == _WIDE:
            raise OverflowError("more than 2**32 strings in one tenant")
        rbits, w = _WIDE
        old_r, old_w = self.rbits, self.w
        rmask, wmask = (1 << old_r) - 1, (1 << old_w) - 1

        def fwd_key(k: int) -> int:  # object, relation, flag, subject
            o, r, flag = k >> (old_r + old_w + 1), (k >> (old_w + 1)) & rmask, (k >> old_w) & 1
            return ((o << rbits | r) << 1 | flag) << w | k & wmask

        def rev_key(k: int) -> int:
            return (k >> (old_r + old_w)) << (rbits + w) | ((k >> old_r) & wmask) << rbits | k & rmask

        new = _factory(rbits, w)
        for name, repack in (("fwd", fwd_key), ("rev", rev_key)):
            chunks = [new(map(repack, chunk)) for chunk in getattr(self, name).chunks]
            setattr(self, name, _KeySet(new([c[-1] for c in chunks]), tuple(chunks), new, True))
        if self.pairs:  # new tables: the old ones still serve the published (narrow) states
            self.pairs = {us: (p >> old_r) << rbits | p & rmask for us, p in self.pairs.items()}
            self.usersets = {p: us for us, p in self.pairs.items()}
        self._layout(rbits, w)

    def _link(self, userset: int, pair: int) -> None:
        if self.pairs is _NO_LINKS:
            self.pairs, self.usersets = {}, {}
        self.pairs[userset] = pair
        self.usersets[pair] = userset

    # Meta side table: copied on first write in a batch (the outer maps), an inner map on first
    # touch; ``_meta_owned`` is None until this batch has copied the outer maps.

    def _meta_maps(self) -> tuple[MetaFwd, MetaRev]:
        if self._meta_owned is None:
            self._meta_owned = {}
            if self.meta is None:
                self.meta_fwd: MetaFwd = {}
                self.meta_rev: MetaRev = {}
            else:
                self.meta_fwd, self.meta_rev = dict(self.meta.fwd), dict(self.meta.rev)
        return self.meta_fwd, self.meta_rev

    def _inner(self, outer: dict, key: object) -> dict:  # type: ignore[type-arg]
        owned = self._meta_owned
        assert owned is not None
        inner = outer.get(key)
        if inner is None or id(inner) not in owned:
            inner = outer[key] = {} if inner is None else dict(inner)
            owned[id(inner)] = inner
        return inner

    def _meta_put(self, obj: str, rel: str, subject: str, meta: TupleMeta) -> bool:
        fwd, rev = self._meta_maps()
        by_subject = self._inner(fwd, (obj, rel))
        new = subject not in by_subject
        by_subject[subject] = meta
        self._inner(rev, subject)[(obj, rel)] = meta
        return new

    def _meta_drop(self, obj: str, rel: str, subject: str) -> bool:
        if self._meta_owned is None:
            if self.meta is None or subject not in self.meta.fwd.get((obj, rel), ()):
                return False
        elif subject not in self.meta_fwd.get((obj, rel), ()):
            return False
        fwd, rev = self._meta_maps()
        by_subject = self._inner(fwd, (obj, rel))
        del by_subject[subject]
        if not by_subject:
            del fwd[(obj, rel)]
        by_pair = self._inner(rev, subject)
        del by_pair[(obj, rel)]
        if not by_pair:
            del rev[subject]
        return True

    def _meta_table(self) -> _MetaTable | None:
        if self._meta_owned is None:
            return self.meta
        if not self.meta_fwd:
            return None
        return _MetaTable(self.meta_fwd, self.meta_rev, sum(map(len, self.meta_fwd.values())))

    def add(self, obj: str, rel: str, subject: str, meta: TupleMeta | None = None) -> bool:
        """Write a tuple: without meta into the key sets, with meta into the side table (moving
        it out of the other place if it was there)."""
        if meta is not None:
            self._plain_remove(obj, rel, subject)  # counted out there, back in here
            if self._meta_put(obj, rel, subject, meta):
                self.count += 1
            return True
        if (self.meta is not None or self._meta_owned is not None) and self._meta_drop(obj, rel, subject):
            self.count -= 1  # (the common case, a partition without meta, skips the call)
        return self._plain_add(obj, rel, subject)

    def _plain_add(self, obj: str, rel: str, subject: str) -> bool:
        o, r, s = self._id(obj), self._rel_id(rel), self._id(subject)
        userset = "#" in subject
        if userset and s not in self.pairs:  # (a failed batch may have numbered it unlinked)
            group, _, group_rel = subject.partition("#")
            g, gr = self._id(group), self._rel_id(group_rel)
            self._link(s, g << self.rbits | gr)
        pair = o << self.rbits | r  # read after numbering: a new id may have widened the layout
        if not self.fwd.add(pair << self.sw | userset << self.w | s):
            return False
        self.rev.add(s << self.rw | pair)
        self.count += 1
        return True

    def remove(self, obj: str, rel: str, subject: str) -> bool:
        """Delete a tuple from wherever it is (key sets or side table)."""
        if self._meta_drop(obj, rel, subject):
            self.count -= 1
            return True
        return self._plain_remove(obj, rel, subject)

    def _plain_remove(self, obj: str, rel: str, subject: str) -> bool:
        o, r, s = self.ids.get(obj), self.rel_ids.get(rel), self.ids.get(subject)
        if o is None or r is None or s is None:
            return False
        rw, osh = self.rw, self.osh
        pair = o << self.rbits | r
        if not self.fwd.discard(pair << self.sw | ("#" in subject) << self.w | s):
            return False
        self.rev.discard(s << rw | pair)
        if not self.rev.any(s << rw, (s + 1) << rw):
            self.orphans += 1
        if not self.fwd.any(o << osh, (o + 1) << osh):
            self.orphans += 1
        self.count -= 1
        return True

    def finish(self) -> _Partition:
        if self.orphans > 64 and self.orphans > len(self.names) - self.orphans + self.count // 8:
            return self._compacted()
        fwd_max, fwd = self.fwd.frozen()
        rev_max, rev = self.rev.frozen()
        return _Partition(
            self.ids, self.names, self.rel_ids, self.rels, self.rbits, self.w, self.sw, self.osh, self.rw,
            fwd_max, fwd, rev_max, rev, self.pairs, self.usersets,
            self.count, len(self.names), self.orphans, self._meta_table(),
        )

    def _compacted(self) -> _Partition:
        """The same tuples with fresh string tables holding only the strings still used (the
        side table holds strings, not ids: it moves over as it is)."""
        fresh = _PartitionWriter(None)
        names, rels, sw, osh = self.names, self.rels, self.sw, self.osh
        rmask, wmask = (1 << self.rbits) - 1, (1 << self.w) - 1
        for key in self.fwd:
            fresh.add(names[key >> osh], rels[(key >> sw) & rmask], names[key & wmask])
        meta = self._meta_table()
        if meta is not None:
            fresh.meta = meta
            fresh.count += meta.count
        return fresh.finish()


class _Transaction:
    """The next state under construction; published only by :meth:`commit`."""

    def __init__(self, state: _State):
        self._state = state
        self._writers: dict[str, _PartitionWriter] = {}

    def writer(self, tenant: str) -> _PartitionWriter:
        w = self._writers.get(tenant)
        if w is None:
            w = self._writers[tenant] = _PartitionWriter(self._state.tenants.get(tenant))
        return w

    def write(self, tenant: str, obj: str, rel: str, subject: str, meta: TupleMeta | None = None) -> None:
        self.writer(tenant).add(obj, rel, subject, meta)

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


def _facts(part: _Partition, lo: int, hi: int) -> Iterator[Fact]:
    """The subjects of the forward keys in ``[lo, hi)``, as facts without meta. A short range in
    one chunk (what a check reads: a pair's few usersets or parents) is decoded at once, which
    costs less than starting two generators, and none or one key costs one bisect; a longer
    range is decoded lazily, as it is read."""
    fwd = part.fwd
    names, mask = part.names, (1 << part.w) - 1
    if len(fwd) != 1:
        return ((names[key & mask], None) for key in _between(part.fwd_max, fwd, lo, hi))
    chunk = fwd[0]
    n = len(chunk)
    start = bisect_left(chunk, lo)
    if start == n or (key := chunk[start]) >= hi:
        return iter(())
    if start + 1 == n or chunk[start + 1] >= hi:
        return iter(((names[key & mask], None),))
    end = bisect_left(chunk, hi, start + 2)
    if end - start <= _EAGER:
        return iter([(names[key & mask], None) for key in chunk[start:end]])
    return ((names[key & mask], None) for key in islice(chunk, start, end))


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

    @property
    def has_meta(self) -> bool:
        """Whether any of this tenant's tuples carries a condition or an expiry: answers read
        through such tuples depend on the request's context or the clock, not only on ``seq``."""
        return self._part is not None and self._part.meta is not None

    def check(self, object: str, relation: str, subject: str) -> bool:
        """Group expansion over plain tuples (a tuple with meta never grants here)."""
        return _check(self._part, object, relation, subject)

    def relations_of(self, subject: str) -> dict[str, builtins.list[str]]:
        """The policy's ``input.relations`` over plain tuples (a tuple with meta never appears)."""
        return _relations_of(self._part, subject)

    # RelationReads (tenantguard.relations.reads), what the schema engine evaluates: every
    # tuple as written (plain ones from a key-set range, then those with meta), no expansion.

    def subjects(self, object: str, relation: str) -> Iterator[Fact]:
        """Every subject written on ``object#relation``: a range of the forward key set, then
        the side table's."""
        part = self._part
        if part is None:
            return iter(())
        o, r = part.ids.get(object), part.rel_ids.get(relation)
        plain: Iterator[Fact] = iter(())
        if o is not None and r is not None:
            lo = (o << part.rbits | r) << part.sw
            plain = _facts(part, lo, lo + (1 << part.sw))
        if part.meta is not None and (extra := part.meta.fwd.get((object, relation))):
            return chain(plain, extra.items())
        return plain

    def find(self, object: str, relation: str, subject: str) -> Fact | None:
        """The tuple ``object#relation@subject``: the side table's, else one probe of the forward
        key set (a userset subject carries its flag bit)."""
        part = self._part
        if part is None:
            return None
        if part.meta is not None:
            meta = part.meta.fwd.get((object, relation), {}).get(subject)
            if meta is not None:
                return subject, meta
        ids = part.ids
        o, s, r = ids.get(object), ids.get(subject), part.rel_ids.get(relation)
        if o is None or s is None or r is None:
            return None
        if "#" in subject:
            s |= 1 << part.w
        key = (o << part.rbits | r) << part.sw | s
        fwd = part.fwd
        if len(fwd) == 1:  # most partitions: _has() without the call
            chunk = fwd[0]
            i = bisect_left(chunk, key)
            return (subject, None) if i < len(chunk) and chunk[i] == key else None
        return (subject, None) if _has(part.fwd_max, fwd, key) else None

    def usersets(self, object: str, relation: str) -> Iterator[Fact]:
        """The userset subjects of ``object#relation``: the flagged tail of its forward range
        (they sort last), then the side table's."""
        part = self._part
        if part is None:
            return iter(())
        o, r = part.ids.get(object), part.rel_ids.get(relation)
        plain: Iterator[Fact] = iter(())
        if o is not None and r is not None:
            lo = (o << part.rbits | r) << part.sw
            plain = _facts(part, lo | 1 << part.w, lo + (1 << part.sw))
        if part.meta is not None and (extra := part.meta.fwd.get((object, relation))):
            return chain(plain, ((subject, meta) for subject, meta in extra.items() if "#" in subject))
        return plain

    def objects(self, object_type: str, relation: str, subject: str) -> Iterator[Fact]:
        """Every object of ``object_type`` whose ``relation`` names exactly ``subject``: a range of
        the reverse key set (the subject's), then the side table's."""
        part = self._part
        if part is None:
            return
        s, r = part.ids.get(subject), part.rel_ids.get(relation)
        prefix = f"{object_type}:"
        if s is not None and r is not None:
            rw, rbits, names = part.rw, part.rbits, part.names
            rmask = (1 << rbits) - 1
            lo = s << rw
            for key in _between(part.rev_max, part.rev, lo, lo + (1 << rw)):
                pair = key - lo
                if pair & rmask == r and (obj := names[pair >> rbits]).startswith(prefix):
                    yield obj, None
        if part.meta is not None:
            for (obj, rel), meta in part.meta.rev.get(subject, {}).items():
                if rel == relation and obj.startswith(prefix):
                    yield obj, meta

    # Candidate walks for search (tenantguard.search): lazy, in an order fixed by this
    # state, each item once; ``budget`` bounds the nodes visited (WalkTooBroad beyond).

    def objects_of(self, subject: str, object_type: str, budget: int) -> Iterator[str]:
        """Objects of ``object_type`` the subject holds any relation on, through usersets."""
        return _objects_of(self._part, subject, f"{object_type}:", budget)

    def subjects_of(self, object: str, subject_type: str, budget: int) -> Iterator[str]:
        """Direct subjects of ``subject_type`` holding any relation on ``object``, through usersets."""
        return _subjects_of(self._part, object, f"{subject_type}:", budget)

    def members(self, userset: str, budget: int) -> Iterator[str]:
        """The direct subjects a userset (``group:eng#member``) expands to, through nesting,
        as a check sees them."""
        obj, _, relation = userset.partition("#")
        return _subjects_of(self._part, obj, "", budget, relation)

    def all_objects(self, object_type: str, budget: int) -> Iterator[str]:
        """Every object of ``object_type`` in this tenant's tuples."""
        return _scan(self._part, True, f"{object_type}:", budget)

    def all_subjects(self, subject_type: str, budget: int) -> Iterator[str]:
        """Every direct subject of ``subject_type`` in this tenant's tuples."""
        return _scan(self._part, False, f"{subject_type}:", budget)

    def holds(self, object: str) -> bool:
        """Whether any tuple of this tenant names ``object`` as its object or its subject."""
        part = self._part
        if part is None:
            return False
        o = part.ids.get(object)
        if o is None:
            return False
        rw, osh = part.rw, part.osh
        if _any(part.fwd_max, part.fwd, o << osh, (o + 1) << osh):  # an object
            return True
        if _any(part.rev_max, part.rev, o << rw, (o + 1) << rw):  # a subject
            return True
        usersets = part.usersets  # or the object of a userset that holds something
        for r in range(len(part.rels) if usersets else 0):
            userset = usersets.get(o << part.rbits | r)
            if userset is not None and _any(part.rev_max, part.rev, userset << rw, (userset + 1) << rw):
                return True
        return False


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
        """``(object, [(relation, sorted subjects), ...])`` in canonical order: the plain tuples
        (those with meta are in :meth:`meta_rows`)."""
        part = self._state.tenants.get(tenant)
        if part is None:
            return iter(())
        return _object_rows(part)

    def meta_rows(self, tenant: str) -> builtins.list[tuple[str, str, str, TupleMeta]]:
        """``(object, relation, subject, meta)`` of the tenant's tuples with meta, sorted."""
        part = self._state.tenants.get(tenant)
        if part is None or part.meta is None:
            return []
        return sorted(((o, r, s, m) for (o, r), by_subject in part.meta.fwd.items() for s, m in by_subject.items()),
                      key=lambda t: t[:3])

    def digest(self) -> str:
        """SHA-256 over ``seq`` and every tuple, one canonical line each, sorted; a tenant's
        tuples with meta follow its plain ones, each line carrying its meta as canonical JSON
        (an index without meta digests exactly as before meta existed)."""
        h = hashlib.sha256(_DIGEST_HEADER)
        h.update(f"seq={self.seq}\ncount={self.count}\n".encode())
        for tenant in self.tenants():
            part = self._state.tenants[tenant]
            if len(part.fwd) == 1:  # small: one sort of all its (object, relation, subject)
                h.update("".join([f"{tenant}/{o}#{r}@{s}\n" for o, r, s in sorted(_decoded(part))]).encode())
            else:
                for obj, rels in self.rows(tenant):
                    head = f"{tenant}/{obj}#"
                    lines = [f"{head}{rel}@{s}\n" for rel, subjects in rels for s in subjects]
                    h.update("".join(lines).encode())
            for o, r, s, m in self.meta_rows(tenant):
                meta = json.dumps(meta_to_wire(m), sort_keys=True, separators=(",", ":"))
                h.update(f"{tenant}/{o}#{r}@{s} {meta}\n".encode())
        return h.hexdigest()


class RelationIndex:
    """Tenant-partitioned tuples with userset expansion; see the module docstring."""

    def __init__(self) -> None:
        self._state = _EMPTY
        self._write_lock = threading.Lock()

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
            txn = _Transaction(state)
            for i, change in enumerate(batch.changes):
                rel = change.rel
                if change.op == "write":
                    txn.write(rel.tenant, rel.object, rel.relation, rel.subject, rel.meta)
                elif change.op == "delete":
                    txn.delete(rel.tenant, rel.object, rel.relation, rel.subject)
                else:
                    raise ChangeBatchInvalid(f"changes[{i}]: unknown op {change.op!r}", index=i)
            self._state = txn.commit(batch.seq)
            return True

    @classmethod
    def from_trusted(
        cls, seq: int, tuples: Iterable[tuple[str, str, str, str] | tuple[str, str, str, str, TupleMeta | None]]
    ) -> RelationIndex:
        """Build an index at ``seq`` from ``(tenant, object, relation, subject[, meta])`` tuples
        in one pass, without per-batch copying. Nothing is validated here: the caller must
        have checked every part (the snapshot reader does), hence the name."""
        index = cls()
        txn = _Transaction(_EMPTY)
        for t in tuples:
            txn.write(*t)
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
        """Stored tuples of one tenant matching the given parts, sorted, with their meta; no expansion."""
        part = self._state.tenants.get(tenant)
        if part is None:
            return []
        found: builtins.list[tuple[str, str, str, str, TupleMeta | None]] = [
            (*t, None) for t in _select(tenant, part, object, relation, subject)]
        if part.meta is not None:
            found.extend(_select_meta(tenant, part.meta, object, relation, subject))
        found.sort(key=lambda t: t[:4])
        return [Relationship(*t) for t in found]


def _select_meta(tenant: str, meta: _MetaTable, obj: str | None, rel: str | None, subject: str | None
                 ) -> Iterator[tuple[str, str, str, str, TupleMeta]]:
    """The side table's tuples matching the given parts."""
    if subject is not None:
        for (o, r), m in meta.rev.get(subject, {}).items():
            if obj in (None, o) and rel in (None, r):
                yield tenant, o, r, subject, m
        return
    for (o, r), by_subject in meta.fwd.items():
        if obj in (None, o) and rel in (None, r):
            for s, m in by_subject.items():
                yield tenant, o, r, s, m


def _select(
    tenant: str, part: _Partition, obj: str | None, rel: str | None, subject: str | None
) -> Iterator[tuple[str, str, str, str]]:
    """Walk the forward or reverse keys when an object or subject narrows the search."""
    names, rels, sw, osh = part.names, part.rels, part.sw, part.osh
    wmask, rmask = (1 << part.w) - 1, (1 << part.rbits) - 1
    r = None if rel is None else part.rel_ids.get(rel)
    if rel is not None and r is None:
        return
    if obj is not None:
        o = part.ids.get(obj)
        if o is None:
            return
        lo, span = (o << osh, 1 << osh) if r is None else ((o << part.rbits | r) << sw, 1 << sw)
        for key in _between(part.fwd_max, part.fwd, lo, lo + span):
            s = names[key & wmask]
            if subject in (None, s):
                yield tenant, obj, rels[(key >> sw) & rmask], s
    elif subject is not None:
        s_id = part.ids.get(subject)
        if s_id is None:
            return
        for pair in _held(part, s_id):
            if r in (None, pair & rmask):
                yield tenant, names[pair >> part.rbits], rels[pair & rmask], subject
    else:
        yield from (t for t in _iter_partition(tenant, part) if rel in (None, t[2]))
