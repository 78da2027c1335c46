"""MemoryReads: the reference RelationReads the engine's tests and `model test` use."""

from tenantguard.relations.reads import MemoryReads, RelationReads, TupleMeta


def test_forward_and_reverse_reads_see_the_same_tuples_and_deletes() -> None:
    reads: RelationReads = MemoryReads([
        ("doc:1", "viewer", "user:anne", None),
        ("doc:2", "viewer", "user:anne", TupleMeta(condition="ip_ok", context={"cidr": "10.0.0.0/8"})),
        ("doc:1", "viewer", "user:*", None),
        ("doc:1", "viewer", "group:eng#member", TupleMeta(expires_at=100.0)),
    ])
    assert dict(reads.subjects("doc:1", "viewer")) == {
        "user:anne": None, "user:*": None, "group:eng#member": TupleMeta(expires_at=100.0)}
    assert sorted(o for o, _ in reads.objects("doc", "viewer", "user:anne")) == ["doc:1", "doc:2"]
    assert list(reads.objects("doc", "editor", "user:anne")) == []
    assert isinstance(reads, MemoryReads)
    reads.delete("doc:1", "viewer", "user:anne")
    assert [o for o, _ in reads.objects("doc", "viewer", "user:anne")] == ["doc:2"]
    assert "user:anne" not in dict(reads.subjects("doc:1", "viewer"))
    assert len(reads) == 3


def test_expiry_is_exclusive_and_absent_expiry_never_expires() -> None:
    assert not TupleMeta(expires_at=100.0).expired(99.999)
    assert TupleMeta(expires_at=100.0).expired(100.0)
    assert not TupleMeta(condition="c").expired(1e12)
