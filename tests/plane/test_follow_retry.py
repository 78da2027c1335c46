"""A plane replica rides out NATS refusing to create its consumers for a while.

In a chaos run (plane killed and restarted while the cluster recovered) a replica exited on
"follow TG_BUNDLES: NATS unavailable (TimeoutError)" during its start. Creating an ordered
consumer is now retried for a while; a lasting failure still raises.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.errors import Unavailable
from tenantguard.feed import topology as topo

from policy_plane.follower import Follower
from policy_plane.publisher import Publisher

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

SUBJECT = topo.relations_subject("c0")


class SlowToFollow(Publisher):
    """A real publisher whose next ``failures`` consumer creations time out (a meta-leader election)."""

    def __init__(self, url: str, failures: int) -> None:
        super().__init__(url)
        self.failures = failures
        self.attempts = 0

    async def _follow_once(self, stream: str, subject: str, handler: Any, start_seq: int) -> Any:
        self.attempts += 1
        if self.failures > 0:
            self.failures -= 1
            raise Unavailable(f"follow {stream}: NATS unavailable (TimeoutError)")
        return await super()._follow_once(stream, subject, handler, start_seq)


async def test_a_follower_rides_out_consumer_creations_that_time_out(tmp_path: Path) -> None:
    with NatsServer(tmp_path / "nats") as server:
        slow = SlowToFollow(server.url, failures=3)
        await slow.connect()
        await slow.ensure_topology()
        seen: list[bytes] = []

        async def apply(subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
            seen.append(data)

        try:
            await slow.publish(SUBJECT, b"first")
            follower = Follower(slow, topo.STREAM_RELATIONS, topo.SUBJECT_RELATIONS_ALL, apply)
            await follower.start()
            await follower.wait_for(1, 10.0)
            assert seen == [b"first"] and slow.attempts == 4
            await follower.stop()
            slow.failures = 10**6
            with pytest.raises(Unavailable):
                await slow.follow(topo.STREAM_RELATIONS, SUBJECT, apply, patience=1.0)
        finally:
            await slow.close()
