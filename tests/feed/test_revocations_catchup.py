"""A sidecar fed over NATS is not caught up until its revocations are replayed to the stream's end.

Until the revocations consumer has applied everything up to the stream's last sequence as
JetStream reported it at (re)subscribe, a revoked token must never be allowed: every decision
is denied ``revocations_not_synced``, ``/ready`` is 503 with that reason, search and lookup
answer 503 ``revocations_not_synced`` and the token endpoint 503 ``temporarily_unavailable``.
A state directory that says "caught up" is not believed after a restart. Real nats-server,
a stand-in plane, in-process sidecars (``tests.harness.fleet``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.errors import TokenRevoked
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import mint

from authz_sidecar.app import create_app
from authz_sidecar.feed.store import FeedStore
from tests.harness.fleet import FAST, Fleet, Node, eventually, make_bundle, question
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(180)]

MANY = 20_000  # enough that the replay takes a while on a shared two-core machine
REVOKED_JTI = "revoked-token"
FAR = int(time.time()) + 3600


class World:
    """A token issuer trusted through a file and a bundle file, so everything but the revocations is
    in place the moment a sidecar starts: the only thing a decision can wait for is the replay."""

    def __init__(self, root: Path, bundle_key: SigningKey) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.edge = SigningKey.generate()
        trust = TrustSet()
        trust.add_public_key(self.edge.public_key, "edge")
        self.trust_file = root / "trust.json"
        trust.save(self.trust_file)
        self.bundle_file = root / "bundle.tar.gz"
        self.bundle_file.write_bytes(make_bundle(bundle_key, 1))
        self.token = mint(self.edge, issuer="edge", sub="alice", tenant_id="acme", audience="billing",
                          jti=REVOKED_JTI, lifetime=600)

    async def start(self, fleet: Fleet, name: str, **kw: Any) -> Node:
        return await fleet.start(name, trust_file=self.trust_file, bundle_file=self.bundle_file, **kw)


def revocations(count: int) -> list[dict[str, Any]]:
    """``count`` jti revocations, the one of our token last: it is applied at the very end of the replay."""
    others = [{"kind": "jti", "jti": f"other-{i}", "exp": FAR} for i in range(count - 1)]
    return [*others, {"kind": "jti", "jti": REVOKED_JTI, "exp": FAR}]


def outcome(node: Node, token: str) -> str:
    """What the sidecar does with ``token`` asking to read project p1 (alice is a member):
    ``allowed``, ``token_revoked`` (401 at the door) or the deny reason."""
    try:
        claims = node.sidecar.authenticate(f"Bearer {token}")
    except TokenRevoked:
        return "token_revoked"
    decision = node.sidecar.decide(question("alice", "p1"), claims, door="test")
    return "allowed" if decision.allow else decision.reasons[0]


async def watch_catch_up(node: Node, token: str, last_seq: int, timeout: float = 120.0) -> list[str]:
    """Present the revoked token over and over while the replay runs; never allowed. Returns the
    outcomes seen before the replay reached ``last_seq`` (the plane seq of the last revocation)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while node.feed.revocations.seq < last_seq:
        result = outcome(node, token)
        assert result != "allowed", f"a revoked token was allowed during catch-up (after {seen[-3:]})"
        if result == "revocations_not_synced":
            assert not node.sidecar.ready, "ready while decisions are held"
        seen.append(result)
        assert time.monotonic() < deadline, "the replay did not finish"
        await asyncio.sleep(0.002)
    return seen


async def test_a_revoked_token_is_never_allowed_while_the_stream_is_replayed(
    plane: TestPlane, fleet: Fleet, tmp_path: Path, bundle_key: SigningKey
) -> None:
    world = World(tmp_path / "world", bundle_key)
    await plane.write("acme/project:p1#member@user:alice")
    last = await plane.revoke_many(revocations(MANY))
    node = await world.start(fleet, "catchup")
    assert not node.sidecar.ready
    assert node.sidecar.metrics.registry.get_sample_value("tg_revocations_caught_up") == 0.0
    # the fleet view and tg_ready say what /ready says: a held sidecar is no ready member of a rollout
    assert node.sidecar.fleet_status().ready is False
    assert node.sidecar.metrics.registry.get_sample_value("tg_ready") == 0.0
    seen = await watch_catch_up(node, world.token, last)
    assert "revocations_not_synced" in seen, "the replay was never observed in progress"
    assert set(seen) <= {"revocations_not_synced"}, seen
    await eventually(lambda: node.sidecar.ready, "ready once the replay is complete", timeout=30)
    assert node.sidecar.metrics.registry.get_sample_value("tg_revocations_caught_up") == 1.0
    assert node.sidecar.fleet_status().ready is True
    assert node.sidecar.metrics.registry.get_sample_value("tg_ready") == 1.0
    assert outcome(node, world.token) == "token_revoked"
    other = mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="billing")
    assert outcome(node, other) == "allowed"  # a live token still works once caught up


async def test_a_restart_is_not_ready_until_it_has_replayed_what_was_published_while_down(
    plane: TestPlane, fleet: Fleet, tmp_path: Path, bundle_key: SigningKey
) -> None:
    world = World(tmp_path / "world", bundle_key)
    await plane.write("acme/project:p1#member@user:alice")
    await plane.revoke({"kind": "jti", "jti": "early", "exp": FAR})
    node = await world.start(fleet, "restart")
    await eventually(lambda: node.sidecar.ready and node.feed.revocations.seq == 1
                     and outcome(node, world.token) == "allowed", "caught up once, relations in")
    await fleet.stop(node)  # persists the state dir

    state = FeedStore(node.state_dir / "feed").state_path
    doc = json.loads(state.read_text())
    doc["revocations"]["caught_up_seq"] = 10**9  # the state dir claims far more than it has
    state.write_text(json.dumps(doc))
    last = await plane.revoke_many(revocations(MANY))

    again = await world.start(fleet, "restart")
    assert again.feed.revocations.seq == 1  # restored from the state dir
    assert not again.sidecar.ready
    seen = await watch_catch_up(again, world.token, last)
    assert "revocations_not_synced" in seen, "the replay was never observed in progress"
    await eventually(lambda: again.sidecar.ready, "ready once re-caught-up", timeout=30)
    assert outcome(again, world.token) == "token_revoked"
    status = again.feed.status()["revocations"]
    assert status["caught_up"] is True and status["caught_up_seq"] == MANY + 1


async def test_the_doors_refuse_while_the_replay_runs(
    plane: TestPlane, fleet: Fleet, tmp_path: Path, bundle_key: SigningKey
) -> None:
    world = World(tmp_path / "world", bundle_key)
    await plane.write("acme/project:p1#member@user:alice")
    last = await plane.revoke_many(revocations(MANY))
    node = await world.start(fleet, "doors")
    form = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": world.token,
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token", "audience": "orders"}
    lookup = {"subject": {"type": "user", "id": "alice"}, "action": {"name": "read"},
              "resource": {"type": "project"}}
    auth = {"Authorization": f"Bearer {world.token}"}
    transport = httpx.ASGITransport(app=create_app(node.sidecar))
    async with httpx.AsyncClient(transport=transport, base_url="http://sidecar") as client:
        ready = await client.get("/ready")
        exchanged = await client.post("/oauth2/token", data=form)
        looked_up = await client.post("/v1/lookup/resources", json=lookup, headers=auth)
        searched = await client.post("/access/v1/search/resource", json=lookup, headers=auth)
        checked = await client.post("/v1/check", json=question("alice", "p1"), headers=auth)
        assert node.feed.revocations.seq < last, "the replay ended before the doors were asked: use more revocations"

        assert ready.status_code == 503
        assert ready.json()["reason"] == "revocations_not_synced"
        assert exchanged.status_code == 503, exchanged.text
        assert exchanged.json()["error"] == "temporarily_unavailable"
        assert exchanged.headers["cache-control"] == "no-store"
        assert looked_up.status_code == 503, looked_up.text
        assert looked_up.json()["error"] == "revocations_not_synced"
        assert searched.status_code == 503, searched.text
        assert searched.json()["error"] == "revocations_not_synced"
        assert checked.status_code == 200 and checked.json()["allow"] is False
        assert checked.json()["reasons"] == ["revocations_not_synced"]

        await eventually(lambda: node.sidecar.ready, "caught up", timeout=120)
        assert (await client.get("/ready")).status_code == 200
        after = await client.post("/oauth2/token", data=form)
        assert after.status_code == 400 and "token_revoked" in after.json()["error_description"]
        assert (await client.post("/v1/lookup/resources", json=lookup, headers=auth)).status_code == 401


async def test_an_empty_revocations_stream_is_caught_up_at_once(
    plane: TestPlane, fleet: Fleet, tmp_path: Path, bundle_key: SigningKey
) -> None:
    world = World(tmp_path / "world", bundle_key)
    await plane.write("acme/project:p1#member@user:alice")
    node = await world.start(fleet, "empty")
    await eventually(lambda: node.sidecar.ready, "ready with an empty revocations stream", timeout=10)
    assert node.feed.revocations.seq == 0
    assert node.feed.status()["revocations"]["caught_up"] is True
    await eventually(lambda: outcome(node, world.token) == "allowed", "allowed once the relations are in")


async def test_restarted_with_nats_unreachable_it_stays_not_ready_and_denies_everything(
    plane: TestPlane, fleet: Fleet, nats_server: NatsServer, tmp_path: Path, bundle_key: SigningKey
) -> None:
    world = World(tmp_path / "world", bundle_key)
    await plane.write("acme/project:p1#member@user:alice")
    node = await world.start(fleet, "cold")
    await eventually(lambda: node.sidecar.ready and outcome(node, world.token) == "allowed", "caught up")
    await fleet.stop(node)
    await plane.close()
    nats_server.kill()

    again = await world.start(fleet, "cold")
    await eventually(lambda: again.feed.last_error is not None, "a failed connect attempt")
    assert not again.sidecar.ready
    assert again.sidecar.readiness.reason_code() == "revocations_not_synced"
    assert outcome(again, world.token) == "revocations_not_synced"


async def test_a_running_sidecar_that_loses_nats_keeps_deciding_from_memory(
    plane: TestPlane, fleet: Fleet, nats_server: NatsServer, tmp_path: Path, bundle_key: SigningKey
) -> None:
    world = World(tmp_path / "world", bundle_key)
    await plane.write("acme/project:p1#member@user:alice")
    await plane.revoke({"kind": "jti", "jti": "early", "exp": FAR})
    node = await world.start(fleet, "warm")
    await eventually(lambda: node.sidecar.ready and node.feed.revocations.seq == 1
                     and outcome(node, world.token) == "allowed", "caught up, relations in")
    await plane.close()
    nats_server.kill()
    await eventually(lambda: node.feed.last_error is not None and node.sidecar.feed_state != "live",
                     "the connection lost")
    assert node.sidecar.ready
    assert outcome(node, world.token) == "allowed"


async def test_a_reconnect_is_held_while_it_replays_what_was_published_during_the_outage(
    plane: TestPlane, fleet: Fleet, nats_server: NatsServer, tmp_path: Path, bundle_key: SigningKey,
    plane_key: SigningKey
) -> None:
    world = World(tmp_path / "world", bundle_key)
    await plane.write("acme/project:p1#member@user:alice")
    slow_reconnect = dataclasses.replace(FAST, backoff_initial=10.0, backoff_max=10.0)  # 5..10 s before retrying
    node = await world.start(fleet, "reconnect", options=slow_reconnect)
    await eventually(lambda: node.sidecar.ready and outcome(node, world.token) == "allowed", "caught up")
    await plane.close()
    nats_server.kill()
    await eventually(lambda: node.sidecar.feed_state != "live", "the connection lost")
    assert node.sidecar.ready  # deciding from memory meanwhile

    nats_server.start()  # same port, same store; the sidecar comes back 5..10 s after losing it
    again = await TestPlane.connect(nats_server.url, plane_key)
    again.revocations_seq = plane.revocations_seq
    try:
        last = await again.revoke_many(revocations(5_000))
    finally:
        await again.close()
    assert node.feed.connects == 1, "reconnected before the revocations were stored: the test proves nothing"
    await eventually(lambda: node.feed.connects == 2 and (not node.sidecar.ready or node.feed.revocations.seq == last),
                     "reconnected and resubscribed", timeout=30)
    seen = await watch_catch_up(node, world.token, last)
    assert "revocations_not_synced" in seen, "the replay was never observed in progress"
    await eventually(lambda: node.sidecar.ready, "ready once re-caught-up", timeout=30)
    assert outcome(node, world.token) == "token_revoked"


@pytest.mark.parametrize("edit", ["position past the stream's end", "events deleted from the file"])
async def test_a_persisted_position_is_checked_against_the_live_stream(
    edit: str, plane: TestPlane, fleet: Fleet, tmp_path: Path, bundle_key: SigningKey
) -> None:
    """A position that the stream does not bear out is not resumed from: the whole stream is read.
    Resuming past the end would skip every new revocation (and count as caught up at once);
    resuming after revocations deleted from the file would never apply them again."""
    world = World(tmp_path / "world", bundle_key)
    for i in range(3):
        await plane.revoke({"kind": "jti", "jti": f"before-{i}", "exp": FAR})
    node = await world.start(fleet, "edited")
    await eventually(lambda: node.sidecar.ready and node.feed.revocations.seq == 3, "caught up")
    await fleet.stop(node)
    state = FeedStore(node.state_dir / "feed").state_path
    doc = json.loads(state.read_text())
    if edit == "events deleted from the file":
        doc["revocations"]["events"] = doc["revocations"]["events"][:1]
    else:
        doc["revocations"]["stream_seq"] = 10**6
    state.write_text(json.dumps(doc))
    expected = {"before-0", "before-1", "before-2"}
    if edit == "position past the stream's end":  # something new to miss
        await plane.revoke({"kind": "jti", "jti": "after", "exp": FAR})
        expected.add("after")
    # (deleted events: nothing new follows, so no sequence gap would ever reveal the hole)

    again = await world.start(fleet, "edited")
    await eventually(lambda: again.sidecar.ready, "caught up again")
    assert set(again.sidecar.revocations.jtis) == expected
    assert again.feed.revocations.seq == len(expected)


async def test_a_restart_resumes_after_its_persisted_position_even_when_the_newest_revocation_expired(
    plane: TestPlane, fleet: Fleet, tmp_path: Path, bundle_key: SigningKey
) -> None:
    """The newest revocation is kept in the state dir even once expired: the persisted position is
    checked against it, and without it every restart after a quiet spell would replay the stream."""
    world = World(tmp_path / "world", bundle_key)
    await plane.revoke({"kind": "jti", "jti": "live", "exp": FAR})
    await plane.revoke({"kind": "jti", "jti": "expired", "exp": int(time.time()) - 60})
    node = await world.start(fleet, "quiet")
    await eventually(lambda: node.sidecar.ready and node.feed.revocations.seq == 2, "caught up")
    await fleet.stop(node)

    again = await world.start(fleet, "quiet")
    assert again.feed.revocations.seq == 2  # the expired newest one restored too
    await eventually(lambda: again.sidecar.ready, "caught up again")
    duplicates = again.sidecar.metrics.registry.get_sample_value("tg_events_duplicate_total",
                                                                 {"kind": "revocations"}) or 0.0
    assert duplicates == 0.0, "the restart replayed the stream instead of resuming after its position"
    assert "live" in again.sidecar.revocations.jtis
