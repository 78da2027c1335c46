"""Versions only move forward at a sidecar, cold or warm, whatever message the broker holds last.

Each test replays genuine, plane-signed events that were superseded (the attacker needs no
key, only NATS write access) and checks that neither a running sidecar, nor one started
afterwards with an empty state directory, nor one restarted from its persisted state, goes
back. The heartbeat tests try the freeze attack: a sidecar fed nothing new, or only old
heartbeats, must say so and refuse high-risk actions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time

import pytest
from tenantguard.errors import TokenError
from tenantguard.feed import topology
from tenantguard.feed.events import BUNDLE_ANNOUNCE, sign_event
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import mint

from tests.harness.fleet import FAST, Fleet, decide, eventually, eventually_async, make_bundle, rejected
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]


def _trust(*keys: SigningKey) -> TrustSet:
    trust = TrustSet()
    for key in keys:
        trust.add_public_key(key.public_key, "edge")
    return trust


def _accepts(node_sidecar: object, key: SigningKey) -> bool:
    token = mint(key, issuer="edge", sub="alice", tenant_id="acme", audience="billing")
    try:
        return node_sidecar.authenticate(f"Bearer {token}") is not None  # type: ignore[attr-defined]
    except TokenError:
        return False


async def _stored(plane: TestPlane, stream: str, subject: str) -> list[bytes]:
    info = await plane.js.stream_info(stream)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await plane.js.get_msg(stream, seq)
        if msg.subject == subject:
            out.append(msg.data or b"")
    return out


async def test_a_cold_sidecar_takes_the_newest_trust_set_not_the_replayed_last_message(
    plane: TestPlane, fleet: Fleet
) -> None:
    kept, leaked = SigningKey.generate(), SigningKey.generate()
    await plane.trust(_trust(kept))
    await plane.trust(_trust(kept, leaked))
    await plane.trust(_trust(kept))  # the leaked key is removed: seq 3
    with_leaked = (await _stored(plane, topology.STREAM_TRUST, topology.SUBJECT_TRUST))[1]
    warm = await fleet.start("warm")
    await eventually(lambda: warm.feed.trust.seq == 3, "trust 3 at the running sidecar")

    await plane.raw(topology.SUBJECT_TRUST, with_leaked)  # seq 2 is now the last message stored
    cold = await fleet.start("cold")
    await eventually(lambda: cold.feed.trust.seq == 3, "trust 3 at the cold sidecar")
    for node in (warm, cold):
        assert _accepts(node.sidecar, kept) and not _accepts(node.sidecar, leaked)
    # the cold sidecar never passed through an older trust set on its way: one application
    assert cold.sidecar.metrics.registry.get_sample_value("tg_events_applied_total", {"kind": "trust"}) == 1

    later = SigningKey.generate()
    await plane.trust(_trust(kept, later))  # seq 4 still reaches both
    await eventually(lambda: warm.feed.trust.seq == cold.feed.trust.seq == 4, "trust 4 everywhere")
    assert all(_accepts(n.sidecar, later) for n in (warm, cold))


async def test_a_cold_sidecar_runs_the_newest_bundle_not_a_replayed_announce(
    plane: TestPlane, fleet: Fleet, bundle_key: SigningKey
) -> None:
    await plane.bundle(make_bundle(bundle_key, 2), "2")
    [_, old_announce, _] = [*await _stored(plane, topology.STREAM_BUNDLES, topology.bundle_subject("all")), b""]
    await plane.bundle(make_bundle(bundle_key, 3), "3")
    await plane.raw(topology.bundle_subject("all"), old_announce)  # revision 2's announce, stored last
    cold = await fleet.start("cold")
    await eventually(lambda: cold.sidecar.bundle_revision == "3", "revision 3 at the cold sidecar")
    assert [b.seq for b in cold.feed.bundles if b.scope == "all"] == [3]


async def test_an_announce_replayed_onto_another_scope_is_refused(
    plane: TestPlane, fleet: Fleet, bundle_key: SigningKey, plane_key: SigningKey
) -> None:
    node = await fleet.start("scoped")
    await eventually(lambda: node.sidecar.bundle_revision == "1", "revision 1")
    archive = make_bundle(bundle_key, 7)
    store = await plane.js.object_store(topology.BUCKET_BUNDLES)
    await store.put("bundles/orders/7", archive)
    # genuine, plane-signed, for scope orders but naming billing too, with a seq billing has never seen
    payload = {"scope": "orders", "revision": "7", "sha256": hashlib.sha256(archive).hexdigest(),
               "size": len(archive), "object": "bundles/orders/7", "services": ["billing", "orders"]}
    await plane.raw(topology.bundle_subject("billing"), sign_event(plane_key, BUNDLE_ANNOUNCE, payload, 50))
    await eventually(lambda: rejected(node.sidecar, "event_malformed") == 1, "the misplaced announce refused")
    assert node.sidecar.bundle_revision == "1"


async def test_a_restarted_sidecar_refuses_announces_older_than_it_persisted(
    plane: TestPlane, fleet: Fleet, bundle_key: SigningKey
) -> None:
    await plane.bundle(make_bundle(bundle_key, 2), "2")  # announce seq 2
    node = await fleet.start("persisted")
    await eventually(lambda: node.sidecar.bundle_revision == "2", "revision 2")
    await fleet.stop(node)
    first = (await _stored(plane, topology.STREAM_BUNDLES, topology.bundle_subject("all")))[0]
    await plane.js.purge_stream(topology.STREAM_BUNDLES)  # an attacker deletes the newest ...
    await plane.raw(topology.bundle_subject("all"), first)  # ... and leaves announce 1 (revision 1)

    back = await fleet.start("persisted")
    await eventually(lambda: back.sidecar.feed_state == "live", "live again")
    await eventually(lambda: back.sidecar.metrics.registry.get_sample_value(
        "tg_events_duplicate_total", {"kind": "bundle:all"}) == 1, "the old announce seen and skipped")
    assert back.feed.bundles[0].seq == 2 and back.sidecar.bundle_revision == "2"


async def test_an_expired_heartbeat_is_refused_and_does_not_make_a_sidecar_fresh(
    plane: TestPlane, fleet: Fleet
) -> None:
    await plane.write("acme/project:p1#member@user:alice")
    node = await fleet.start("freeze", max_staleness_seconds=30)
    await eventually(lambda: node.sidecar.relations.applied_seq == 1 and node.sidecar.bundle_revision == "1",
                     "caught up")
    # captured an hour ago, replayed now: genuine signature, expired
    await plane.heartbeat(issued_at=time.time() - 3600, validity=30)
    await eventually(lambda: rejected(node.sidecar, "event_expired") == 1, "the stale heartbeat refused")
    assert node.feed.plane.heartbeats == 0
    delete = decide(node.sidecar, "alice", "p1", action="delete")
    assert delete.reasons == ("high_risk_unconfirmed",)
    assert node.sidecar.status()["feed_detail"]["heartbeat"]["believable"] is False

    await plane.heartbeat(validity=2.0)  # a believable heartbeat confirms ...
    await eventually(lambda: decide(node.sidecar, "alice", "p1", action="delete").allow, "confirmed")
    # ... until it expires with nothing new behind it: a freeze, reported and refused
    await eventually(lambda: not node.feed.plane.believable(time.time()), "the heartbeat expires")
    assert decide(node.sidecar, "alice", "p1", action="delete").reasons == ("high_risk_unconfirmed",)
    assert decide(node.sidecar, "alice", "p1").allow  # ordinary decisions go on from local state


async def test_a_sidecar_behind_the_heartbeat_reports_it_and_refuses_high_risk(
    plane: TestPlane, fleet: Fleet
) -> None:
    await plane.write("acme/project:p1#member@user:alice")
    options = dataclasses.replace(FAST, lag_grace=0.2)
    node = await fleet.start("behind", options=options, max_staleness_seconds=30)
    await eventually(lambda: node.sidecar.relations.applied_seq == 1 and node.sidecar.bundle_revision == "1",
                     "caught up")

    async def confirmed() -> bool:
        await plane.heartbeat()
        return decide(node.sidecar, "alice", "p1", action="delete").allow

    await eventually_async(confirmed, "in step with the plane")
    # the plane says trust is at 5, but the broker (an attacker) delivered nothing past 0
    later = node.feed.plane.issued_at + 0.5  # strictly newer than the last one taken (ms resolution)
    await plane.heartbeat(trust_seq=5, issued_at=later)
    await eventually(lambda: "trust" in node.feed.lagging(), "trust reported lagging")
    assert node.sidecar.status()["feed_detail"]["lagging"] == {"trust": {"applied_seq": 0, "plane_seq": 5}}
    assert decide(node.sidecar, "alice", "p1", action="delete").reasons == ("high_risk_unconfirmed",)
    assert decide(node.sidecar, "alice", "p1").allow


async def test_an_announced_bundle_whose_bytes_were_swapped_leaves_the_sidecar_lagging(
    plane: TestPlane, fleet: Fleet, bundle_key: SigningKey
) -> None:
    """Whoever can write the object store can swap (or delete) the bytes behind every new announce:
    each is refused (digest mismatch), so the sidecar keeps the old policy. It must not count such
    an announce as applied, or it would report itself in step with the plane while frozen on the
    old bundle, and keep confirming high-risk actions."""
    await plane.write("acme/project:p1#member@user:alice")
    options = dataclasses.replace(FAST, lag_grace=0.2)
    node = await fleet.start("swapped", options=options, max_staleness_seconds=30)
    await eventually(lambda: node.sidecar.bundle_revision == "1", "revision 1 active")

    async def confirmed() -> bool:
        await plane.heartbeat()
        return decide(node.sidecar, "alice", "p1", action="delete").allow

    await eventually_async(confirmed, "in step with the plane")
    good = make_bundle(bundle_key, 2)
    swapped = good[:-9] + bytes([good[-9] ^ 1]) + good[-8:]
    await plane.bundle(swapped, "2", announced=good)
    await eventually(lambda: (node.sidecar.metrics.registry.get_sample_value(
        "tg_bundles_rejected_total", {"code": "event_digest_mismatch"}) or 0) == 1, "the swapped bytes refused")
    await plane.heartbeat(issued_at=node.feed.plane.issued_at + 0.5)  # declares announce 2 of scope all
    await eventually(lambda: "bundle:all" in node.feed.lagging(), "the bundle stream reported lagging")
    assert decide(node.sidecar, "alice", "p1", action="delete").reasons == ("high_risk_unconfirmed",)
    assert decide(node.sidecar, "alice", "p1").allow
    assert node.sidecar.bundle_revision == "1"

    await plane.bundle(make_bundle(bundle_key, 3), "3")  # the next genuine announce catches up
    await eventually(lambda: node.sidecar.bundle_revision == "3", "revision 3 active")
    await eventually_async(confirmed, "in step again")
