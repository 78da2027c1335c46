"""A tiny stand-in for the policy plane: creates the topology and publishes signed events.

Everything follows ``tenantguard.feed.topology`` and is signed with the library, so these
tests do not depend on ``policy_plane`` (written in parallel). It keeps a mirror index of
what it published, whose digest every sidecar must end up with.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

import nats
from nats.aio.client import Client
from nats.js.api import DiscardPolicy, StorageType, StreamConfig
from tenantguard.feed import topology
from tenantguard.feed.events import (
    BUNDLE_ANNOUNCE,
    REVOCATION,
    TRUST_UPDATE,
    sign_batch,
    sign_event,
    sign_snapshot_manifest,
)
from tenantguard.feed.freshness import Heartbeat
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.relations import ChangeBatch, RelationChange, RelationIndex, Relationship, snapshot_bytes


async def _quiet(_exc: Exception) -> None:
    pass


class TestPlane:
    """Publishes exactly what the real plane would, one call per kind of event."""

    __test__ = False  # not a test class, despite the name

    def __init__(self, nc: Client, key: SigningKey, cells: int = 1) -> None:
        self.nc = nc
        self.js = nc.jetstream(timeout=5)
        self.key = key
        self.cells = cells
        self.indexes = {cell: RelationIndex() for cell in topology.cell_names(cells)}
        self.trust_seq = 0
        self.revocations_seq = 0
        self.announce_seq: dict[str, int] = {}

    @classmethod
    async def connect(cls, url: str, key: SigningKey, cells: int = 1) -> TestPlane:
        nc = await nats.connect(url, connect_timeout=2, allow_reconnect=False, error_cb=_quiet)
        return cls(nc, key, cells)

    @property
    def index(self) -> RelationIndex:
        """Cell c0's mirror (the only one with one cell)."""
        return self.indexes[topology.DEFAULT_CELL]

    async def close(self) -> None:
        if not self.nc.is_closed:
            await self.nc.close()

    async def create_topology(self) -> None:
        """The streams and buckets of topology.py (file-backed, R1)."""
        history = {"discard": DiscardPolicy.NEW, "max_msgs": 100_000}  # "newest wins" subjects keep history
        streams = [
            StreamConfig(name=topology.STREAM_RELATIONS, subjects=[topology.SUBJECT_RELATIONS_ALL]),
            StreamConfig(name=topology.STREAM_SNAPSHOTS, subjects=[topology.SUBJECT_SNAPSHOTS_ALL], **history),
            StreamConfig(name=topology.STREAM_TRUST, subjects=[topology.SUBJECT_TRUST], **history),
            StreamConfig(name=topology.STREAM_REVOCATIONS, subjects=[topology.SUBJECT_REVOCATIONS]),
            StreamConfig(name=topology.STREAM_BUNDLES, subjects=[f"{topology.SUBJECT_BUNDLES_PREFIX}.>"],
                         **history),
        ]
        for config in streams:
            config.storage = StorageType.FILE
            await self.js.add_stream(config)
        await self.js.create_object_store(topology.BUCKET_SNAPSHOTS, storage=StorageType.FILE)
        await self.js.create_object_store(topology.BUCKET_BUNDLES, storage=StorageType.FILE)

    # ------------------------------------------------------------------ relations

    async def write(self, *tuples: str, op: str = "write") -> int:
        """Publish one batch (all ``op``, all of one cell); return its seq, the consistency token."""
        changes = tuple(RelationChange(op, Relationship.parse(t)) for t in tuples)  # type: ignore[arg-type]
        cells = {topology.cell_of(c.rel.tenant, self.cells) for c in changes}
        assert len(cells) == 1, f"a batch is of one cell, not {cells}"
        cell = cells.pop()
        index = self.indexes[cell]
        batch = ChangeBatch(index.applied_seq + 1, changes)
        await self.js.publish(topology.relations_subject(cell), sign_batch(self.key, batch, cell=cell),
                              stream=topology.STREAM_RELATIONS)
        index.apply(batch)
        return batch.seq

    async def snapshot(self, cell: str = topology.DEFAULT_CELL) -> int:
        """Put the mirror's snapshot object, then its signed manifest (the real plane's order)."""
        index = self.indexes[cell]
        data = snapshot_bytes(index)
        store = await self.js.object_store(topology.BUCKET_SNAPSHOTS)
        await store.put(topology.snapshot_object(index.applied_seq, cell), data)
        await self.js.publish(topology.snapshot_subject(cell), sign_snapshot_manifest(self.key, data, cell=cell))
        return index.applied_seq

    def digest(self, cell: str = topology.DEFAULT_CELL) -> str:
        return self.indexes[cell].digest()

    # ------------------------------------------------------------------ control

    async def trust(self, trust: TrustSet) -> int:
        self.trust_seq += 1
        await self.js.publish(topology.SUBJECT_TRUST,
                              sign_event(self.key, TRUST_UPDATE, {"jwks": trust.to_jwks()}, self.trust_seq))
        return self.trust_seq

    async def revoke(self, payload: dict[str, Any]) -> int:
        self.revocations_seq += 1
        await self.js.publish(topology.SUBJECT_REVOCATIONS,
                              sign_event(self.key, REVOCATION, payload, self.revocations_seq))
        return self.revocations_seq

    async def revoke_many(self, payloads: list[dict[str, Any]], *, chunk: int = 1_000) -> int:
        """Publish many revocations fast (core publishes, one flush per ``chunk``; the stream stores
        them in order), then wait until the stream holds every one; return the last plane seq."""
        for start in range(0, len(payloads), chunk):
            for payload in payloads[start:start + chunk]:
                self.revocations_seq += 1
                await self.nc.publish(topology.SUBJECT_REVOCATIONS,
                                      sign_event(self.key, REVOCATION, payload, self.revocations_seq))
            await self.nc.flush(timeout=10)
        deadline = time.monotonic() + 30
        while (await self.js.stream_info(topology.STREAM_REVOCATIONS)).state.messages < self.revocations_seq:
            if time.monotonic() > deadline:
                raise AssertionError("the revocations stream did not store every published revocation")
            await asyncio.sleep(0.02)
        return self.revocations_seq

    async def bundle(self, archive: bytes, revision: str, *, scope: str = topology.BUNDLE_SCOPE_ALL,
                     announced: bytes | None = None) -> int:
        """Store ``archive`` and announce ``announced`` (default: the same bytes) for ``scope``."""
        name = f"bundles/{scope}/{revision}"
        store = await self.js.object_store(topology.BUCKET_BUNDLES)
        await store.put(name, archive)
        claimed = archive if announced is None else announced
        seq = self.announce_seq[scope] = self.announce_seq.get(scope, 0) + 1
        payload = {"scope": scope, "revision": revision, "sha256": hashlib.sha256(claimed).hexdigest(),
                   "size": len(claimed), "object": name, "services": [scope]}
        await self.js.publish(topology.bundle_subject(scope), sign_event(self.key, BUNDLE_ANNOUNCE, payload, seq))
        return seq

    def heartbeat_bytes(self, *, issued_at: float | None = None, validity: float = 30.0, **declared: Any) -> bytes:
        """A signed heartbeat declaring the mirror's versions (``declared`` overrides some)."""
        issued = time.time() if issued_at is None else issued_at
        seqs = {cell: index.applied_seq for cell, index in self.indexes.items()}
        fields: dict[str, Any] = {"relations_seq": max(seqs.values()), "trust_seq": self.trust_seq,
                                  "revocations_seq": self.revocations_seq, "bundles": dict(self.announce_seq),
                                  "cells": self.cells, "relations": seqs}
        fields |= declared
        return Heartbeat(**fields, issued_at=issued, expires_at=issued + validity, replica="test").sign(self.key)

    async def heartbeat(self, seq: int | None = None, **kw: Any) -> None:
        """Publish a heartbeat (``seq`` kept for old callers: heartbeats are ordered by issue time)."""
        await self.nc.publish(topology.SUBJECT_HEARTBEAT, self.heartbeat_bytes(**kw))
        await self.nc.flush(timeout=5)

    async def raw(self, subject: str, data: bytes) -> None:
        """Publish arbitrary bytes into a stream subject: what an attacker with NATS access can do."""
        await self.js.publish(subject, data)
