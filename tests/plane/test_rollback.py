"""Versions only move forward at the plane, even across restarts and replays of genuine old events.

The attack (issue: "rollback of trust and policy"): capture a genuine signed event, wait
until it is superseded, publish its bytes again so that it is the last message stored, and
restart the plane. The plane must come back with the newest signed version, not the last
message, and keep numbering after it (so running sidecars still accept its next change).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tenantguard.bundle import build_bundle
from tenantguard.feed import topology as topo
from tenantguard.feed.events import TRUST_UPDATE, verify_event
from tenantguard.identity.keys import SigningKey

from tests.harness.nats_raw import publish_js, read_stream
from tests.harness.plane_bundles import bundle_dir, upload
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]


def _on(world: World, stream: str, subject: str) -> list[bytes]:
    return [m.data for m in read_stream(world.nats.url, stream) if m.subject == subject]


def test_a_replayed_trust_event_does_not_come_back_after_a_plane_restart(world: World, plane: PlaneProcess) -> None:
    http = plane.client()
    kept, leaked = SigningKey.generate(), SigningKey.generate()
    assert http.post("/v1/trust/issuers", json={"jwk": {**kept.public_jwk(), "iss": "edge"}}).status_code == 200
    assert http.post("/v1/trust/issuers", json={"jwk": {**leaked.public_jwk(), "iss": "edge"}}).json()["trust_seq"] == 2
    [with_leaked] = _on(world, topo.STREAM_TRUST, topo.SUBJECT_TRUST)  # compacted: only the newest is stored
    assert http.delete(f"/v1/trust/keys/{leaked.kid}").json()["trust_seq"] == 3
    stored = _on(world, topo.STREAM_TRUST, topo.SUBJECT_TRUST)
    assert [verify_event(d, world.event_trust(), expected_type=TRUST_UPDATE).seq for d in stored] == [3]

    publish_js(world.nats.url, topo.SUBJECT_TRUST, with_leaked)  # the replay is now the last message stored
    plane.stop()
    again = world.start()
    jwks = again.client(None).get("/.well-known/jwks.json").json()
    assert [k["kid"] for k in jwks["keys"]] == [kept.kid]
    assert again.status()["trust"]["seq"] == 3

    later = SigningKey.generate()  # the next change is numbered after the newest, not after the replay
    added = again.client().post("/v1/trust/issuers", json={"jwk": {**later.public_jwk(), "iss": "edge"}})
    assert added.json()["trust_seq"] == 4
    stored = _on(world, topo.STREAM_TRUST, topo.SUBJECT_TRUST)
    assert [verify_event(d, world.event_trust(), expected_type=TRUST_UPDATE).seq for d in stored] == [4]


def test_a_replayed_bundle_announce_does_not_roll_the_plane_back(world: World, plane: PlaneProcess,
                                                                 tmp_path: Path) -> None:
    source = bundle_dir(tmp_path / "b")
    assert upload(plane, build_bundle(source, "r1", serial=1))[0] == 200
    [old_announce] = _on(world, topo.STREAM_BUNDLES, topo.bundle_subject("all"))
    assert upload(plane, build_bundle(source, "r2", serial=2))[0] == 200
    publish_js(world.nats.url, topo.bundle_subject("all"), old_announce)
    plane.stop()
    again = world.start()
    active = again.status()["bundles"]["all"]
    assert (active["revision"], active["seq"], active["loaded"]) == ("r2", 2, True)
    assert upload(again, build_bundle(source, "r3", serial=3))[0] == 200
    assert again.status()["bundles"]["all"]["seq"] == 3


def test_an_announce_replayed_onto_another_scope_is_refused(world: World, plane: PlaneProcess,
                                                            tmp_path: Path) -> None:
    both = bundle_dir(tmp_path / "b", services=["orders", "billing"])
    assert upload(plane, build_bundle(both, "r1", serial=1))[0] == 200  # orders seq 1, billing seq 1
    orders_only = bundle_dir(tmp_path / "c", services=["orders"])
    assert upload(plane, build_bundle(orders_only, "r2", serial=2))[0] == 200  # orders seq 2
    [orders_announce] = _on(world, topo.STREAM_BUNDLES, topo.bundle_subject("orders"))
    # seq 2 is newer than anything billing has: only the scope inside the signed payload tells them apart
    publish_js(world.nats.url, topo.bundle_subject("billing"), orders_announce)
    status = plane.wait_until(lambda s: s["rejected_events"])
    assert status["rejected_events"] == {f"{topo.STREAM_BUNDLES}:event_malformed": 1}
    assert (status["bundles"]["billing"]["revision"], status["bundles"]["billing"]["seq"]) == ("r1", 1)
