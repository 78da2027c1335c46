"""A JetStream read answered "unavailable" during a leader handover is asked again, bounded.

Found by the lame-duck cluster test (tests/cluster/test_lame_duck.py): when the meta leader
left, a writer catching up after a lost race read the subject's last sequence, JetStream
answered 503 for a moment, and the caller got ``503 read last tg.relations.changes.c0:
JetStream is not available`` for a write that would have gone through a tenth of a second
later. A handover cannot be timed from a test on one server, so here the real client's
answers are replaced for a few asks by the ones JetStream gives in one (a 503, no
responders); the server, the stream and the messages are real.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import nats.errors
import nats.js.errors
import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.errors import Unavailable
from tenantguard.feed import topology as topo

from policy_plane import publisher as publisher_module
from policy_plane.follower import Follower
from policy_plane.publisher import Publisher, SequenceConflict, Stored
from policy_plane.writer import SequencedWriter
from tests.harness.contested_publisher import Contested, racing

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]

SUBJECT = topo.relations_subject("c0")
HANDOVER_ANSWERS: list[Callable[[], Exception]] = [
    nats.js.errors.ServiceUnavailableError,  # the API's 503 while the meta leader changes
    nats.errors.NoRespondersError,  # nobody listening on the API subject yet
]


class InHandover:
    """Stands in front of one JetStream read of a real client: its next ``times`` asks meet
    what a handover answers, the ones after reach the server."""

    def __init__(self, read: Callable[..., Awaitable[Any]], answer: Callable[[], Exception]) -> None:
        self.read, self.answer = read, answer
        self.times = 0
        self.asked = 0

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.asked += 1
        if self.times > 0:
            self.times -= 1
            raise self.answer()
        return await self.read(*args, **kwargs)


class ClusterConflicts(Contested):
    """A lost race refused as a clustered stream refuses it: without saying the last sequence,
    so the writer has to read it; ``rival_wins``: a rival publishes first that many times."""

    async def publish(self, subject: str, data: bytes, **options: Any) -> Stored:
        try:
            return await super().publish(subject, data, **options)
        except SequenceConflict as conflict:
            raise SequenceConflict(conflict.message) from None  # error 10164 states no last sequence


@pytest.fixture
async def plane(tmp_path: Path) -> AsyncIterator[tuple[ClusterConflicts, Follower, list[bytes]]]:
    async with racing(tmp_path, ClusterConflicts) as racing_plane:
        yield racing_plane


def _in_handover(publisher: Publisher, read: str, answer: Callable[[], Exception]) -> InHandover:
    js = publisher.js
    stand_in = InHandover(getattr(js, read), answer)
    setattr(js, read, stand_in)
    return stand_in


@pytest.mark.parametrize("answer", HANDOVER_ANSWERS, ids=lambda a: a.__name__)
async def test_a_writer_that_lost_a_race_during_a_handover_still_commits(
        plane: tuple[ClusterConflicts, Follower, list[bytes]], answer: Callable[[], Exception]) -> None:
    ours, follower, applied = plane
    writer = SequencedWriter(ours, follower, SUBJECT, timeout=10.0)
    ours.rival_wins = 1
    reads = _in_handover(ours, "get_last_msg", answer)
    reads.times = 3
    commit = await writer.commit(lambda: b"our batch")
    assert commit.stream_seq == 2 and writer.conflicts == 1
    assert reads.times == 0 and reads.asked == 4  # three answered "unavailable", the fourth read the rival's
    assert applied == [b"rival batch", b"our batch"]


@pytest.mark.parametrize("answer", HANDOVER_ANSWERS, ids=lambda a: a.__name__)
async def test_each_read_is_asked_again_through_a_handover(
        plane: tuple[ClusterConflicts, Follower, list[bytes]], answer: Callable[[], Exception]) -> None:
    ours, _, _ = plane
    await ours.publish(SUBJECT, b"one")
    for read, ask in [
        ("get_last_msg", lambda: ours.last_on_subject(topo.STREAM_RELATIONS, SUBJECT)),
        ("get_msg", lambda: ours.stored(topo.STREAM_RELATIONS, 1)),
        ("stream_info", lambda: ours.stream_bounds(topo.STREAM_RELATIONS)),
    ]:
        stand_in = _in_handover(ours, read, answer)
        stand_in.times = 2
        found = await ask()
        assert found is not None and stand_in.asked == 3, read
    assert await ours.first_after(topo.STREAM_RELATIONS, SUBJECT, 0) is not None


async def test_a_handover_longer_than_the_patience_fails_retryably_in_bounded_time(
        plane: tuple[ClusterConflicts, Follower, list[bytes]]) -> None:
    ours, _, _ = plane
    stand_in = _in_handover(ours, "get_last_msg", nats.js.errors.ServiceUnavailableError)
    stand_in.times = 10**9
    with pytest.raises(Unavailable) as refused:
        await ours.last_on_subject(topo.STREAM_RELATIONS, SUBJECT, patience=0.5)
    assert refused.value.retryable and refused.value.http_status == 503
    assert "JetStream is not available" in refused.value.message
    assert 2 <= stand_in.asked <= 10  # asked again, then gave up: about patience / pause times, not forever


async def test_a_missing_message_and_a_final_refusal_are_not_asked_again(
        plane: tuple[ClusterConflicts, Follower, list[bytes]]) -> None:
    ours, _, _ = plane
    assert await ours.last_on_subject(topo.STREAM_RELATIONS, SUBJECT) is None  # nothing there: at once
    with pytest.raises(Unavailable, match="is gone"):
        await ours.stored(topo.STREAM_RELATIONS, 7)
    refusal = _in_handover(ours, "get_last_msg", lambda: nats.js.errors.BadRequestError(description="bad"))
    refusal.times = 5
    with pytest.raises(Unavailable, match="JetStream refused: bad"):
        await ours.last_on_subject(topo.STREAM_RELATIONS, SUBJECT)
    assert refusal.asked == 1


async def test_once_nats_is_gone_a_read_fails_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(publisher_module, "MOVE_GRACE", 0.2)
    server = NatsServer(tmp_path / "nats").start()
    ours = Publisher(server.url)
    try:
        await ours.connect()
        server.stop()
        deadline = time.monotonic() + 10
        while (ours.connected or ours.moving) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not ours.connected and not ours.moving  # reconnecting past the grace: the cluster is gone
        stand_in = _in_handover(ours, "get_last_msg", nats.errors.ConnectionReconnectingError)
        stand_in.times = 10**9
        with pytest.raises(Unavailable):
            await ours.last_on_subject(topo.STREAM_RELATIONS, SUBJECT)
        assert stand_in.asked == 1
    finally:
        await ours.close()
        server.stop()


async def test_the_follower_watchdog_asks_once_and_looks_again_on_its_next_pass(
        plane: tuple[ClusterConflicts, Follower, list[bytes]]) -> None:
    """The watchdog reads every follower's stream once a second; waiting out a handover on each
    would leave all of their lags unreported meanwhile."""
    ours, follower, _ = plane
    stand_in = _in_handover(ours, "get_last_msg", nats.js.errors.ServiceUnavailableError)
    stand_in.times = 10**9
    with pytest.raises(Unavailable):
        await follower.stored_last(patience=0.0)
    assert stand_in.asked == 1
