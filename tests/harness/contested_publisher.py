"""A plane publisher that keeps losing sequence races: a rival (a second real NATS connection)
publishes on the subject right before each of its publishes, so JetStream really refuses them
(wrong last sequence), as when another replica's batch lands first."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypeVar

from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import topology as topo

from policy_plane.follower import Follower
from policy_plane.publisher import Publisher, Stored


class Contested(Publisher):
    """Our publisher, with a rival that publishes first the next ``rival_wins`` times."""

    def __init__(self, url: str, rival: Publisher) -> None:
        super().__init__(url)
        self.rival = rival
        self.rival_wins = 0

    async def publish(self, subject: str, data: bytes, **options: Any) -> Stored:
        if self.rival_wins > 0:
            self.rival_wins -= 1
            await self.rival.publish(subject, b"rival batch")
        return await super().publish(subject, data, **options)


P = TypeVar("P", bound="Contested")


@contextlib.asynccontextmanager
async def racing(tmp_path: Path, kind: type[P]) -> AsyncIterator[tuple[P, Follower, list[bytes]]]:
    """A real server, our publisher of ``kind`` with its rival, and a follower recording what it applies."""
    with NatsServer(tmp_path / "nats") as server:
        rival = Publisher(server.url)
        await rival.connect()
        ours = kind(server.url, rival)
        await ours.connect()
        await ours.ensure_topology()
        applied: list[bytes] = []

        async def apply(subject: str, stream_seq: int, data: bytes, headers: dict[str, str]) -> None:
            applied.append(data)

        follower = Follower(ours, topo.STREAM_RELATIONS, topo.SUBJECT_RELATIONS_ALL, apply)
        await follower.start()
        try:
            yield ours, follower, applied
        finally:
            await follower.stop()
            await ours.close()
            await rival.close()
