"""Tuples with conditions, expiry and wildcards reach sidecars through the signed feed and
through a snapshot, and the sidecar's policy still never grants through them."""

from __future__ import annotations

import pytest
from tenantguard.relations.reads import TupleMeta

from tests.harness.fleet import Fleet, decide, eventually
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]


async def test_meta_reaches_sidecars_by_snapshot_and_by_events_and_never_grants_in_policy(
        plane: TestPlane, fleet: Fleet) -> None:
    await plane.write('acme/project:p1#member@user:alice[ip_ok:{"cidr":"10/8"}]', "acme/project:p2#member@user:*")
    await plane.snapshot()  # a version 2 snapshot: the sidecar cold-starts from it
    await plane.write("acme/project:p3#member@user:alice[expiration:2099-01-01T00:00:00Z]",
                      "acme/project:p4#member@user:alice")
    node = await fleet.start("s0")
    await eventually(lambda: node.sidecar.relations.digest() == plane.digest(), "convergence with meta")
    await eventually(lambda: node.sidecar.bundle_revision == "1", "the bundle")
    bound = node.sidecar.relations.tenant("acme")
    assert dict(bound.objects("project", "member", "user:alice")) == {
        "project:p1": TupleMeta("ip_ok", {"cidr": "10/8"}), "project:p3": TupleMeta(expires_at=4070908800.0),
        "project:p4": None}
    assert dict(bound.subjects("project:p2", "member")) == {"user:*": None}
    assert decide(node.sidecar, "alice", "p4").allow  # the plain tuple grants as before
    for project in ("p1", "p3", "p2"):  # conditional, expiring, wildcard: the policy cannot evaluate them
        assert not decide(node.sidecar, "alice", project).allow, project
    # rewriting the conditional tuple plain makes it grant, as any write would
    await plane.write("acme/project:p1#member@user:alice")
    await eventually(lambda: decide(node.sidecar, "alice", "p1").allow, "the rewrite")
    assert node.sidecar.relations.digest() == plane.digest()
