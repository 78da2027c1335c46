"""One RelationReads contract, run against every implementation (SpiceDB's datastore pattern).

``MemoryReads`` is the reference; the compact index (``TenantRelations``), and the index
after a snapshot round trip, must answer every read exactly as it does, for the same
random history of writes, rewrites and deletes, wildcards and meta included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from tenantguard.relations import (
    MAX_BATCH_CHANGES,
    ChangeBatch,
    ChangeBatchTooLarge,
    RelationChange,
    RelationIndex,
    Relationship,
    index_from_snapshot_bytes,
)
from tenantguard.relations.reads import Fact, MemoryReads, RelationReads, TupleMeta
from tenantguard.relations.snapshot import snapshot_bytes

from .strategies import rich_changes, small_ids, small_names, small_relations

Change = tuple[str, Relationship]
Build = Callable[[Sequence[Change], str], RelationReads]


def _memory(history: Sequence[Change], tenant: str) -> RelationReads:
    reads = MemoryReads()
    for op, rel in history:
        if rel.tenant != tenant:
            continue
        if op == "write":
            reads.write(rel.object, rel.relation, rel.subject, rel.meta)
        else:
            reads.delete(rel.object, rel.relation, rel.subject)
    return reads


def _index(history: Sequence[Change]) -> RelationIndex:
    index = RelationIndex()
    for seq, (op, rel) in enumerate(history, 1):  # one batch a change: every step publishes a state
        index.apply(ChangeBatch(seq, [RelationChange(op, rel if op == "write" else rel.with_meta(None))]))  # type: ignore[arg-type]
    return index


def _compact(history: Sequence[Change], tenant: str) -> RelationReads:
    return _index(history).tenant(tenant)


def _one_batch(history: Sequence[Change], tenant: str) -> RelationReads:
    """All changes in one batch: the side table edited several times before it is published."""
    index = RelationIndex()
    index.apply(ChangeBatch(1, [RelationChange(op, rel if op == "write" else rel.with_meta(None))  # type: ignore[arg-type]
                                for op, rel in history]))
    return index.tenant(tenant)


def _snapshot(history: Sequence[Change], tenant: str) -> RelationReads:
    return index_from_snapshot_bytes(snapshot_bytes(_index(history))).tenant(tenant)


IMPLEMENTATIONS: dict[str, Build] = {
    "memory": _memory, "index": _compact, "index-one-batch": _one_batch, "index-after-snapshot": _snapshot}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def build(request: pytest.FixtureRequest) -> Build:
    return IMPLEMENTATIONS[request.param]


def _as_dict(facts: list[Fact]) -> dict[str, TupleMeta | None]:
    names = [name for name, _ in facts]
    assert len(names) == len(set(names)), f"a read returned one tuple twice: {names}"
    return dict(facts)


def W(text: str) -> Change:
    return ("write", Relationship.parse(text))


def D(text: str) -> Change:
    return ("delete", Relationship.parse(text))


EXAMPLE = [
    W("acme/doc:1#viewer@user:anne"),
    W('acme/doc:2#viewer@user:anne[ip_ok:{"cidr":"10.0.0.0/8"}]'),
    W("acme/doc:1#viewer@user:*"),
    W("acme/doc:1#viewer@group:eng#member[expiration:1970-01-01T00:01:40Z]"),
    W("acme/folder:1#viewer@user:anne"),  # another type: objects() of doc must not return it
    W("globex/doc:1#viewer@user:bob"),  # another tenant
]


def test_forward_and_reverse_reads_as_written(build: Build) -> None:
    reads = build(EXAMPLE, "acme")
    assert _as_dict(list(reads.subjects("doc:1", "viewer"))) == {
        "user:anne": None, "user:*": None, "group:eng#member": TupleMeta(expires_at=100.0)}
    assert _as_dict(list(reads.objects("doc", "viewer", "user:anne"))) == {
        "doc:1": None, "doc:2": TupleMeta("ip_ok", {"cidr": "10.0.0.0/8"})}
    # subjects are matched as written: a wildcard or userset tuple is not one of anne's
    assert _as_dict(list(reads.objects("doc", "viewer", "user:*"))) == {"doc:1": None}
    assert list(reads.objects("doc", "viewer", "user:bob")) == []  # globex's tuple stays in globex
    assert list(reads.objects("doc", "editor", "user:anne")) == []
    assert list(reads.subjects("doc:9", "viewer")) == []


def test_rewrites_replace_meta_and_deletes_remove_it(build: Build) -> None:
    history = [
        *EXAMPLE,
        W('acme/doc:1#viewer@user:anne[weekday:{"days":[1,2]}]'),  # plain -> conditional
        W("acme/doc:2#viewer@user:anne"),  # conditional -> plain
        W("acme/doc:1#viewer@group:eng#member[expiration:2030-01-01T00:00:00Z]"),  # new expiry
        D("acme/doc:1#viewer@user:*"),
    ]
    reads = build(history, "acme")
    assert _as_dict(list(reads.subjects("doc:1", "viewer"))) == {
        "user:anne": TupleMeta("weekday", {"days": [1, 2]}),
        "group:eng#member": TupleMeta(expires_at=1893456000.0)}
    assert _as_dict(list(reads.objects("doc", "viewer", "user:anne"))) == {
        "doc:1": TupleMeta("weekday", {"days": [1, 2]}), "doc:2": None}
    deleted = build([*history, D("acme/doc:1#viewer@user:anne"), D("acme/doc:1#viewer@group:eng#member")], "acme")
    assert list(deleted.subjects("doc:1", "viewer")) == []
    assert _as_dict(list(deleted.objects("doc", "viewer", "user:anne"))) == {"doc:2": None}


def test_reads_are_lazy_and_stop_early(build: Build) -> None:
    many = [W(f"acme/doc:1#viewer@user:u{i}") for i in range(1000)]
    reads = build(many, "acme")
    it = reads.subjects("doc:1", "viewer")
    first = [next(it) for _ in range(3)]
    assert len({name for name, _ in first}) == 3 and all(meta is None for _, meta in first)


_OBJECTS = [f"{t}:{i}" for t in ("doc", "folder", "group", "user") for i in ("1", "2", "a.b", "x@y")]
_SUBJECTS = [*_OBJECTS, *(f"{t}:*" for t in ("doc", "folder", "group", "user")),
             *(f"{o}#{r}" for o in _OBJECTS for r in ("viewer", "editor", "member"))]
assert {n for n in ("doc", "folder", "group", "user")} == set(small_names.elements)  # type: ignore[attr-defined]
assert set(small_ids.elements) == {"1", "2", "a.b", "x@y"}  # type: ignore[attr-defined]
assert set(small_relations.elements) == {"viewer", "editor", "member"}  # type: ignore[attr-defined]


@settings(max_examples=60, deadline=None)
@given(history=rich_changes)
def test_every_implementation_answers_every_read_as_the_reference(history: list[Change]) -> None:
    for tenant in ("acme", "globex"):
        reference = _memory(history, tenant)
        for name, impl in IMPLEMENTATIONS.items():
            if name == "memory":
                continue
            reads = impl(history, tenant)
            for obj in _OBJECTS:
                for relation in ("viewer", "editor", "member"):
                    everyone = _as_dict(list(reference.subjects(obj, relation)))
                    assert _as_dict(list(reads.subjects(obj, relation))) == everyone, (name, obj, relation)
                    # the point read and the userset read are views of subjects(), in every implementation
                    for r in (reads, reference):
                        assert _as_dict(list(r.usersets(obj, relation))) == \
                            {s: m for s, m in everyone.items() if "#" in s}, (name, obj, relation)
                        for subject in _SUBJECTS:
                            want = (subject, everyone[subject]) if subject in everyone else None
                            assert r.find(obj, relation, subject) == want, (name, obj, relation, subject)
            for object_type in ("doc", "folder", "group", "user"):
                for relation in ("viewer", "editor", "member"):
                    for subject in _SUBJECTS:
                        assert _as_dict(list(reads.objects(object_type, relation, subject))) == \
                            _as_dict(list(reference.objects(object_type, relation, subject))), \
                            (name, object_type, relation, subject)


@pytest.mark.parametrize("n", [0, 1, 2, 32, 33, 1500])
def test_ranges_of_every_length_read_whole(build: Build, n: int) -> None:
    """The index decodes a short range at once and a long one (or one over several chunks: 1,500
    keys split a chunk) lazily; every length reads the same tuples, plain and userset, beside
    a neighbour pair whose keys sort right after."""
    history = [W(f"acme/doc:1#viewer@user:u{i}") for i in range(n)]
    history += [W(f"acme/doc:1#viewer@group:g{i}#member") for i in range(n)]
    history += [W("acme/doc:1#viewer@user:*"), W("acme/doc:2#viewer@user:u0"), W("acme/doc:2#viewer@group:x#member")]
    if len(history) > MAX_BATCH_CHANGES and build is _one_batch:  # no batch holds them: the bound is the answer
        with pytest.raises(ChangeBatchTooLarge):
            build(history, "acme")
        return
    reads = build(history, "acme")
    everyone = _as_dict(list(reads.subjects("doc:1", "viewer")))
    assert everyone == {**{f"user:u{i}": None for i in range(n)}, **{f"group:g{i}#member": None for i in range(n)},
                        "user:*": None}
    assert _as_dict(list(reads.usersets("doc:1", "viewer"))) == {f"group:g{i}#member": None for i in range(n)}
    assert _as_dict(list(reads.usersets("doc:2", "viewer"))) == {"group:x#member": None}
    for i in (0, n // 2, n - 1) if n else ():
        assert reads.find("doc:1", "viewer", f"user:u{i}") == (f"user:u{i}", None)
        assert reads.find("doc:1", "viewer", f"group:g{i}#member") == (f"group:g{i}#member", None)
    assert reads.find("doc:1", "viewer", "group:x#member") is None
