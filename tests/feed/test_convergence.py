"""Three sidecars follow one plane: same state, same revocations, through a NATS outage."""

from __future__ import annotations

import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.errors import TokenRevoked
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import mint

from tests.harness.fleet import Fleet, decide, eventually
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]


async def seed(plane: TestPlane) -> None:
    await plane.write("acme/project:p1#member@user:alice", "acme/group:eng#member@user:bob")
    await plane.write("acme/project:p2#member@group:eng#member")
    await plane.snapshot()
    await plane.write("globex/project:p1#member@user:mallory")


async def test_three_sidecars_converge_to_the_plane_digest(plane: TestPlane, fleet: Fleet) -> None:
    await seed(plane)
    nodes = [await fleet.start(f"s{i}") for i in range(3)]
    await eventually(lambda: all(n.sidecar.relations.digest() == plane.digest() for n in nodes), "convergence")
    await eventually(lambda: all(n.sidecar.bundle_revision == "1" for n in nodes), "bundle 1 everywhere")
    for node in nodes:
        assert decide(node.sidecar, "alice", "p1").allow
        assert decide(node.sidecar, "bob", "p2").allow
        assert not decide(node.sidecar, "mallory", "p1").allow  # globex's mallory, asking in acme
        assert node.sidecar.feed_state == "live"
    await plane.write("acme/project:p3#member@user:carol")
    await plane.write("acme/project:p1#member@user:alice", op="delete")
    await eventually(lambda: all(n.sidecar.relations.digest() == plane.digest() for n in nodes), "second round")
    assert all(not decide(n.sidecar, "alice", "p1").allow and decide(n.sidecar, "carol", "p3").allow for n in nodes)


async def test_revocations_reach_every_sidecar(plane: TestPlane, fleet: Fleet) -> None:
    edge = SigningKey.generate()
    token_trust = TrustSet()
    token_trust.add_public_key(edge.public_key, "edge")
    await plane.trust(token_trust)
    await seed(plane)
    nodes = [await fleet.start(f"s{i}") for i in range(3)]
    token = mint(edge, issuer="edge", sub="alice", tenant_id="acme", audience="billing")
    await eventually(lambda: all(edge.kid in n.sidecar.trust for n in nodes), "the plane's trust set")
    await eventually(lambda: all(n.sidecar.relations.digest() == plane.digest() for n in nodes), "convergence")
    assert all(n.sidecar.authenticate(f"Bearer {token}").sub == "alice" for n in nodes)

    await plane.revoke({"kind": "tenant", "tenant": "acme"})
    await eventually(lambda: all(decide(n.sidecar, "alice", "p1").reasons == ("tenant_revoked",) for n in nodes),
                     "the tenant kill switch everywhere")
    await plane.revoke({"kind": "lift_tenant", "tenant": "acme"})
    await eventually(lambda: all(decide(n.sidecar, "alice", "p1").allow for n in nodes), "the lift everywhere")

    claims = nodes[0].sidecar.authenticate(f"Bearer {token}")
    await plane.revoke({"kind": "jti", "jti": claims.jti, "exp": int(claims.exp)})

    def refused_everywhere() -> bool:
        for node in nodes:
            try:
                node.sidecar.authenticate(f"Bearer {token}")
            except TokenRevoked:
                continue
            return False
        return True

    await eventually(refused_everywhere, "the jti revocation everywhere (cached tokens included)")


async def test_nats_killed_mid_stream_every_sidecar_ends_with_the_publishers_state(
    plane: TestPlane, fleet: Fleet, nats_server: NatsServer, plane_key: SigningKey
) -> None:
    await seed(plane)
    nodes = [await fleet.start(f"s{i}") for i in range(3)]
    # Each sidecar has the bundle and alice's membership before the outage: what it must keep
    # deciding from. Where it is in the 20 batches below is left to chance, on purpose.
    await eventually(lambda: all(n.sidecar.bundle_revision == "1" and n.sidecar.relations.applied_seq >= 3
                                 for n in nodes), "bundle 1 and the seed everywhere")
    for i in range(20):
        await plane.write(f"acme/project:q{i}#member@user:u{i}")
    nats_server.kill()  # mid-stream: the sidecars may be anywhere in those 20 batches
    await plane.close()
    await eventually(lambda: all(n.sidecar.feed_state in ("disconnected", "connecting") for n in nodes),
                     "every feed notices")
    assert all(decide(n.sidecar, "alice", "p1").allow for n in nodes)  # still deciding from local state

    nats_server.start()  # same port, same store
    again = await TestPlane.connect(nats_server.url, plane_key)
    again.indexes, again.trust_seq = plane.indexes, plane.trust_seq
    try:
        for i in range(20, 40):
            await again.write(f"acme/project:q{i}#member@user:u{i}")
        await eventually(lambda: all(n.sidecar.relations.digest() == again.digest() for n in nodes),
                         "every sidecar at exactly the publisher's state")
        assert all(n.sidecar.feed_state == "live" for n in nodes)
        assert all(n.feed.connects >= 2 for n in nodes)
        assert all(decide(n.sidecar, "u39", "q39").allow for n in nodes)
    finally:
        await again.close()
