"""A revocation dropped by the client library (slow consumer) is loss, not a detail.

nats-py drops a message that finds its subscription's pending queue full and only tells the
connection's error callback. The first test shows that its ordered consumer does not notice:
it tracks sequences before the drop, so it never resets itself to redeliver what it threw
away (this is why the feed cannot rely on it). The second shows the sidecar treating such a
drop on its revocations subscription as loss: counted in ``tg_feed_slow_consumer_total``,
held not-synced, and replayed again until nothing is missing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import nats
import pytest
from nats.errors import SlowConsumerError
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import topology
from tenantguard.identity.keys import SigningKey

from authz_sidecar.feed import FeedOptions
from tests.harness.fleet import FAST, Fleet, eventually, make_bundle
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

FAR = int(time.time()) + 3600


async def test_nats_py_ordered_consumer_does_not_recover_a_client_side_drop(plane: TestPlane,
                                                                         nats_server: NatsServer) -> None:
    total = await plane.revoke_many([{"kind": "jti", "jti": f"j{i}", "exp": FAR} for i in range(3_000)])
    drops: list[SlowConsumerError] = []

    async def on_error(exc: Exception) -> None:
        if isinstance(exc, SlowConsumerError):
            drops.append(exc)

    nc = await nats.connect(nats_server.url, error_cb=on_error, allow_reconnect=False)
    try:
        js = nc.jetstream(timeout=5)
        sub = await js.subscribe(topology.SUBJECT_REVOCATIONS, stream=topology.STREAM_REVOCATIONS,
                                 ordered_consumer=True, idle_heartbeat=0.5, pending_msgs_limit=16)
        seen: list[int] = []
        while True:
            try:
                msg = await sub.next_msg(timeout=3)  # the ordered consumer's own reset would redeliver by then
            except nats.errors.TimeoutError:
                break
            seen.append(msg.metadata.sequence.stream)
            await asyncio.sleep(0.0005)  # a consumer slower than the server
    finally:
        await nc.close()
    assert drops, "no slow-consumer drop happened: the test proves nothing"
    missing = set(range(1, total + 1)) - set(seen)
    assert missing, "every message arrived: the ordered consumer recovered the drops"
    assert seen == sorted(seen)  # in order, with holes: never redelivered


async def test_a_slow_consumer_drop_of_revocations_is_counted_and_replayed(
    plane: TestPlane, fleet: Fleet, tmp_path: Path, bundle_key: SigningKey
) -> None:
    bundle = tmp_path / "bundle.tar.gz"
    bundle.write_bytes(make_bundle(bundle_key, 1))
    last = await plane.revoke_many([{"kind": "jti", "jti": f"j{i}", "exp": FAR} for i in range(3_000)])
    tiny = dataclasses.replace(FAST, revocations_pending_msgs_limit=64)
    node = await fleet.start("slow", options=tiny, bundle_file=bundle)
    registry = node.sidecar.metrics.registry

    def drops() -> float:
        return registry.get_sample_value("tg_feed_slow_consumer_total", {"kind": "revocations"}) or 0.0

    await eventually(lambda: drops() > 0, "a slow-consumer drop on the revocations subscription", timeout=60)
    await eventually(lambda: node.feed.revocations.seq == last and node.sidecar.ready,
                     "every revocation applied despite the drops", timeout=90)
    revoked = node.sidecar.revocations.jtis
    assert all(f"j{i}" in revoked for i in range(3_000)), "a dropped revocation was never applied"
    assert node.feed.status()["revocations"]["caught_up"] is True


def test_the_revocations_subscription_has_room_for_a_whole_replay() -> None:
    """The client queue of the revocations subscription holds 1,000,000 messages / 256 MiB by default
    (nats-py's default is 512 Ki messages / 128 MiB; the other followers keep 10,000 / 64 MiB)."""
    options = FeedOptions()
    assert options.revocations_pending_msgs_limit == 1_000_000
    assert options.revocations_pending_bytes_limit == 256 * 1024 * 1024
