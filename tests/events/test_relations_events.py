"""Signed relations batches and snapshot manifests, applied the way a sidecar applies them."""

from __future__ import annotations

import json

import pytest
from tenantguard.feed.events import (
    RELATIONS_BATCH,
    RELATIONS_SNAPSHOT,
    TRUST_UPDATE,
    EventDigestMismatch,
    EventMalformed,
    EventSignatureInvalid,
    EventUnknownKey,
    EventWrongType,
    SnapshotManifest,
    batch_from_event,
    sign_batch,
    sign_event,
    sign_snapshot_manifest,
    verify_batch,
    verify_event,
    verify_snapshot_manifest,
)
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.relations import (
    MAX_BATCH_CHANGES,
    ChangeBatch,
    RelationChange,
    RelationIndex,
    Relationship,
    index_from_snapshot_bytes,
    snapshot_bytes,
)

NOW = 1767225600.0


def batch(seq: int, *tuples: str, op: str = "write") -> ChangeBatch:
    return ChangeBatch(seq, tuple(RelationChange(op, Relationship.parse(t)) for t in tuples))


def test_batch_round_trip_states_seq_once(plane_key: SigningKey, trust: TrustSet) -> None:
    original = batch(9, "acme / project:p1#member @ user:alice@example.com", "acme / group:eng#member @ user:bob")
    data = sign_batch(plane_key, original, now=NOW)
    assert json.loads(data)["payload"].keys() == {"cell", "changes"}
    assert verify_batch(data, trust) == original
    assert batch_from_event(verify_event(data, trust)) == original


@pytest.mark.parametrize(("cell", "keys"), [
    ("c0", ()),
    ("c17", [("0f" * 16, "a1" * 16), ("1e" * 16, "b2" * 16)]),
])
def test_a_batch_is_signed_as_the_general_event_signer_would_byte_for_byte(
        plane_key: SigningKey, trust: TrustSet, cell: str, keys: list[tuple[str, str]]) -> None:
    """``sign_batch`` skips the canonical round trip for plain batches: same bytes (Ed25519 is deterministic)."""
    for original in (batch(1, "acme / doc:x#viewer @ user:a"),
                     batch(2**40, "z9 / a_b:A-Z.0@+=|_#r_1 @ group:g-1#member", "acme / doc:1#owner @ user:u",
                           op="delete"),
                     batch(7, *(f"acme / project:p{i}#member @ user:u{i}@example.com" for i in range(50)))):
        payload: dict[str, object] = {"cell": cell, "changes": original.to_wire()["changes"]}
        if keys:
            payload["keys"] = [list(pair) for pair in keys]
        signed = sign_batch(plane_key, original, cell=cell, keys=keys, now=NOW)
        assert signed == sign_event(plane_key, RELATIONS_BATCH, payload, original.seq, now=NOW)
        assert batch_from_event(verify_event(signed, trust), cell=cell) == original


def test_a_batch_with_unusual_cell_or_keys_takes_the_checked_path(plane_key: SigningKey, trust: TrustSet) -> None:
    original = batch(3, "acme / doc:x#viewer @ user:a")
    odd = sign_batch(plane_key, original, cell="c0", keys=[("ключ", "x")], now=NOW)  # not plain: sign_event's path
    assert verify_event(odd, trust).payload["keys"] == [["ключ", "x"]]
    with pytest.raises(EventMalformed):
        sign_batch(plane_key, original, keys=[("\ud800", "x"), ("a", 1)])  # type: ignore[list-item]


def test_largest_batch_fits_the_default_limit(plane_key: SigningKey, trust: TrustSet) -> None:
    big = batch(1, *(f"acme / project:p{i}#member @ user:u{i}@example.com" for i in range(MAX_BATCH_CHANGES)))
    assert verify_batch(sign_batch(plane_key, big), trust) == big


def test_forged_batch_is_never_applied(attacker_key: SigningKey, plane_key: SigningKey, trust: TrustSet) -> None:
    index = RelationIndex()
    grant = batch(1, "acme / project:p1#owner @ user:mallory")
    for forged in (sign_batch(attacker_key, grant), sign_batch(plane_key, grant)[:-30] + b'"' * 30):
        with pytest.raises((EventUnknownKey, EventSignatureInvalid, EventMalformed)):
            index.apply(verify_batch(forged, trust))
    assert index.count() == 0


def test_replayed_batch_is_ignored_by_the_index(plane_key: SigningKey, trust: TrustSet) -> None:
    index = RelationIndex()
    first = sign_batch(plane_key, batch(1, "acme / project:p1#member @ user:alice"))
    revoke = sign_batch(plane_key, batch(2, "acme / project:p1#member @ user:alice", op="delete"))
    assert index.apply(verify_batch(first, trust))
    assert index.apply(verify_batch(revoke, trust))
    assert not index.apply(verify_batch(first, trust))  # genuine, but seq 1 <= applied: no effect
    assert not index.check("acme", "project:p1", "member", "user:alice")


def test_other_event_types_are_not_batches(plane_key: SigningKey, trust: TrustSet) -> None:
    data = sign_event(plane_key, TRUST_UPDATE, {"changes": []}, 1)
    with pytest.raises(EventWrongType):
        verify_batch(data, trust)
    with pytest.raises(EventWrongType):
        batch_from_event(verify_event(data, trust))


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"changes": "no"},
        {"changes": [{"op": "grant", "rel": {}}]},
        {"changes": [{"op": "write", "rel": {"tenant": "ACME", "object": "p:1", "relation": "r", "subject": "u:1"}}]},
        {"changes": [{"op": "delete"}] * (MAX_BATCH_CHANGES + 1)},
    ],
    ids=["no-changes", "not-a-list", "bad-op", "bad-tuple", "too-many"],
)
def test_genuine_but_unparseable_batch_is_malformed(plane_key: SigningKey, trust: TrustSet, payload: dict) -> None:
    data = sign_event(plane_key, RELATIONS_BATCH, payload, 3)
    with pytest.raises(EventMalformed) as caught:
        verify_batch(data, trust)
    assert caught.value.detail["cause"] in {"change_batch_invalid", "change_batch_too_large", "relationship_invalid"}


# --------------------------------------------------------------------------- snapshots


@pytest.fixture
def snapshot() -> bytes:
    index = RelationIndex()
    index.apply(batch(1, "acme / project:p1#viewer @ group:eng#member", "acme / group:eng#member @ user:alice"))
    index.apply(batch(2, "globex / project:p9#owner @ user:carol"))
    return snapshot_bytes(index)


def test_snapshot_manifest_round_trip_and_load(plane_key: SigningKey, trust: TrustSet, snapshot: bytes) -> None:
    data = sign_snapshot_manifest(plane_key, snapshot, now=NOW)
    assert json.loads(data)["payload"].keys() == {"cell", "count", "size", "sha256"}
    manifest = verify_snapshot_manifest(data, trust)
    assert (manifest.seq, manifest.count, manifest.size, manifest.kid) == (2, 3, len(snapshot), plane_key.kid)
    header = manifest.check(snapshot)
    assert (header.seq, header.count) == (2, 3)
    index = index_from_snapshot_bytes(snapshot)
    assert index.check("acme", "project:p1", "viewer", "user:alice")


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda s: s[:-1],
        lambda s: s + b"\0",
        lambda s: s[:-1] + bytes([s[-1] ^ 1]),
        lambda s: s.replace(b'"seq":2', b'"seq":3'),
    ],
    ids=["truncated", "padded", "flipped-bit", "header-edited"],
)
def test_bytes_that_are_not_the_signed_snapshot_are_refused(
    plane_key: SigningKey, trust: TrustSet, snapshot: bytes, corrupt: object
) -> None:
    manifest = verify_snapshot_manifest(sign_snapshot_manifest(plane_key, snapshot), trust)
    with pytest.raises(EventDigestMismatch) as caught:
        manifest.check(corrupt(snapshot))  # type: ignore[operator]
    assert caught.value.code == "event_digest_mismatch"


def test_manifest_must_agree_with_the_snapshot_header(snapshot: bytes) -> None:
    from tenantguard.relations import snapshot_digest

    lying = SnapshotManifest(seq=7, count=3, size=len(snapshot), sha256=snapshot_digest(snapshot), issued_at=0, kid="k")
    with pytest.raises(EventMalformed, match="disagrees"):
        lying.check(snapshot)


def test_refuses_to_sign_an_invalid_snapshot(plane_key: SigningKey, snapshot: bytes) -> None:
    with pytest.raises(EventMalformed):
        sign_snapshot_manifest(plane_key, snapshot[:-1])


@pytest.mark.parametrize(
    "payload",
    [{}, {"count": 1, "size": 2, "sha256": "AB" * 32}, {"count": -1, "size": 2, "sha256": "ab" * 32}],
)
def test_bad_manifest_payload_is_malformed(plane_key: SigningKey, trust: TrustSet, payload: dict) -> None:
    with pytest.raises(EventMalformed):
        verify_snapshot_manifest(sign_event(plane_key, RELATIONS_SNAPSHOT, payload, 1), trust)


def test_a_batch_is_not_a_snapshot_manifest(plane_key: SigningKey, trust: TrustSet) -> None:
    with pytest.raises(EventWrongType):
        verify_snapshot_manifest(sign_batch(plane_key, batch(1, "acme / p:1#r @ u:1")), trust)


def test_batches_and_manifests_are_bound_to_their_cell(plane_key: SigningKey, trust: TrustSet,
                                                       snapshot: bytes) -> None:
    """A genuine event of one tenant cell is refused where another cell's is expected (each cell has
    its own sequence, so a replay across cells would otherwise apply)."""
    from tenantguard.feed.events import EventWrongCell

    data = sign_batch(plane_key, batch(1, "acme / project:p1#member @ user:alice"), cell="c3")
    assert verify_batch(data, trust, cell="c3").seq == 1
    with pytest.raises(EventWrongCell):
        verify_batch(data, trust, cell="c0")
    manifest = sign_snapshot_manifest(plane_key, snapshot, cell="c3")
    assert verify_snapshot_manifest(manifest, trust, cell="c3").cell == "c3"
    with pytest.raises(EventWrongCell):
        verify_snapshot_manifest(manifest, trust, cell="c0")
