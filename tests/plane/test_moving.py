"""A replica between two nodes still takes writes, for ``MOVE_GRACE`` seconds.

nats-py is "reconnecting" while it dials and "connecting" while it waits for the next
node's INFO; only the first counted as moving, so a write arriving during a handshake was
refused 503 "not connected to NATS" (once in tests/cluster/test_replicas.py, the stream
leader killed under a replica). A listener that accepts and says nothing holds the client
in that handshake here.
"""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest
from tenantguard.dev.natsserver import NatsServer

from policy_plane.publisher import MOVE_GRACE, Publisher

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]


async def test_moving_holds_through_the_handshake_and_ends_after_the_grace(tmp_path: Path) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts (the kernel does), never answers: nats-py waits for INFO
    with NatsServer(tmp_path / "nats") as server:
        publisher = Publisher(f"{server.url},nats://127.0.0.1:{silent.getsockname()[1]}", connect_timeout=1.0)
        await publisher.connect()  # to the real server: the silent one never completes a handshake
        assert publisher.server == server.url
        try:
            server.stop()
            left = time.monotonic()
            seen: set[str] = set()
            while time.monotonic() - left < MOVE_GRACE - 1.0:
                nc = publisher.nc
                state = "connecting" if nc.is_connecting else "reconnecting" if nc.is_reconnecting else "other"
                if not nc.is_connected:
                    assert publisher.moving, f"not moving while {state}"
                    seen.add(state)
                await asyncio.sleep(0.02)
            assert "connecting" in seen, seen  # the handshake with the silent node was observed
            deadline = time.monotonic() + 10
            while publisher.moving:  # past the grace: NATS is gone, writes are refused at once
                assert time.monotonic() < deadline, "still moving long after the grace"
                await asyncio.sleep(0.05)
            assert not publisher.connected
        finally:
            await publisher.close()
            silent.close()
