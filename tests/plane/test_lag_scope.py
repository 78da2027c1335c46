"""A write is refused for lag only when the follower it depends on lags.

Every write used to answer 503 ``plane_not_ready`` while *any* follower lagged, e.g. the
bundles or rollouts follower being re-created after a NATS node's recovery, although a
relations write reads and waits on the relations follower alone (a 503 ``plane_not_ready``
just after a node's recovery in tests/cluster/test_replicas.py). The watchdog that measures
lag is stopped here so that the test sets what it would report.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from tenantguard.relations import RelationChange, Relationship

from policy_plane.config import PlaneConfig
from policy_plane.errors import NotReady
from policy_plane.runtime import Plane
from policy_plane.secrets import SecretChecker
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]


@pytest.fixture
async def plane(world: World) -> AsyncIterator[Plane]:
    replica = Plane(PlaneConfig(nats_url=world.nats.url, event_key=world.event_key, bundle_key=world.bundle_key,
                                admin=SecretChecker.from_file(world.token_file), port=0))
    await replica.start()
    try:
        (watchdog,) = [t for t in replica._tasks if t.get_name() == "plane-follower-watchdog"]
        watchdog.cancel()
        await asyncio.gather(watchdog, return_exceptions=True)
        yield replica
    finally:
        await replica.stop()


def _write(text: str) -> list[RelationChange]:
    return [RelationChange("write", Relationship.parse(text))]


async def test_a_lagging_bundles_follower_does_not_refuse_relation_writes(plane: Plane) -> None:
    plane.lagging = {"bundles": 7.0, "rollouts": 6.0}
    written = await plane.write_relations(_write("acme/doc:d1#owner@user:alice"))
    assert written.seq == 1
    assert await plane.revoke({"kind": "tenant", "tenant": "globex"}) is not None
    assert not plane.ready  # readiness still reports the lag


async def test_a_lagging_relations_follower_still_refuses_relation_writes(plane: Plane) -> None:
    plane.lagging = {"relations": 7.0}
    with pytest.raises(NotReady) as refused:
        await plane.write_relations(_write("acme/doc:d2#owner@user:alice"))
    assert refused.value.retryable and refused.value.detail["lagging"] == {"relations": 7.0}
