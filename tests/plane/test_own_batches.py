"""A replica applies the batch it published from what it signed, and verifies everything else (no NATS needed)."""

from __future__ import annotations

import asyncio
import time

from tenantguard.feed import topology as topo
from tenantguard.feed.events import sign_batch
from tenantguard.identity.keys import SigningKey
from tenantguard.relations import ChangeBatch, RelationChange, Relationship

from policy_plane.idempotency import changes_digest, key_hash
from policy_plane.state import OwnBatch, PlaneState

SUBJECT = topo.relations_subject(topo.DEFAULT_CELL)


def _batch(seq: int, obj: str) -> ChangeBatch:
    return ChangeBatch(seq, (RelationChange("write", Relationship("acme", obj, "member", "user:alice")),))


def _signed(key: SigningKey, batch: ChangeBatch, now: float) -> tuple[bytes, OwnBatch]:
    keys = ((key_hash(f"key-{batch.seq}", ["acme"]), changes_digest(batch.changes)),)
    data = sign_batch(key, batch, keys=keys, now=now)
    return data, OwnBatch(data, batch, keys, int(now * 1000) / 1000)


def test_an_own_batch_leaves_the_state_exactly_as_verifying_it_would() -> None:
    event_key, bundle_key = SigningKey.generate(), SigningKey.generate()
    writer, reader = (PlaneState(event_key, bundle_key, max_bundle_bytes=1024) for _ in range(2))
    now = time.time()
    for seq in (1, 2, 3):
        data, own = _signed(event_key, _batch(seq, f"doc:{seq}"), now)
        writer.expect_own(SUBJECT, own)
        asyncio.run(writer.apply_relations(SUBJECT, seq, data, {}))  # from what it signed
        asyncio.run(reader.apply_relations(SUBJECT, seq, data, {}))  # verified, parsed
    assert writer.index.digest() == reader.index.digest() and writer.index.applied_seq == 3
    for seq in (1, 2, 3):
        k = key_hash(f"key-{seq}", ["acme"])
        assert writer.keys.lookup(k) == reader.keys.lookup(k) is not None


def test_other_bytes_on_the_subject_are_verified_while_an_own_batch_is_expected() -> None:
    event_key, bundle_key, forger = SigningKey.generate(), SigningKey.generate(), SigningKey.generate()
    state = PlaneState(event_key, bundle_key, max_bundle_bytes=1024)
    now = time.time()
    data, own = _signed(event_key, _batch(1, "doc:mine"), now)
    state.expect_own(SUBJECT, own)
    forged = sign_batch(forger, _batch(1, "doc:forged"), now=now)
    asyncio.run(state.apply_relations(SUBJECT, 1, forged, {}))  # not the expected bytes: verified, refused
    assert state.index.applied_seq == 0 and sum(state.rejected.values()) == 1
    truncated = data[:-2] + b"}}"  # almost the expected bytes
    asyncio.run(state.apply_relations(SUBJECT, 2, truncated, {}))
    assert state.index.applied_seq == 0 and sum(state.rejected.values()) == 2
    asyncio.run(state.apply_relations(SUBJECT, 3, data, {}))  # the genuine one still applies
    assert state.index.applied_seq == 1
    assert state.index.tenant("acme").check("doc:mine", "member", "user:alice")
    asyncio.run(state.apply_relations(SUBJECT, 4, data, {}))  # a replay of it: verified, already applied
    assert state.index.applied_seq == 1 and sum(state.rejected.values()) == 2
