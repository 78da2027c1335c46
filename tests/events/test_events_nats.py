"""Through a real nats-server: whoever can publish cannot make a sidecar believe a forgery."""

from __future__ import annotations

import json
from pathlib import Path

import nats
import pytest
from nats.js.api import StorageType
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed.events import EventRejected, sign_batch, verify_batch
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.relations import ChangeBatch, RelationChange, Relationship

pytestmark = [pytest.mark.nats, pytest.mark.timeout(30)]

SUBJECT = "tg.events.relations"


async def _quiet(_exc: Exception) -> None:
    pass


async def test_only_the_genuine_event_verifies(
    tmp_path: Path, plane_key: SigningKey, attacker_key: SigningKey, trust: TrustSet
) -> None:
    grant = ChangeBatch(1, (RelationChange("write", Relationship.parse("acme / project:p1#owner @ user:mallory")),))
    genuine = ChangeBatch(1, (RelationChange("write", Relationship.parse("acme / project:p1#member @ user:alice")),))
    forged_own_kid = sign_batch(attacker_key, grant)
    forged_plane_kid = json.loads(forged_own_kid) | {"kid": plane_key.kid}
    published = [
        forged_own_kid,
        json.dumps(forged_plane_kid, sort_keys=True, separators=(",", ":")).encode(),
        sign_batch(plane_key, genuine),
    ]

    with NatsServer(tmp_path / "nats") as server:
        nc = await nats.connect(server.url, connect_timeout=2, error_cb=_quiet)
        try:
            js = nc.jetstream(timeout=5)
            await js.add_stream(name="RELATIONS", subjects=[SUBJECT], storage=StorageType.FILE)
            for data in published:
                await js.publish(SUBJECT, data)
            sub = await js.pull_subscribe(SUBJECT, durable="sidecar")
            received = await sub.fetch(3, timeout=5)
        finally:
            await nc.close()

    believed, refused = [], []
    for msg in received:
        try:
            believed.append(verify_batch(msg.data, trust))
        except EventRejected as exc:
            refused.append(exc.code)
    assert believed == [genuine]
    assert refused == ["event_unknown_key", "event_signature_invalid"]
