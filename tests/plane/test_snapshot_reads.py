"""A replica starting from cell snapshots never trades a snapshot it could not read for a partial replay.

After the pre-cell migration a cell's history lives only in its snapshot (the stream holds the
legacy subject, which cell followers never take). Under load, reading that snapshot timed out
once and the replica replayed the cell's empty subject instead: it came up ready with the cell at
seq 0, missing every migrated tuple, and would have signed seq 1 on top of 7. Now a read that
fails is retried, a snapshot that is gone falls back to the replay only if the replay reaches the
snapshot's seq, and otherwise the start stops with the object to restore.
"""

from __future__ import annotations

from typing import Any

import pytest
from tenantguard.errors import Unavailable
from tenantguard.feed import topology as topo

from policy_plane.publisher import Publisher
from policy_plane.runtime import Plane
from policy_plane.state import PlaneState
from tests.harness.legacy_plane import A, B, C, legacy_layout, plane_config
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]


class Flaky(Publisher):
    """A real publisher whose next ``failures`` object reads time out, as a loaded NATS does."""

    def __init__(self, url: str, failures: int) -> None:
        super().__init__(url)
        self.failures = failures
        self.reads = 0

    async def get_object(self, bucket: str, name: str, *, max_bytes: int) -> bytes:
        self.reads += 1
        if self.failures > 0:
            self.failures -= 1
            raise Unavailable(f"read {bucket}/{name}: NATS unavailable (TimeoutError)")
        return await super().get_object(bucket, name, max_bytes=max_bytes)


async def migrated(world: World) -> None:
    """Seven pre-cell batches carried into four cells by a first replica (which then stops)."""
    legacy = await legacy_layout(world)
    await legacy.close()
    plane = Plane(plane_config(world, 4))
    await plane.start()
    await plane.stop()


def state_of(world: World) -> PlaneState:
    return PlaneState(world.event_key, world.bundle_key, max_bundle_bytes=1 << 20, cells=4)


async def test_a_snapshot_read_that_times_out_is_tried_again_not_replaced_by_a_replay(world: World) -> None:
    await migrated(world)
    flaky = Flaky(world.nats.url, failures=2)
    await flaky.connect()
    try:
        state = state_of(world)
        await state.bootstrap_relations(flaky)
        assert state.index.seqs() == {"c0": 7, "c1": 7, "c2": 7, "c3": 7}
        assert state.replay_floor == {} and flaky.reads == 4 + 2  # one read per cell, two of them again
        assert {t: len(state.index.list(t)) > 0 for t in (A, B, C)} == {A: True, B: True, C: True}
    finally:
        await flaky.close()


async def test_a_snapshot_that_stays_unreadable_stops_the_start(world: World) -> None:
    await migrated(world)
    flaky = Flaky(world.nats.url, failures=10**6)
    await flaky.connect()
    try:
        with pytest.raises(Unavailable, match="not starting without it"):
            await state_of(world).bootstrap_relations(flaky)
    finally:
        await flaky.close()


async def test_a_missing_snapshot_whose_history_the_stream_lacks_stops_the_start(world: World) -> None:
    await migrated(world)
    admin = Publisher(world.nats.url)
    await admin.connect()
    try:
        store = await admin.js.object_store(topo.BUCKET_SNAPSHOTS)
        await store.delete(topo.snapshot_object(7, "c0"))
    finally:
        await admin.close()
    plane = Plane(plane_config(world, 4))
    with pytest.raises(Unavailable) as refused:
        await plane.start()
    await plane.stop()
    message: Any = refused.value.message
    assert "c0 at 0 of 7" in message and topo.snapshot_object(7, "c0") in message
    assert refused.value.detail["cells"] == ["c0"]
