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

Compaction. On "newest wins" subjects (trust, bundle announces, snapshot manifests) the
stream keeps history, so that a replayed old event can never become "the last one". After
each commit the writer removes what precedes its own message on the subject: the newest
genuine event is then always the first one stored, and replays published later sit behind
it, where every reader's "highest seq wins" rule ignores them.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable

from tenantguard.errors import TenantGuardError

from .follower import Follower
from .publisher import Publisher, SequenceConflict

log = logging.getLogger(__name__)

DEFAULT_ATTEMPTS = 64


class SequencedWriter:
    def __init__(self, publisher: Publisher, follower: Follower, subject: str, *,
                 timeout: float = 10.0, attempts: int = DEFAULT_ATTEMPTS, compact: bool = False) -> None:
        self.publisher = publisher
        self.compact = compact
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
                if self.compact:
                    await self._compact(stream_seq)
                return stream_seq
        raise SequenceConflict(f"{self.subject}: gave up after {self.attempts} conflicting attempts")

    async def _compact(self, stream_seq: int) -> None:
        """Best effort: a failed purge leaves older genuine events that readers skip anyway."""
        try:
            await self.publisher.purge_before(self.follower.stream, self.subject, stream_seq)
        except TenantGuardError as exc:
            log.warning("could not compact %s before message %d: %s", self.subject, stream_seq, exc)
