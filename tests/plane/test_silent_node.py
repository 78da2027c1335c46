"""A replica whose node goes silent (a hang, or a cut on the path to it) gives up a write in flight
when it leaves the node, and takes writes for only ``SILENT_GRACE`` more while it looks for another.

A node that closes the connection (it died or was drained) keeps the long ``MOVE_GRACE``
(tests/plane/test_moving.py): the next node answers at once there. Silence may be this replica's
own cut from every node, and then holding writes 5 s more only delays their refusal
(docs/operations.md, "Which node"). The silence is made with a blackholing proxy
(tests/harness/netproxy.py); this test also pins what :func:`policy_plane.publisher._went_silent`
reads of nats-py.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from nats.js.api import StreamConfig
from tenantguard.dev.natsserver import NatsServer
from tenantguard.errors import Unavailable

from policy_plane.publisher import MAX_OUTSTANDING_PINGS, PING_INTERVAL, SILENT_GRACE, Publisher
from tests.harness.netproxy import Network

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]

DETECTION = PING_INTERVAL * (MAX_OUTSTANDING_PINGS + 1)  # the longest silence before the node is left


async def test_a_write_in_flight_to_a_silent_node_is_given_up_when_the_node_is_left(tmp_path: Path) -> None:
    with NatsServer(tmp_path / "nats") as server, Network() as net:
        proxy = net.proxy("127.0.0.1", server.port)
        publisher = Publisher(proxy.url, connect_timeout=1.0)
        await publisher.connect()
        try:
            await publisher.js.add_stream(StreamConfig(name="T", subjects=["t.>"]))
            for n in range(3):  # answered requests leave the connection's "lost" signal alone
                assert (await publisher.publish("t.x", b"before %d" % n, msg_id=f"m0{n}")).stream_seq == n + 1
            proxy.blackhole()
            cut = time.monotonic()
            with pytest.raises(Unavailable, match="outcome unknown"):
                await publisher.publish("t.x", b"in flight", msg_id="m1")
            given_up = time.monotonic() - cut
            assert not publisher.connected and publisher._left_silent
            while publisher.moving:
                await asyncio.sleep(0.02)
            refused = time.monotonic() - cut
            print(f"\nsilent node: the write in flight given up {given_up:.2f} s after the cut, writes refused "
                  f"from {refused:.2f} s (pings {PING_INTERVAL} s x {MAX_OUTSTANDING_PINGS}, grace {SILENT_GRACE} s)")
            assert given_up < 2 * DETECTION  # the request's own timeout (5 s) no longer counts
            assert refused < given_up + SILENT_GRACE + 1.0
            proxy.heal()
            deadline = time.monotonic() + 20
            while not publisher.connected:
                assert time.monotonic() < deadline, "no reconnect after the heal"
                await asyncio.sleep(0.05)
            stored = await publisher.publish("t.x", b"in flight", msg_id="m1")  # sent again, stored once
            assert stored.stream_seq == 4
        finally:
            await publisher.close()


async def test_a_node_that_closes_the_connection_keeps_the_long_grace(tmp_path: Path) -> None:
    with NatsServer(tmp_path / "nats") as server:
        publisher = Publisher(server.url, connect_timeout=1.0)
        await publisher.connect()
        try:
            await asyncio.to_thread(server.stop)
            await asyncio.sleep(SILENT_GRACE + 0.5)
            assert not publisher.connected and not publisher._left_silent
            assert publisher.moving  # MOVE_GRACE (5 s): a dead node's peers answer at once
        finally:
            # back, so the client is attached when it closes (nats-py may swallow the cancellation of
            # a reconnect loop, which then outlives the test's event loop)
            await asyncio.to_thread(server.start)
            deadline = time.monotonic() + 20
            while not publisher.connected and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await publisher.close()
