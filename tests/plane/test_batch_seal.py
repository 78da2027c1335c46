"""A replica's MAC on the batches it publishes: other replicas apply them without a second
signature check, and nothing without the replicas' key can make one (no NATS needed)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time

from tenantguard.feed import topology as topo
from tenantguard.feed.events import sign_batch
from tenantguard.identity.keys import SigningKey
from tenantguard.relations import ChangeBatch, RelationChange, Relationship

from policy_plane.idempotency import changes_digest, key_hash
from policy_plane.replicamac import BATCH_MAC_HEADER, BatchSeal, replica_key
from policy_plane.state import PlaneState

SUBJECT = topo.relations_subject(topo.DEFAULT_CELL)


def _batch(seq: int, obj: str) -> ChangeBatch:
    return ChangeBatch(seq, (RelationChange("write", Relationship("acme", obj, "member", "user:alice")),))


def _state(event_key: SigningKey) -> PlaneState:
    return PlaneState(event_key, SigningKey.generate(), max_bundle_bytes=1024)


def test_a_sealed_batch_opens_to_the_event_its_signature_holds() -> None:
    key = SigningKey.generate()
    seal = BatchSeal(key)
    data = sign_batch(key, _batch(3, "doc:a"), now=1_767_225_600.5)
    event = seal.open(data, seal.headers(data))
    assert event is not None
    assert (event.type, event.seq, event.issued_at, event.kid, event.issuer) == (
        "relations.batch", 3, 1_767_225_600.5, key.kid, "plane")
    assert event.payload["changes"][0]["rel"]["object"] == "doc:a"


def test_a_seal_opens_nothing_it_was_not_made_for() -> None:
    key = SigningKey.generate()
    seal = BatchSeal(key)
    data = sign_batch(key, _batch(1, "doc:a"), now=time.time())
    other = sign_batch(key, _batch(2, "doc:b"), now=time.time())
    genuine = seal.headers(data)
    assert seal.open(other, genuine) is None  # a header copied from another batch
    assert seal.open(data[:-1] + b" ", genuine) is None  # the bytes changed
    assert seal.open(data, {}) is None  # no header: the caller verifies the signature
    assert seal.open(data, {BATCH_MAC_HEADER: "!!not base64!!"}) is None
    assert seal.open(data, {BATCH_MAC_HEADER: ""}) is None
    assert seal.open(data, BatchSeal(SigningKey.generate()).headers(data)) is None  # another plane's replicas
    # the same secret derived for another purpose authenticates nothing here
    foreign = hmac.new(replica_key(key, b"something else v1"), data, hashlib.sha256).digest()
    assert seal.open(data, {BATCH_MAC_HEADER: base64.urlsafe_b64encode(foreign).decode()}) is None


def test_replicas_apply_each_others_sealed_batches_and_verify_the_rest() -> None:
    event_key, forger = SigningKey.generate(), SigningKey.generate()
    seal = BatchSeal(event_key)
    state = _state(event_key)
    now = time.time()
    sealed = sign_batch(event_key, _batch(1, "doc:sealed"), now=now)
    asyncio.run(state.apply_relations(SUBJECT, 1, sealed, seal.headers(sealed)))
    assert state.index.tenant("acme").check("doc:sealed", "member", "user:alice")
    # a batch from a replica that does not seal (an older version): its signature is checked
    unsealed = sign_batch(event_key, _batch(2, "doc:unsealed"), now=now)
    asyncio.run(state.apply_relations(SUBJECT, 2, unsealed, {}))
    assert state.index.applied_seq == 2
    # someone with NATS write access: a forged batch with a header copied from a genuine one, or made up
    forged = sign_batch(forger, _batch(3, "doc:forged"), now=now)
    for headers in (seal.headers(sealed), {BATCH_MAC_HEADER: base64.urlsafe_b64encode(b"x" * 32).decode()},
                    BatchSeal(forger).headers(forged)):
        asyncio.run(state.apply_relations(SUBJECT, 3, forged, headers))
    assert state.index.applied_seq == 2 and sum(state.rejected.values()) == 3
    assert not state.index.tenant("acme").check("doc:forged", "member", "user:alice")


def test_a_sealed_batch_leaves_the_state_exactly_as_verifying_it_would() -> None:
    event_key = SigningKey.generate()
    seal = BatchSeal(event_key)
    by_seal, by_signature = _state(event_key), _state(event_key)
    keys = {seq: (key_hash(f"key-{seq}", ["acme"]), changes_digest(_batch(seq, f"doc:{seq}").changes))
            for seq in (1, 2, 3)}
    for seq in (1, 2, 3):
        data = sign_batch(event_key, _batch(seq, f"doc:{seq}"), keys=(keys[seq],), now=time.time())
        asyncio.run(by_seal.apply_relations(SUBJECT, seq, data, seal.headers(data)))
        asyncio.run(by_signature.apply_relations(SUBJECT, seq, data, {}))
    assert by_seal.index.digest() == by_signature.index.digest() and by_seal.index.applied_seq == 3
    for key, _digest in keys.values():
        assert by_seal.keys.lookup(key) == by_signature.keys.lookup(key) is not None
