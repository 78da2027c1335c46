"""What a pre-cell plane (before tenant cells, ``git show 02bebf0``) left in JetStream, written for tests.

That plane published relations batches on ``tg.relations.changes`` signed as
``relations.batch`` with payload ``{"changes": [...]}`` (no cell), one global ``seq``;
snapshot manifests on ``tg.snapshots.relations`` signed as ``relations.snapshot`` with
payload ``{"count", "size", "sha256"}`` (no cell) and an unsigned ``Tg-Stream-Seq`` header;
snapshot bytes as object ``relations/<seq>`` in ``tg-snapshots``. Its streams were those of
today's ``stream_configs`` with those two subjects.

:func:`legacy_layout` writes a standard history of that plane (three tenants in three of four
cells) for the upgrade tests to carry into cells.
"""

from __future__ import annotations

import dataclasses

import nats
from nats.aio.client import Client
from tenantguard.feed import topology as topo
from tenantguard.feed.events import RELATIONS_BATCH, RELATIONS_SNAPSHOT, sign_event
from tenantguard.identity.keys import SigningKey
from tenantguard.relations import (
    ChangeBatch,
    RelationChange,
    RelationIndex,
    Relationship,
    snapshot_bytes,
    snapshot_digest,
)

from policy_plane.config import PlaneConfig
from policy_plane.migrate import LEGACY_RELATIONS_SUBJECT, LEGACY_SNAPSHOT_SUBJECT, legacy_snapshot_object
from policy_plane.publisher import STREAM_SEQ_HINT, stream_configs
from policy_plane.secrets import SecretChecker

from .plane_world import World


def sign_legacy_batch(key: SigningKey, batch: ChangeBatch) -> bytes:
    return sign_event(key, RELATIONS_BATCH, {"changes": batch.to_wire()["changes"]}, batch.seq)


def sign_legacy_manifest(key: SigningKey, data: bytes, seq: int, count: int) -> bytes:
    return sign_event(key, RELATIONS_SNAPSHOT, {"count": count, "size": len(data), "sha256": snapshot_digest(data)},
                      seq)


def changes(*tuples: str, op: str = "write") -> tuple[RelationChange, ...]:
    return tuple(RelationChange(op, Relationship.parse(t)) for t in tuples)  # type: ignore[arg-type]


class LegacyPlane:
    """Publishes exactly what the pre-cell plane published; keeps a mirror of its state."""

    def __init__(self, nc: Client, key: SigningKey) -> None:
        self.nc = nc
        self.js = nc.jetstream(timeout=5)
        self.key = key
        self.index = RelationIndex()

    @classmethod
    async def connect(cls, url: str, key: SigningKey) -> LegacyPlane:
        return cls(await nats.connect(url, connect_timeout=2, allow_reconnect=False), key)

    async def close(self) -> None:
        await self.nc.close()

    async def create_topology(self) -> None:
        old = {topo.STREAM_RELATIONS: [LEGACY_RELATIONS_SUBJECT], topo.STREAM_SNAPSHOTS: [LEGACY_SNAPSHOT_SUBJECT]}
        for config in stream_configs(relations_max_age=0.0, replicas=1):
            subjects = old.get(config.name or "", config.subjects)
            await self.js.add_stream(dataclasses.replace(config, subjects=subjects))
        for bucket in (topo.BUCKET_SNAPSHOTS, topo.BUCKET_BUNDLES):
            await self.js.create_object_store(bucket)

    async def write(self, *tuples: str, op: str = "write") -> int:
        batch = ChangeBatch(self.index.applied_seq + 1, changes(*tuples, op=op))
        await self.publish_batch(sign_legacy_batch(self.key, batch))
        self.index.apply(batch)
        return batch.seq

    async def publish_batch(self, data: bytes) -> int:
        ack = await self.js.publish(LEGACY_RELATIONS_SUBJECT, data, stream=topo.STREAM_RELATIONS)
        return int(ack.seq)

    async def snapshot(self) -> int:
        """Object first, then the manifest with the stream hint (the old plane's order)."""
        data = snapshot_bytes(self.index)
        store = await self.js.object_store(topo.BUCKET_SNAPSHOTS)
        await store.put(legacy_snapshot_object(self.index.applied_seq), data)
        hint = (await self.js.stream_info(topo.STREAM_RELATIONS)).state.last_seq
        await self.js.publish(LEGACY_SNAPSHOT_SUBJECT,
                              sign_legacy_manifest(self.key, data, self.index.applied_seq, self.index.count()),
                              headers={STREAM_SEQ_HINT: str(hint)})
        return self.index.applied_seq


# --------------------------------------------------------------------------- a layout to upgrade


def tenants(cells: int, wanted: tuple[str, ...]) -> dict[str, str]:
    """One tenant name per wanted cell of a ``cells``-cell system: cell -> tenant."""
    out: dict[str, str] = {}
    for i in range(500):
        cell = topo.cell_of(f"t{i}", cells)
        if cell in wanted and cell not in out:
            out[cell] = f"t{i}"
    assert set(out) == set(wanted)
    return out


# with 4 cells: three tenants in c0, c1, c2 and none in c3 (an empty cell gets its snapshot too)
T4 = tenants(4, ("c0", "c1", "c2"))
A, B, C = T4["c0"], T4["c1"], T4["c2"]


async def legacy_layout(world: World) -> LegacyPlane:
    """Seven batches of the old plane with a snapshot at 4 (so snapshot + later batches are both read)."""
    legacy = await LegacyPlane.connect(world.nats.url, world.event_key)
    await legacy.create_topology()
    await legacy.write(f"{A}/project:p1#member@user:alice", f"{A}/project:p2#member@user:alice")
    await legacy.write(f"{B}/project:p1#member@user:bob")
    await legacy.write(f"{C}/project:p1#member@group:eng#member", f"{C}/group:eng#member@user:carol")
    await legacy.write(f"{A}/project:p2#member@user:alice", op="delete")
    await legacy.snapshot()
    await legacy.write(f"{B}/project:p3#member@user:bob")
    await legacy.write(f"{A}/project:p4#member@user:dave")
    await legacy.write(f"{C}/project:p5#member@user:carol")
    assert legacy.index.applied_seq == 7
    return legacy


def plane_config(world: World, cells: int) -> PlaneConfig:
    """An upgraded plane's settings on ``world`` with ``cells`` cells (run in process)."""
    return PlaneConfig(nats_url=world.nats.url, event_key=world.event_key, bundle_key=world.bundle_key,
                       admin=SecretChecker.from_file(world.token_file), port=0, cells=cells, heartbeat_seconds=0.5)
