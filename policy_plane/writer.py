"""Commit one event to a sequenced subject, safely among several plane replicas.

``commit(build)`` reads the subject's last JetStream sequence as this replica has
consumed it, asks ``build()`` for the signed event (which reads the current state to
pick the next ``seq`` and, for read-modify-write subjects such as the trust set, the
current content), and publishes it with ``Nats-Expected-Last-Subject-Sequence``. If
another replica won the race, JetStream refuses; we consume what it wrote and build
again on top of it. The attempt count is bounded; every round someone wins, so with a
few replicas the retries are short. After a successful publish we wait until our own
follower has applied the message, so the caller reads its own write.

Within one replica a lock serialises writers of a subject: they would only conflict
with each other.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable

from .follower import Follower
from .publisher import Publisher, SequenceConflict

DEFAULT_ATTEMPTS = 64


class SequencedWriter:
    def __init__(self, publisher: Publisher, follower: Follower, subject: str, *,
                 timeout: float = 10.0, attempts: int = DEFAULT_ATTEMPTS) -> None:
        self.publisher = publisher
        self.follower = follower
        self.subject = subject
        self.timeout = timeout
        self.attempts = attempts
        self.conflicts = 0
        self._lock = asyncio.Lock()

    async def commit(self, build: Callable[[], bytes], *, headers: dict[str, str] | None = None) -> int:
        """Publish ``build()``; return its JetStream sequence once this replica has applied it.

        ``build`` may raise (e.g. the change no longer applies to the newer state): the
        error propagates and nothing is published.
        """
        async with self._lock:
            for attempt in range(self.attempts):
                expected = self.follower.last_on(self.subject)
                data = build()  # no await between reading ``expected`` and the state ``build`` reads
                try:
                    stream_seq = await self.publisher.publish(
                        self.subject, data, expected_last_subject_seq=expected, headers=headers
                    )
                except SequenceConflict:
                    self.conflicts += 1
                    await self.follower.catch_up(self.subject, self.timeout)
                    # a little jitter keeps two replicas from colliding in lockstep
                    await asyncio.sleep(secrets.randbelow(1000 * (attempt + 1)) / 1_000_000)
                    continue
                await self.follower.wait_for(stream_seq, self.timeout)
                return stream_seq
        raise SequenceConflict(f"{self.subject}: gave up after {self.attempts} conflicting attempts")
