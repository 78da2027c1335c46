"""Whoever can publish into NATS cannot change what a sidecar believes: forgeries are dropped and counted."""

from __future__ import annotations

import json

import pytest
from tenantguard.bundle import write_archive
from tenantguard.bundle.signing import JwtSigner, digests, signatures_file
from tenantguard.feed import topology
from tenantguard.feed.events import TRUST_UPDATE, sign_batch, sign_event
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.relations import ChangeBatch, RelationChange, Relationship

from tests.harness.fleet import Fleet, decide, eventually, make_bundle, rejected
from tests.harness.stand_in_plane import TestPlane
from tests.harness.tarballs import Tar

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]

GRANT = "acme/project:p1#owner@user:mallory"
MALLORY = "acme/project:p1#member@user:mallory"


def canonical(doc: dict[str, object]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


async def test_forged_events_are_dropped_and_counted_and_genuine_ones_still_apply(
    plane: TestPlane, fleet: Fleet, plane_key: SigningKey, attacker_key: SigningKey
) -> None:
    await plane.write("acme/project:p1#member@user:alice")
    node = await fleet.start("victim")
    sidecar = node.sidecar
    await eventually(lambda: sidecar.relations.digest() == plane.digest(), "first batch")

    nxt = plane.index.applied_seq + 1
    grant = ChangeBatch(nxt, (RelationChange("write", Relationship.parse(MALLORY)),))
    wrong_key = sign_batch(attacker_key, grant)
    genuine_other = json.loads(sign_batch(plane_key, ChangeBatch(nxt, (RelationChange(
        "write", Relationship.parse("acme/project:p9#member@user:alice")),))))
    tampered = canonical({**genuine_other, "payload": json.loads(sign_batch(attacker_key, grant))["payload"]})
    unsigned = canonical({**json.loads(wrong_key), "sig": ""})
    replayed_trust = sign_event(plane_key, TRUST_UPDATE, {"jwks": TrustSet().to_jwks()}, nxt)
    for forged in (wrong_key, tampered, unsigned, replayed_trust, b"not json at all"):
        await plane.raw(topology.relations_subject("c0"), forged)
    await plane.write("acme/project:p2#member@user:alice")  # genuine, after the forgeries

    await eventually(lambda: sidecar.relations.digest() == plane.digest(), "the genuine batch despite forgeries")
    assert not decide(sidecar, "mallory", "p1").allow
    assert sidecar.relations.list("acme", subject="user:mallory") == []
    for code in ("event_unknown_key", "event_signature_invalid", "event_unsigned", "event_wrong_type",
                 "event_malformed"):
        assert rejected(sidecar, code) == 1, code
    assert sidecar.status()["feed_detail"]["events_rejected"] == 5


async def test_a_replayed_genuine_batch_is_not_applied_twice(plane: TestPlane, fleet: Fleet) -> None:
    await plane.write("acme/project:p1#member@user:alice")
    first = await plane.js.get_msg(topology.STREAM_RELATIONS, 1)
    await plane.write("acme/project:p1#member@user:alice", op="delete")
    node = await fleet.start("victim")
    await eventually(lambda: node.sidecar.relations.digest() == plane.digest(), "both batches")
    await plane.raw(topology.relations_subject("c0"), first.data or b"")  # seq 1 again: would re-grant alice
    await plane.write("acme/project:p3#member@user:bob")
    await eventually(lambda: node.sidecar.relations.digest() == plane.digest(), "the batch after the replay")
    assert not decide(node.sidecar, "alice", "p1").allow


async def test_bad_bundles_are_refused_and_the_last_good_keeps_serving(
    plane: TestPlane, fleet: Fleet, plane_key: SigningKey, bundle_key: SigningKey, attacker_key: SigningKey
) -> None:
    await plane.write("acme/project:p1#member@user:alice")
    node = await fleet.start("victim")
    sidecar = node.sidecar
    await plane.bundle(make_bundle(bundle_key, 2), "2")
    await eventually(lambda: sidecar.bundle_revision == "2", "revision 2 active")

    def refused(code: str) -> float:
        return sidecar.metrics.registry.get_sample_value("tg_bundles_rejected_total", {"code": code}) or 0.0

    good3 = make_bundle(bundle_key, 3)
    swapped = good3[:-9] + bytes([good3[-9] ^ 1]) + good3[-8:]  # same size, other bytes
    await plane.bundle(swapped, "3", announced=good3)
    await eventually(lambda: refused("event_digest_mismatch") == 1, "bytes unlike the announce refused")
    await plane.bundle(make_bundle(attacker_key, 4), "4")  # announced faithfully, signed by the wrong key
    await eventually(lambda: refused("bundle_unknown_key") == 1, "a bundle signed by another key refused")
    await plane.bundle(make_bundle(bundle_key, 1, note="\n# old\n"), "1-again")  # a genuine, older revision
    await eventually(lambda: refused("bundle_rollback") == 1, "the rollback refused")
    # Key separation: the plane's event key signs events, never bundles; a leak of one forges neither.
    await plane.bundle(make_bundle(plane_key, 5), "5")
    await eventually(lambda: refused("bundle_unknown_key") == 2, "a bundle signed by the event key refused")

    assert sidecar.bundle_revision == "2"
    assert decide(sidecar, "alice", "p1").allow


def signed_by_hand(key: SigningKey, files: dict[str, bytes]) -> bytes:
    """A bundle signed with ``key`` over exactly ``files``, past build_bundle's own checks."""
    files = {name: content for name, content in files.items() if name != ".signatures.json"}
    return write_archive({**files, ".signatures.json": signatures_file(JwtSigner(key).sign(digests(files)))})


async def test_genuinely_signed_bundles_that_mean_more_than_was_reviewed_are_refused(
    plane: TestPlane, fleet: Fleet, bundle_key: SigningKey
) -> None:
    """Signed with the real bundle key, announced faithfully: data that shadows the ``decision``
    rule (regorus would answer the data: allow for everyone), and a data.json swapped under a
    genuine signature for bytes with the same canonical digest (a second key via a lone surrogate)."""
    await plane.write("acme/project:p1#member@user:alice")
    node = await fleet.start("victim")
    sidecar = node.sidecar
    await eventually(lambda: sidecar.bundle_revision == "1", "revision 1 active")

    def refused(code: str) -> float:
        return sidecar.metrics.registry.get_sample_value("tg_bundles_rejected_total", {"code": code}) or 0.0

    base = Tar.unpack(make_bundle(bundle_key, 2))
    allow_all = b'{"allow": true, "reasons": [], "high_risk": false}'
    await plane.bundle(signed_by_hand(bundle_key, {**base, "feedtest/decision/data.json": allow_all}), "2")
    await eventually(lambda: refused("bundle_malformed") == 1, "data shadowing the decision rule refused")

    genuine = {**base, "feedtest/data.json": b'{"\\ufffd": 1}'}
    archive = signed_by_hand(bundle_key, genuine)
    swapped = {**Tar.unpack(archive), "feedtest/data.json": b'{"\\ud800": {"decision": 1}, "\\ufffd": 1}'}
    await plane.bundle(write_archive(swapped), "3")
    await eventually(lambda: refused("bundle_malformed") == 2, "a same-digest swap of data.json refused")

    assert sidecar.bundle_revision == "1"
    assert not decide(sidecar, "mallory", "p1").allow
    assert decide(sidecar, "alice", "p1").allow


async def test_only_the_configured_event_key_signs_events_whatever_the_trust_set_says(
    plane: TestPlane, fleet: Fleet, plane_key: SigningKey, bundle_key: SigningKey, attacker_key: SigningKey
) -> None:
    """Key purpose: the bundle key (trusted for bundles) signs no event; a trust update that lists its
    own signing key as a ``plane`` key is not believed for it; a genuine trust update that drops the
    plane's event key from the token trust set does not stop the feed (events verify with
    ``--plane-key`` only, never with keys a trust update adds or removes)."""
    await plane.write("acme/project:p1#member@user:alice")
    node = await fleet.start("victim")
    sidecar = node.sidecar
    await eventually(lambda: sidecar.relations.digest() == plane.digest(), "first batch")

    nxt = plane.index.applied_seq + 1
    grant = ChangeBatch(nxt, (RelationChange("write", Relationship.parse(MALLORY)),))
    await plane.raw(topology.relations_subject("c0"), sign_batch(bundle_key, grant))
    self_trusting = TrustSet()
    self_trusting.add_public_key(attacker_key.public_key, "plane")
    await plane.raw(topology.SUBJECT_TRUST, sign_event(attacker_key, TRUST_UPDATE,
                                                       {"jwks": self_trusting.to_jwks()}, 99))
    await eventually(lambda: rejected(sidecar, "event_unknown_key") == 2, "both refused")
    assert attacker_key.kid not in sidecar.trust

    await plane.trust(TrustSet())  # genuine: the token trust set no longer lists any plane key
    await eventually(lambda: node.feed.trust.seq == 1, "genuine trust update applied")
    await plane.write("acme/project:p2#member@user:alice")
    await eventually(lambda: sidecar.relations.digest() == plane.digest(), "the feed goes on")
    assert not decide(sidecar, "mallory", "p1").allow
