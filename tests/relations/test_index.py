"""The tenant-partitioned index: ordering, atomicity, expansion, isolation, digests."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tenantguard.relations import (
    MAX_DEPTH,
    ChangeBatch,
    ChangeBatchInvalid,
    RelationChange,
    RelationIndex,
    Relationship,
    RelationshipInvalid,
    SequenceGap,
    snapshot_bytes,
)
from tenantguard.relations import index as index_module


def rel(text: str) -> Relationship:
    return Relationship.parse(text)


def batch(seq: int, *texts: str, op: str = "write") -> ChangeBatch:
    return ChangeBatch(seq, tuple(RelationChange(op, rel(t)) for t in texts))  # type: ignore[arg-type]


def index_with(*texts: str) -> RelationIndex:
    index = RelationIndex()
    assert index.apply(batch(1, *texts))
    return index


# --------------------------------------------------------------------------- ordering


def test_batches_apply_in_sequence_order() -> None:
    index = RelationIndex()
    assert index.applied_seq == 0
    assert index.apply(batch(1, "acme / project:p1#member @ user:a"))
    assert index.apply(batch(2, "acme / project:p1#member @ user:b"))
    assert index.applied_seq == 2
    assert index.count() == 2


def test_duplicate_batch_is_ignored() -> None:
    index = index_with("acme / project:p1#member @ user:a")
    before = index.digest()
    # same seq, different content: still a replay, must not be applied
    assert index.apply(batch(1, "acme / project:p1#member @ user:a", op="delete")) is False
    assert index.apply(batch(1, "acme / project:p1#member @ user:zz")) is False
    assert index.digest() == before
    assert index.check("acme", "project:p1", "member", "user:a")
    assert not index.check("acme", "project:p1", "member", "user:zz")


def test_gap_raises_and_changes_nothing() -> None:
    index = index_with("acme / project:p1#member @ user:a")
    before = index.digest()
    with pytest.raises(SequenceGap) as info:
        index.apply(batch(3, "acme / project:p1#member @ user:b"))
    assert (info.value.expected, info.value.got) == (2, 3)
    assert info.value.code == "sequence_gap"
    assert info.value.http_status == 409
    assert info.value.retryable is False
    assert index.applied_seq == 1
    assert index.digest() == before
    assert index.apply(batch(2, "acme / project:p1#member @ user:b"))


def test_batch_with_an_invalid_change_leaves_the_index_unchanged() -> None:
    index = index_with("acme / project:p1#member @ user:a")
    before = index.digest()
    good = {"op": "write", "rel": rel("acme / project:p2#member @ user:a").to_wire()}
    bad = {"op": "write", "rel": {**good["rel"], "subject": "user:a*"}}
    with pytest.raises(RelationshipInvalid):
        index.apply(ChangeBatch.from_wire({"seq": 2, "changes": [good, good, bad]}))
    assert index.digest() == before
    assert index.applied_seq == 1
    assert not index.check("acme", "project:p2", "member", "user:a")


def test_failure_inside_apply_publishes_nothing() -> None:
    """Even a change corrupted after validation cannot leave half a batch behind."""
    index = index_with("acme / project:p1#member @ user:a")
    before = index.digest()
    changes = batch(2, "acme / project:p2#member @ user:a", "globex / doc:d#owner @ user:b")
    object.__setattr__(changes.changes[1], "op", "upsert")  # bypasses validation
    with pytest.raises(ChangeBatchInvalid, match=r"changes\[1\]"):
        index.apply(changes)
    assert index.digest() == before
    assert index.count() == 1
    assert index.count("globex") == 0
    assert not index.check("acme", "project:p2", "member", "user:a")


def test_writes_and_deletes_are_idempotent_within_and_across_batches() -> None:
    index = RelationIndex()
    index.apply(batch(1, *["acme / project:p1#member @ user:a"] * 3))
    assert index.count() == 1
    index.apply(batch(2, "acme / project:p1#member @ user:a", "acme / project:p9#x @ user:q",
                      op="delete"))
    index.apply(batch(3, "acme / project:p1#member @ user:a", op="delete"))
    assert index.count() == 0
    assert index.list("acme") == []


def test_changes_in_a_batch_apply_in_order() -> None:
    index = RelationIndex()
    write = RelationChange("write", rel("acme / project:p1#member @ user:a"))
    delete = RelationChange("delete", rel("acme / project:p1#member @ user:a"))
    index.apply(ChangeBatch(1, (write, delete)))
    assert index.count() == 0
    index.apply(ChangeBatch(2, (delete, write)))
    assert index.count() == 1


# --------------------------------------------------------------------------- expansion

GROUPS = (
    "acme / project:p1#viewer @ user:direct",
    "acme / project:p1#viewer @ group:eng#member",
    "acme / group:eng#member @ user:alice",
    "acme / group:eng#member @ group:backend#member",
    "acme / group:backend#member @ user:bob",
    "acme / group:backend#member @ group:db#member",
    "acme / group:db#member @ user:carol",
    "acme / group:db#member @ group:deep#member",
    "acme / group:deep#member @ user:dave",
)


def test_direct_group_and_nested_membership() -> None:
    index = index_with(*GROUPS)
    assert index.check("acme", "project:p1", "viewer", "user:direct")
    assert index.check("acme", "project:p1", "viewer", "user:alice")  # via eng
    assert index.check("acme", "project:p1", "viewer", "user:bob")  # eng <- backend
    assert index.check("acme", "project:p1", "viewer", "user:carol")  # eng <- backend <- db
    assert index.check("acme", "project:p1", "viewer", "group:eng#member")
    assert not index.check("acme", "project:p1", "viewer", "user:mallory")
    assert not index.check("acme", "project:p1", "owner", "user:alice")
    assert not index.check("acme", "project:p1", "viewer", "group:eng")  # not the userset


def test_depth_is_bounded() -> None:
    assert MAX_DEPTH == 3
    index = index_with(*GROUPS)
    # dave is four userset hops away: eng <- backend <- db <- deep
    assert not index.check("acme", "project:p1", "viewer", "user:dave")
    assert "project:p1" not in index.relations_of("acme", "user:dave")
    assert index.check("acme", "group:eng", "member", "user:dave")  # three hops from eng


@pytest.mark.parametrize("hops", range(MAX_DEPTH + 3))
def test_check_and_relations_of_agree_on_the_depth_bound(hops: int) -> None:
    """A chain project <- g1 <- ... <- g<hops> <- user: reachable iff hops <= MAX_DEPTH."""
    chain = ["acme / project:p#viewer @ " + ("group:g1#member" if hops else "user:u")]
    chain += [f"acme / group:g{i}#member @ group:g{i + 1}#member" for i in range(1, hops)]
    if hops:
        chain.append(f"acme / group:g{hops}#member @ user:u")
    index = index_with(*chain)
    reachable = hops <= MAX_DEPTH
    assert index.check("acme", "project:p", "viewer", "user:u") is reachable
    assert ("project:p" in index.relations_of("acme", "user:u")) is reachable


def test_relations_of_merges_direct_and_group_relations() -> None:
    index = index_with(*GROUPS, "acme / project:p1#owner @ user:bob", "acme / doc:d1#editor @ user:bob")
    assert index.relations_of("acme", "user:bob") == {
        "doc:d1": ["editor"],
        "group:backend": ["member"],
        "group:eng": ["member"],
        "project:p1": ["owner", "viewer"],
    }
    assert index.relations_of("acme", "user:nobody") == {}
    assert index.relations_of("nosuchtenant", "user:bob") == {}


def test_relations_of_returns_a_fresh_result() -> None:
    index = index_with(*GROUPS)
    first = index.relations_of("acme", "user:alice")
    first["project:p1"].append("owner")
    first["x:y"] = ["z"]
    assert index.relations_of("acme", "user:alice") == {
        "group:eng": ["member"],
        "project:p1": ["viewer"],
    }


def test_cycles_terminate() -> None:
    index = index_with(
        "acme / group:a#member @ group:b#member",
        "acme / group:b#member @ group:a#member",
        "acme / group:a#member @ group:a#member",
        "acme / group:b#member @ user:x",
        "acme / project:p#viewer @ group:a#member",
    )
    assert index.check("acme", "project:p", "viewer", "user:x")
    assert not index.check("acme", "project:p", "viewer", "user:y")
    assert index.relations_of("acme", "user:x") == {
        "group:a": ["member"],
        "group:b": ["member"],
        "project:p": ["viewer"],
    }


def test_deleting_a_group_grant_revokes_through_it() -> None:
    index = index_with(*GROUPS)
    index.apply(batch(2, "acme / project:p1#viewer @ group:eng#member", op="delete"))
    assert not index.check("acme", "project:p1", "viewer", "user:alice")
    assert "project:p1" not in index.relations_of("acme", "user:bob")
    assert index.check("acme", "project:p1", "viewer", "user:direct")
    index.apply(batch(3, "acme / group:backend#member @ user:bob", op="delete"))
    assert index.relations_of("acme", "user:bob") == {}


def test_large_groups_grow_and_shrink_without_touching_published_states() -> None:
    """Member collections switch between tuple and set; every old view must stay as it was."""
    index = RelationIndex()
    index.apply(batch(1, "acme / project:p#viewer @ group:big#member"))
    views = []
    members = [f"user:u{i}" for i in range(20)]
    for i, member in enumerate(members):
        index.apply(batch(index.applied_seq + 1, f"acme / group:big#member @ {member}"))
        views.append((index.view(), index.view().digest(), i + 1))
    for member in reversed(members):
        index.apply(batch(index.applied_seq + 1, f"acme / group:big#member @ {member}", op="delete"))
        views.append((index.view(), index.view().digest(), index.count() - 1))
        assert not index.check("acme", "project:p", "viewer", member)
        remaining = members[: members.index(member)]
        assert all(index.check("acme", "project:p", "viewer", m) for m in remaining)
        assert {r.subject for r in index.list("acme", object="group:big")} == set(remaining)
    for view, digest, members_then in views:
        assert view.digest() == digest
        assert view.count == members_then + 1
    assert index.count() == 1


# --------------------------------------------------------------------------- tenants


def test_tenants_are_isolated_even_with_colliding_ids() -> None:
    index = index_with(
        "acme / project:p1#member @ user:alice",
        "acme / project:p1#member @ group:eng#member",
        "acme / group:eng#member @ user:bob",
        "globex / project:p1#viewer @ user:carol",
        "globex / group:eng#member @ user:alice",
    )
    assert not index.check("globex", "project:p1", "member", "user:alice")
    assert not index.check("acme", "project:p1", "viewer", "user:carol")
    # alice is in globex's group:eng, but acme's grant to group:eng must not reach her there
    assert index.relations_of("globex", "user:alice") == {"group:eng": ["member"]}
    assert index.relations_of("acme", "user:bob") == {
        "group:eng": ["member"],
        "project:p1": ["member"],
    }
    assert not index.check("globex", "project:p1", "member", "user:bob")
    assert {r.tenant for r in index.list("globex")} == {"globex"}
    assert (index.count("acme"), index.count("globex"), index.count()) == (3, 2, 5)
    index.apply(batch(2, "globex / group:eng#member @ user:alice", op="delete"))
    assert index.check("acme", "project:p1", "member", "user:alice")
    assert index.count("globex") == 1


def test_tenant_view_is_bound_to_its_tenant_and_state() -> None:
    index = index_with("acme / project:p1#member @ user:a", "globex / project:p1#member @ user:b")
    acme = index.tenant("acme")
    assert acme.check("project:p1", "member", "user:a")
    assert not acme.check("project:p1", "member", "user:b")
    index.apply(batch(2, "acme / project:p1#member @ user:a", op="delete"))
    assert acme.seq == 1 and acme.check("project:p1", "member", "user:a")  # its own state
    assert not index.tenant("acme").check("project:p1", "member", "user:a")


# --------------------------------------------------------------------------- list, count


def test_list_filters() -> None:
    index = index_with(*GROUPS, "globex / project:p1#viewer @ user:direct")
    assert len(index.list("acme")) == len(GROUPS)
    assert index.list("acme") == sorted(rel(t) for t in GROUPS)
    assert [str(r) for r in index.list("acme", object="project:p1", subject="user:direct")] == [
        "acme / project:p1#viewer @ user:direct"
    ]
    assert {r.subject for r in index.list("acme", object="project:p1")} == {
        "user:direct",
        "group:eng#member",
    }
    assert {r.object for r in index.list("acme", subject="group:backend#member")} == {"group:eng"}
    assert [r.object for r in index.list("acme", relation="viewer")] == ["project:p1"] * 2
    assert index.list("acme", object="project:p1", relation="owner") == []
    assert index.list("nosuch") == []


# --------------------------------------------------------------------------- digest


def build(order: Iterable[str], batch_size: int) -> RelationIndex:
    texts = list(order)
    index = RelationIndex()
    for seq, start in enumerate(range(0, len(texts), batch_size), 1):
        index.apply(batch(seq, *texts[start : start + batch_size]))
    return index


def test_digest_is_independent_of_build_order() -> None:
    texts = [*GROUPS, "globex / project:p1#viewer @ user:direct"]
    a = build(texts, 5)
    b = build(reversed(texts), 5)
    assert a.list("acme") == b.list("acme")
    assert a.digest() == b.digest()
    assert len(a.digest()) == 64


def test_digest_changes_with_any_change() -> None:
    index = build(GROUPS, 3)
    seen = {index.digest()}
    seq = index.applied_seq
    for change in (
        batch(seq + 1, "acme / project:p1#viewer @ user:new"),
        batch(seq + 2, "acme / project:p1#viewer @ user:new", op="delete"),  # same tuples...
        batch(seq + 3),  # ...and an empty batch: the sequence alone changes the digest
        batch(seq + 4, "acme / group:deep#member @ user:dave", op="delete"),
        batch(seq + 5, "other / group:deep#member @ user:dave"),
    ):
        index.apply(change)
        assert index.digest() not in seen
        seen.add(index.digest())


def test_published_views_never_change() -> None:
    index = index_with(*GROUPS)
    view = index.view()
    digest = view.digest()
    index.apply(batch(2, "acme / group:eng#member @ user:alice", op="delete"))
    index.apply(batch(3, "acme / group:eng#member @ user:zed"))
    assert view.digest() == digest
    assert view.seq == 1
    assert index.digest() != digest


# --------------------------------------------------------------------------- model-based

TENANTS = st.sampled_from(["acme", "globex"])
OBJECTS = st.sampled_from(["group:a", "group:b", "group:c", "project:p"])
RELATIONS = st.sampled_from(["member", "viewer"])
SUBJECTS = st.one_of(
    st.sampled_from(["user:x", "user:y"]),
    st.builds(lambda o, r: f"{o}#{r}", OBJECTS, RELATIONS),
)
CHANGES = st.lists(
    st.tuples(st.sampled_from(["write", "delete"]), TENANTS, OBJECTS, RELATIONS, SUBJECTS),
    max_size=40,
)


def reference_check(tuples: set[tuple[str, str, str, str]], t: str, o: str, r: str, s: str) -> bool:
    """Breadth-first definition: a path of at most MAX_DEPTH userset hops."""
    level = {(o, r)}
    seen = set(level)
    for depth in range(MAX_DEPTH + 1):
        holders = {x[3] for x in tuples if x[0] == t and (x[1], x[2]) in level}
        if s in holders:
            return True
        if depth == MAX_DEPTH:
            return False
        level = {tuple(h.split("#")) for h in holders if "#" in h} - seen  # type: ignore[misc]
        seen |= level
    return False


Tuples = set[tuple[str, str, str, str]]


def reference_digest(seq: int, tuples: Tuples) -> str:
    """The digest as its format defines it, from a plain set of tuples: other replicas and
    sidecars compare these bytes, so the index must produce exactly this."""
    h = hashlib.sha256(b"tenantguard.relations.digest/1\n")
    h.update(f"seq={seq}\ncount={len(tuples)}\n".encode())
    for t, o, r, s in sorted(tuples):
        h.update(f"{t}/{o}#{r}@{s}\n".encode())
    return h.hexdigest()


def assert_matches_model(index: RelationIndex, tuples: Tuples) -> None:
    """Every read of the index against its definition on the set of tuples."""
    assert index.count() == len(tuples)
    everything = sorted(Relationship(*x) for x in tuples)
    assert sorted(index.list("acme") + index.list("globex")) == everything
    for t in ("acme", "globex"):
        mine = {x for x in tuples if x[0] == t}
        view = index.tenant(t)
        assert index.count(t) == len(mine)
        subjects = {x[3] for x in mine} | {"user:x", "user:y", "group:a#member", "group:b#viewer"}
        for s in sorted(subjects):
            held = index.relations_of(t, s)
            for o in ("group:a", "group:b", "group:c", "project:p"):
                for r in ("member", "viewer"):
                    expected = reference_check(tuples, t, o, r, s)
                    assert index.check(t, o, r, s) == expected
                    assert (r in held.get(o, [])) == expected
            assert all(v == sorted(set(v)) and v for v in held.values())
            assert set(held) <= {x[1] for x in mine}
            for kind in ("group", "project"):
                walked = list(view.objects_of(s, kind, 10_000))
                assert len(walked) == len(set(walked))
                assert set(walked) == {o for o in held if o.startswith(f"{kind}:")}
            assert [str(r) for r in index.list(t, subject=s)] == [
                str(Relationship(*x)) for x in sorted(mine) if x[3] == s
            ]
        for o in ("group:a", "group:b", "group:c", "project:p", "user:x"):
            direct = {(x[2], x[3]) for x in mine if x[1] == o}
            reached = {s for s in subjects if "#" not in s
                       and any(reference_check(tuples, t, o, r, s) for r in ("member", "viewer"))}
            assert set(view.subjects_of(o, "user", 10_000)) == {s for s in reached if s.startswith("user:")}
            for r in ("member", "viewer"):
                assert set(view.members(f"{o}#{r}", 10_000)) == {
                    s for s in subjects if "#" not in s and reference_check(tuples, t, o, r, s)
                }
                assert {(x.relation, x.subject) for x in index.list(t, object=o, relation=r)} == {
                    d for d in direct if d[0] == r
                }
            assert {(x.relation, x.subject) for x in index.list(t, object=o)} == direct
            assert view.holds(o) == any(o in (x[1], x[3], x[3].partition("#")[0]) for x in mine)
        assert [x.relation for x in index.list(t, relation="viewer")] == ["viewer"] * sum(
            x[2] == "viewer" for x in mine
        )
        assert set(view.all_objects("group", 10_000)) == {x[1] for x in mine if x[1].startswith("group:")}
        assert set(view.all_subjects("user", 10_000)) == {x[3] for x in mine if x[3].startswith("user:")}
    assert index.digest() == reference_digest(index.applied_seq, tuples)


def apply_in_batches(changes: list[tuple[str, ...]], size: int) -> Iterator[tuple[RelationIndex, Tuples]]:
    """Apply ``changes`` in batches of ``size``, yielding the index and the model after each."""
    index = RelationIndex()
    tuples: Tuples = set()
    for seq, start in enumerate(range(0, len(changes), size), 1):
        chunk = changes[start : start + size]
        index.apply(ChangeBatch(seq, tuple(
            RelationChange(op, Relationship(t, o, r, s)) for op, t, o, r, s in chunk  # type: ignore[arg-type]
        )))
        for op, t, o, r, s in chunk:
            (tuples.add if op == "write" else tuples.discard)((t, o, r, s))
        yield index, set(tuples)


@contextmanager
def layout(chunk: int, narrow: tuple[int, int]) -> Iterator[None]:
    """Tiny chunks and a tiny narrow layout, so a few tuples split and merge chunks and
    widen partitions (the paths a real index reaches only at 100,000s of tuples)."""
    saved = index_module._CHUNK, index_module._NARROW
    index_module._CHUNK, index_module._NARROW = chunk, narrow
    try:
        yield
    finally:
        index_module._CHUNK, index_module._NARROW = saved


def check_model(changes: list[tuple[str, ...]], size: int) -> None:
    views = []
    index, tuples = RelationIndex(), set()
    for index, tuples in apply_in_batches(changes, size):
        views.append((index.view(), tuples))
    assert_matches_model(index, tuples)
    rebuilt = RelationIndex.from_trusted(index.applied_seq, sorted(tuples))
    assert rebuilt.digest() == index.digest()
    assert snapshot_bytes(rebuilt) == snapshot_bytes(index)
    for view, then in views:  # every state published on the way is still exactly as it was
        assert view.digest() == reference_digest(view.seq, then)
        for t, o, r, s in then:
            assert view.tenant(t).check(o, r, s)


@settings(max_examples=150, deadline=None)
@given(CHANGES, st.integers(min_value=1, max_value=7))
def test_index_matches_a_reference_model(changes: list[tuple[str, ...]], size: int) -> None:
    check_model(changes, size)


@settings(max_examples=100, deadline=None)
@given(CHANGES, st.integers(min_value=1, max_value=7))
def test_index_matches_the_model_across_chunk_splits_merges_and_widening(
    changes: list[tuple[str, ...]], size: int
) -> None:
    # chunks split beyond 8 keys and merge at 1; a partition widens past 2 relation names or 8 other strings
    with layout(chunk=4, narrow=(1, 3)):
        check_model(changes, size)


def test_pinned_digest_and_snapshot_bytes() -> None:
    """Values computed by the dict-of-strings index this layout replaced: replicas and
    sidecars running either compare equal."""
    index = index_with(*GROUPS, "globex / project:p1#viewer @ user:direct", "globex / doc:a.b#owner @ user:x=2E")
    assert index.digest() == "d8505c540ac94b495ada0c2b82178e220ebf1c8fac79ee2ddc37a1d743bbacb2"
    assert hashlib.sha256(snapshot_bytes(index)).hexdigest() == (
        "83129542a67547bf925cd21259e12e843c32d89671c336e146d3967c543149be"
    )


def test_a_failed_batch_leaves_only_unused_strings_behind() -> None:
    """A failed batch may have numbered new strings (tables are shared, append-only); the
    retry must still link the userset it names, and nothing it wrote is visible."""
    index = index_with("acme / project:p#viewer @ user:a")
    write = RelationChange("write", rel("acme / project:p#viewer @ group:new#member"))
    member = RelationChange("write", rel("acme / group:new#member @ user:b"))
    broken = RelationChange("write", rel("acme / project:q#viewer @ user:c"))
    object.__setattr__(broken, "op", "upsert")
    with pytest.raises(ChangeBatchInvalid):
        index.apply(ChangeBatch(2, (write, member, broken)))
    assert index.list("acme") == [rel("acme / project:p#viewer @ user:a")]
    assert not index.tenant("acme").holds("group:new")
    assert not index.check("acme", "project:p", "viewer", "user:b")
    index.apply(ChangeBatch(2, (write, member)))
    assert index.check("acme", "project:p", "viewer", "user:b")
    assert index.relations_of("acme", "user:b") == {"group:new": ["member"], "project:p": ["viewer"]}


def test_churn_compacts_the_string_tables() -> None:
    """Strings of deleted tuples are dropped once they outnumber the live ones."""
    index = index_with("acme / project:p#viewer @ group:g#member")
    first = index.view()
    for i in range(2000):
        user = f"acme / group:g#member @ user:u{i}"
        index.apply(batch(index.applied_seq + 1, user))
        index.apply(batch(index.applied_seq + 1, user, op="delete"))
    names = index._state.tenants["acme"].names
    assert len(names) < 200
    assert index.count() == 1
    assert index.relations_of("acme", "group:g#member") == {"project:p": ["viewer"]}
    assert not index.check("acme", "project:p", "viewer", "user:u7")
    index.apply(batch(index.applied_seq + 1, "acme / group:g#member @ user:u7"))
    assert index.check("acme", "project:p", "viewer", "user:u7")
    assert first.digest() == reference_digest(1, {("acme", "project:p", "viewer", "group:g#member")})


def test_big_groups_span_chunks() -> None:
    """A group of thousands: chunk splits on the way up, merges on the way down."""
    index = index_with("acme / project:p#viewer @ group:big#member")
    members = [f"user:u{i:05d}" for i in range(3000)]
    grants = [f"acme / group:big#member @ {m}" for m in members]
    for start in range(0, len(members), 500):
        index.apply(batch(index.applied_seq + 1, *grants[start : start + 500]))
    half = index.view()
    view = index.tenant("acme")
    assert sorted(view.members("group:big#member", 10_000)) == members
    assert all(index.check("acme", "project:p", "viewer", m) for m in members[::97])
    for start in range(0, len(members), 700):
        index.apply(batch(index.applied_seq + 1, *grants[start : start + 700 : 2], op="delete"))
    kept = [m for i, m in enumerate(members) if i % 700 % 2]
    assert sorted(index.tenant("acme").members("group:big#member", 10_000)) == kept
    assert [r.subject for r in index.list("acme", object="group:big")] == kept
    assert half.count == 3001 and sorted(view.members("group:big#member", 10_000)) == members


# --------------------------------------------------------------------------- concurrency


def test_readers_see_whole_batches_while_a_writer_applies() -> None:
    """Each batch moves user:x from one pair of objects to the next; a reader must always
    see exactly one complete pair, never half of a batch and never an iteration error."""
    index = index_with("acme / doc:0#a @ user:x", "acme / doc:0#b @ user:x")
    rounds = 300
    errors: list[BaseException] = []
    observed: list[dict[str, list[str]]] = []
    done = threading.Event()

    def writer() -> None:
        for i in range(rounds):
            index.apply(ChangeBatch(i + 2, (
                RelationChange("delete", rel(f"acme / doc:{i}#a @ user:x")),
                RelationChange("write", rel(f"acme / doc:{i + 1}#a @ user:x")),
                RelationChange("delete", rel(f"acme / doc:{i}#b @ user:x")),
                RelationChange("write", rel(f"acme / doc:{i + 1}#b @ user:x")),
            )))
        done.set()

    def reader() -> None:
        try:
            while not done.is_set():
                observed.append(index.relations_of("acme", "user:x"))
                index.list("acme")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)] + [threading.Thread(target=writer)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert not errors
    assert observed
    assert all(len(o) == 1 and next(iter(o.values())) == ["a", "b"] for o in observed)
    assert index.relations_of("acme", "user:x") == {f"doc:{rounds}": ["a", "b"]}
