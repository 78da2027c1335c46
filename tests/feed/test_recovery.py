"""Cold start without NATS, purged streams, freshness: the feed's recovery paths."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import topology
from tenantguard.identity.keys import SigningKey

from authz_sidecar.app import create_app
from authz_sidecar.feed import FeedOptions
from tests.harness.fleet import FAST, Fleet, decide, eventually, eventually_async, question, rejected
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]


async def test_restart_with_nats_down_restores_the_persisted_state_but_decides_nothing(
    plane: TestPlane, fleet: Fleet, nats_server: NatsServer
) -> None:
    for i in range(5):
        await plane.write(f"acme/project:p{i}#member@user:alice")
    await plane.revoke({"kind": "tenant", "tenant": "globex"})
    node = await fleet.start("cold")
    await eventually(lambda: node.sidecar.relations.digest() == plane.digest() and node.feed.revocations.seq == 1
                     and node.sidecar.bundle_revision == "1", "caught up")
    await fleet.stop(node)  # persists on shutdown
    await plane.close()
    nats_server.kill()

    again = await fleet.start("cold")
    assert again.sidecar.relations.digest() == plane.digest()  # before any connection could succeed
    assert again.sidecar.bundle_revision == "1"
    assert "globex" in again.sidecar.revocations.tenants  # the persisted kill switch is restored too
    await eventually(lambda: again.feed.last_error is not None, "a failed connect attempt")
    assert again.sidecar.feed_state in ("connecting", "disconnected")
    # The state is there, but revocations published while it was down cannot be known without
    # NATS: a restarted sidecar stays not ready and denies everything until it has replayed them.
    assert not again.sidecar.ready
    assert decide(again.sidecar, "alice", "p4").reasons == ("revocations_not_synced",)
    assert decide(again.sidecar, "mallory", "p1", tenant="globex").reasons == ("revocations_not_synced",)


async def test_periodic_persistence_writes_while_running(plane: TestPlane, fleet: Fleet) -> None:
    node = await fleet.start("periodic", options=FeedOptions(**{**_fields(FAST), "persist_interval": 0.05}))
    seq = await plane.write("acme/project:p1#member@user:alice")
    await eventually(lambda: node.feed.status()["persisted_relations_seq"] == seq, "a periodic snapshot")
    assert (node.state_dir / "feed" / "relations.snapshot").is_file()


async def test_stream_purged_below_the_needed_seq_forces_a_snapshot_resync(
    plane: TestPlane, fleet: Fleet
) -> None:
    for i in range(3):
        await plane.write(f"acme/project:p{i}#member@user:alice")
    node = await fleet.start("lagging")
    await eventually(lambda: node.sidecar.relations.applied_seq == 3, "seq 3")
    await fleet.stop(node)
    for i in range(3, 8):
        await plane.write(f"acme/project:p{i}#member@user:bob")
    await plane.snapshot()  # seq 8
    await plane.write("acme/project:p8#member@user:carol")
    await plane.write("acme/project:p9#member@user:carol")
    await plane.js.purge_stream(topology.STREAM_RELATIONS, keep=2)  # only 9 and 10 remain

    back = await fleet.start("lagging")
    assert back.sidecar.relations.applied_seq == 3  # its persisted state
    await eventually(lambda: back.sidecar.relations.digest() == plane.digest(), "resynced through the snapshot")
    assert back.feed.metrics.resyncs._value.get() == 1
    # the bundle is fetched by its own follower, not ordered with the relations resync
    await eventually(lambda: back.sidecar.bundle_revision is not None, "bundle active")
    assert decide(back.sidecar, "bob", "p7").allow and decide(back.sidecar, "carol", "p9").allow


async def test_purge_while_connected_then_gap_resyncs_live(plane: TestPlane, fleet: Fleet) -> None:
    node = await fleet.start("live")
    await plane.write("acme/project:p0#member@user:alice")
    await eventually(lambda: node.sidecar.relations.applied_seq == 1, "seq 1")
    # Batches the sidecar never sees: the plane publishes them and they age out before delivery
    # (simulated by purging right after publishing while the sidecar's consumer is cut off).
    await fleet.stop(node)
    await plane.write("acme/project:p1#member@user:bob")
    await plane.snapshot()
    await plane.js.purge_stream(topology.STREAM_RELATIONS)  # empty: everything is in the snapshot
    back = await fleet.start("live")
    await eventually(lambda: back.sidecar.relations.digest() == plane.digest(), "resync from an empty stream")
    await plane.write("acme/project:p2#member@user:carol")
    await eventually(lambda: back.sidecar.relations.digest() == plane.digest(), "live after the resync")


async def test_a_snapshot_unlike_its_manifest_is_refused(plane: TestPlane, fleet: Fleet) -> None:
    await plane.write("acme/project:p1#member@user:alice")
    seq = await plane.snapshot()
    store = await plane.js.object_store(topology.BUCKET_SNAPSHOTS)
    data = (await store.get(topology.snapshot_object(seq))).data or b""
    await store.put(topology.snapshot_object(seq), data[:-1] + bytes([data[-1] ^ 1]))  # same size, other bytes
    await plane.js.purge_stream(topology.STREAM_RELATIONS)
    node = await fleet.start("fresh")
    await eventually(lambda: rejected(node.sidecar, "event_digest_mismatch") >= 1, "the bad snapshot refused")
    assert node.sidecar.relations.applied_seq == 0
    assert node.sidecar.feed_state == "resyncing"
    await plane.write("acme/project:p2#member@user:alice")
    await plane.snapshot()  # a good one: the feed recovers by itself
    await eventually(lambda: node.sidecar.relations.digest() == plane.digest(), "recovered from a good snapshot")


async def test_at_least_waits_for_a_sequence_published_a_moment_later(plane: TestPlane, fleet: Fleet) -> None:
    node = await fleet.start("waiter", max_wait_ms=10_000)
    await eventually(lambda: node.sidecar.feed_state == "live" and node.sidecar.bundle_revision == "1", "live")
    transport = httpx.ASGITransport(app=create_app(node.sidecar))
    async with httpx.AsyncClient(transport=transport, base_url="http://sidecar") as client:
        wanted = plane.index.applied_seq + 1
        check = asyncio.create_task(client.post("/v1/check", json={**question("alice", "p1"), "at_least": wanted}))
        await eventually(lambda: len(node.sidecar._seq_changed._waiters or ()) == 1, "the check waiting")
        assert node.sidecar.relations.applied_seq < wanted
        assert await plane.write("acme/project:p1#member@user:alice") == wanted
        response = await check
    body = response.json()
    assert response.status_code == 200 and body["allow"] is True and body["relations_seq"] == wanted


async def test_high_risk_fails_closed_when_stale_or_disconnected(
    plane: TestPlane, fleet: Fleet, nats_server: NatsServer, plane_key: SigningKey
) -> None:
    await plane.write("acme/project:p1#member@user:alice")
    node = await fleet.start("risky", max_staleness_seconds=0.2)
    sidecar = node.sidecar
    await eventually(lambda: sidecar.relations.applied_seq == 1 and sidecar.bundle_revision == "1", "caught up")
    await eventually(lambda: sidecar.staleness() > 0.2, "staleness beyond the bound (no heartbeats)")
    assert decide(sidecar, "alice", "p1").allow  # ordinary actions go on
    assert decide(sidecar, "alice", "p1", action="delete").reasons == ("high_risk_unconfirmed",)

    beat = 0

    async def heartbeat_confirms() -> bool:
        nonlocal beat
        beat += 1
        await plane.heartbeat(beat)
        return decide(sidecar, "alice", "p1", action="delete").allow

    await eventually_async(heartbeat_confirms, "a heartbeat showing the sidecar in step")
    status = sidecar.status()
    assert status["feed_detail"]["relations"]["plane_seq"] == 1 and status["feed_detail"]["heartbeat"]["received"]

    nats_server.kill()
    await eventually(lambda: sidecar.feed_state != "live", "the feed notices")
    assert decide(sidecar, "alice", "p1", action="delete").reasons == ("high_risk_unconfirmed",)
    assert decide(sidecar, "alice", "p1").allow


async def test_a_replayed_old_heartbeat_does_not_refresh(plane: TestPlane, fleet: Fleet) -> None:
    node = await fleet.start("hb")
    await eventually(lambda: node.sidecar.feed_state == "live", "live")
    await plane.heartbeat(5)
    await eventually(lambda: node.feed.plane.heartbeats == 1, "first heartbeat")
    accepted_at = node.feed.plane.issued_at
    await plane.nc.publish(topology.SUBJECT_HEARTBEAT, b"{}")  # not even an event
    await eventually(lambda: rejected(node.sidecar, "event_unsigned") == 1, "unsigned heartbeat dropped")
    assert node.feed.plane.issued_at == accepted_at


def _fields(options: FeedOptions) -> dict[str, object]:
    return {name: getattr(options, name) for name in options.__dataclass_fields__}
