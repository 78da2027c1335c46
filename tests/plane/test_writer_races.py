"""A replica that keeps losing sequence races keeps trying until its deadline, never by count.

A rival replica is a second real NATS connection that publishes on the subject right
before each of our publishes, so JetStream really refuses ours (wrong last sequence), as
when another replica's batch lands first. Under sustained load a replica lost 64 races in
a row and answered 409 while the system was healthy: losing is progress for the system,
so only time bounds the retries.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tenantguard.errors import Unavailable
from tenantguard.feed import topology as topo

from policy_plane.follower import Follower
from policy_plane.publisher import Publisher, SequenceConflict, Stored
from policy_plane.writer import SequencedWriter
from tests.harness.contested_publisher import Contested, racing

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

SUBJECT = topo.relations_subject("c0")


@pytest.fixture
async def contested(tmp_path: Path) -> AsyncIterator[tuple[Contested, Follower, list[bytes]]]:
    async with racing(tmp_path, Contested) as plane:
        yield plane


async def test_a_replica_that_loses_a_hundred_races_in_a_row_still_commits(
        contested: tuple[Contested, Follower, list[bytes]]) -> None:
    ours, follower, applied = contested
    writer = SequencedWriter(ours, follower, SUBJECT, timeout=60.0)
    builds = 0

    def build() -> bytes:
        nonlocal builds
        builds += 1
        return b"our batch"

    ours.rival_wins = 100
    commit = await writer.commit(build)
    assert (writer.conflicts, writer.streak, builds) == (100, 100, 101)  # rebuilt on the newer state each time
    assert commit.stream_seq == 101 and commit.applied
    assert applied == [b"rival batch"] * 100 + [b"our batch"]  # ours after every rival batch, once


async def test_a_replica_that_never_wins_gives_up_at_its_deadline_with_a_retryable_error(
        contested: tuple[Contested, Follower, list[bytes]]) -> None:
    ours, follower, applied = contested
    writer = SequencedWriter(ours, follower, SUBJECT, timeout=0.5)
    ours.rival_wins = 10**9
    with pytest.raises(SequenceConflict) as refused:
        await writer.commit(lambda: b"our batch")
    assert refused.value.retryable and refused.value.http_status == 409
    assert refused.value.detail["races_lost"] == writer.streak == writer.conflicts > 0
    assert b"our batch" not in applied  # nothing of ours was stored
    await follower.catch_up(SUBJECT, 5.0)
    assert applied == [b"rival batch"] * len(applied) and len(applied) >= writer.conflicts



class AckLost(Contested):
    """Our publisher, whose next ``lost`` publishes reach JetStream (stored) but whose answers
    are lost on the way back, and whose next ``unsent`` publishes fail before leaving (as when
    the node closes the connection in lame-duck mode, or no stream leader answers yet)."""

    def __init__(self, url: str, rival: Publisher) -> None:
        super().__init__(url, rival)
        self.lost = 0
        self.unsent = 0

    async def publish(self, subject: str, data: bytes, **options: Any) -> Stored:
        if self.unsent > 0:
            self.unsent -= 1
            raise Unavailable(f"publish {subject}: NATS unavailable (NoStreamResponseError)")
        stored = await super().publish(subject, data, **options)
        if self.lost > 0:
            self.lost -= 1
            raise Unavailable(f"publish {subject}: NATS unavailable (TimeoutError)")
        return stored


@pytest.fixture
async def lossy(tmp_path: Path) -> AsyncIterator[tuple[AckLost, Follower, list[bytes]]]:
    async with racing(tmp_path, AckLost) as plane:
        yield plane


async def test_a_publish_whose_answer_was_lost_is_sent_again_and_stored_once(
        lossy: tuple[AckLost, Follower, list[bytes]]) -> None:
    """Before: the lost answer reached the caller as a 503 (the write was stored all the same)."""
    ours, follower, applied = lossy
    writer = SequencedWriter(ours, follower, SUBJECT, timeout=10.0)
    ours.lost = 2  # the second copy is refused (its own first copy is there): it reads what is stored
    commit = await writer.commit(lambda: b"our batch")
    assert (commit.stream_seq, commit.applied) == (1, True)  # the first attempt's own sequence
    assert writer.republished == 1 and writer.conflicts == 0
    assert applied == [b"our batch"]  # stored once, at the sequence answered


async def test_a_publish_that_never_left_is_sent_again_after_a_rival_got_there_first(
        lossy: tuple[AckLost, Follower, list[bytes]]) -> None:
    """Unsent, then the expectation goes stale: the conflict is handled as any lost race."""
    ours, follower, applied = lossy
    writer = SequencedWriter(ours, follower, SUBJECT, timeout=10.0)
    ours.unsent, ours.rival_wins = 3, 1
    commit = await writer.commit(lambda: b"our batch")
    assert commit.stream_seq == 2 and writer.republished == 3 and writer.conflicts == 1
    assert applied == [b"rival batch", b"our batch"]


async def test_a_keyless_batch_whose_answer_was_lost_is_not_rebuilt_and_stored_twice(
        lossy: tuple[AckLost, Follower, list[bytes]]) -> None:
    """A rebuilt batch carries a new seq, so new bytes and a new Nats-Msg-Id: had the conflict
    that our own stored copy causes been taken for a rival's, the changes would be stored twice
    and answered at the second copy's sequence."""
    ours, follower, applied = lossy
    writer = SequencedWriter(ours, follower, SUBJECT, timeout=10.0)
    builds = 0

    def build() -> bytes:
        nonlocal builds
        builds += 1
        return f"batch built {builds} times".encode()

    ours.lost = 1
    commit = await writer.commit(build)
    assert builds == 1 and commit.stream_seq == 1 and writer.conflicts == 0
    assert applied == [b"batch built 1 times"]


async def test_an_outcome_that_stays_unknown_fails_retryably_at_the_deadline(
        lossy: tuple[AckLost, Follower, list[bytes]]) -> None:
    ours, follower, applied = lossy
    writer = SequencedWriter(ours, follower, SUBJECT, timeout=1.0)
    ours.unsent = 10**9
    with pytest.raises(Unavailable) as refused:
        await writer.commit(lambda: b"our batch")
    assert refused.value.retryable and refused.value.http_status == 503
    assert applied == [] and writer.republished >= 1
