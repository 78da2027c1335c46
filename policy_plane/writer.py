"""Commit one event to a sequenced subject, safely among several plane replicas.

``commit(build)`` reads the subject's last JetStream sequence as this replica has
consumed it, asks ``build()`` for the signed event (which reads the current state to
pick the next ``seq`` and, for read-modify-write subjects such as the trust set, the
current content), and publishes it with ``Nats-Expected-Last-Subject-Sequence``. If
another replica won the race, JetStream refuses; we consume what it wrote and build
again on top of it, at once. Retries are bounded by time (``timeout``), not by count: a lost
race means another replica committed, so the system progresses while one replica loses,
and under sustained load a replica may lose many races in a row (``streak`` keeps the
longest run). There is no back-off between attempts: the winner's next batch is already
waiting, so a loser that sleeps only hands it the next race too (with a back-off growing
per loss, a replica under 32 clients lost 64 races in a row and refused writes while the
system was healthy). After a successful publish we wait until our own follower has
applied the message, so the caller reads its own write.

Within one replica a lock serialises writers of a subject: they would only conflict
with each other.

Unknown outcomes. A publish that fails with :class:`~tenantguard.errors.Unavailable` (no
acknowledgement: the connection closed under it as its node went into lame-duck mode or died,
no stream leader answered during an election, the request timed out) may or may not have been
stored. It is sent again, the *same* bytes with the same expected sequence and the same
``Nats-Msg-Id`` (the caller's idempotency key, else the SHA-256 of the signed bytes), until it
is acknowledged or the commit's ``timeout`` runs out. One that was not stored is stored now.
One that was is refused as a conflict (its own copy made the expectation stale; nats-server
checks the sequence before the id) or answered as a duplicate: on a conflict after an unknown
outcome the writer reads the first message stored after its expectation, and when those are
its own bytes, that is its commit, at that sequence. Only a rival's message there makes it
rebuild, as for any lost race, so a write is never stored twice nor answered at another
sequence than the one it is stored at. A publisher that is not attached and no longer moving
to another node (``Publisher.moving``: NATS is gone) ends this at once. Before this,
each such failure reached the caller as a 503 (one per node leaving in lame-duck mode, one per
stream-leader handover in the chaos runs).

Compaction. On "newest wins" subjects (trust, bundle announces, snapshot manifests) the
stream keeps history, so that a replayed old event can never become "the last one". After
each commit the writer removes what precedes its own message on the subject: the newest
genuine event is then always the first one stored, and replays published later sit behind
it, where every reader's "highest seq wins" rule ignores them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tenantguard.errors import TenantGuardError, Unavailable

from .follower import Follower
from .publisher import Publisher, SequenceConflict, Stored

log = logging.getLogger(__name__)

DEFAULT_READBACK = 3.0  # seconds to wait for our own message to be consumed back
REPUBLISH_PAUSE = 0.25  # seconds between sending one message again while its outcome is unknown


@dataclass(frozen=True, slots=True)
class Commit:
    """A committed write: where it is stored, whether it was an idempotent retry of an earlier
    one (``duplicate``: the stored message is that first one), and whether this replica has
    applied it yet (``applied``: False only when the read-back timed out; it is committed)."""

    stream_seq: int
    duplicate: bool = False
    applied: bool = True


@dataclass(frozen=True, slots=True)
class Written:
    """The outcome of a sequenced write: its sequence (the consistency token), whether it is the
    first outcome of an earlier request with the same idempotency key, and whether this
    replica has applied it yet (committed either way)."""

    seq: int
    replayed: bool = False
    applied: bool = True
    payload: dict[str, Any] | None = None
    cell: str | None = None  # relations writes: the tenant cell whose sequence ``seq`` is


class SequencedWriter:
    def __init__(self, publisher: Publisher, follower: Follower, subject: str, *,
                 timeout: float = 10.0, compact: bool = False,
                 readback: float = DEFAULT_READBACK, seal: Callable[[bytes], dict[str, str]] | None = None) -> None:
        self.publisher = publisher
        self.seal = seal  # headers made from each message's bytes (the replicas' MAC, .replicamac)
        self.compact = compact
        self.readback = readback
        self.follower = follower
        self.subject = subject
        self.timeout = timeout
        self.conflicts = 0  # sequence races lost
        self.streak = 0  # most races one commit lost in a row
        self.republished = 0  # publishes sent again after an unknown outcome (see the module docstring)
        self._lock = asyncio.Lock()

    async def commit(self, build: Callable[[], bytes], *, headers: dict[str, str] | None = None,
                     msg_id: str | None = None) -> Commit:
        """Publish ``build()``; return where it is stored, once this replica has applied it.

        ``build`` may raise (e.g. the change no longer applies to the newer state): the
        error propagates and nothing is published. ``msg_id`` (an idempotency key) makes a
        retry of a write that was committed before return that first write (``duplicate``).
        Once JetStream has acknowledged, the write is committed: if reading it back takes
        longer than ``readback`` (a follower being reset), the answer still says so
        (``applied=False``) instead of failing a write that took place.
        """
        async with self._lock:
            loop = asyncio.get_running_loop()
            deadline, lost = loop.time() + self.timeout, 0
            while True:
                expected = self.follower.last_on(self.subject)
                data = build()  # no await between reading ``expected`` and the state ``build`` reads
                sent = {**(headers or {}), **self.seal(data)} if self.seal is not None else headers
                try:
                    stored = await self._publish(data, expected, sent, msg_id or content_id(data), deadline)
                except SequenceConflict as conflict:
                    self.conflicts += 1
                    lost += 1
                    self.streak = max(self.streak, lost)
                    left = deadline - loop.time()
                    if left <= 0:
                        raise SequenceConflict(f"{self.subject}: other writers won {lost} races in a row "
                                               f"for {self.timeout:g}s; retry", races_lost=lost) from None
                    await self.follower.catch_up(self.subject, left, conflict.detail.get("last"))
                    continue
                try:
                    await self.follower.wait_for(stored.stream_seq, self.readback)
                except Unavailable:
                    log.warning("%s: message %d committed but not yet consumed back", self.subject, stored.stream_seq)
                    return Commit(stored.stream_seq, stored.duplicate, applied=False)
                if self.compact and not stored.duplicate:
                    await self._compact(stored.stream_seq)
                return Commit(stored.stream_seq, stored.duplicate)

    async def _publish(self, data: bytes, expected: int, headers: dict[str, str] | None, msg_id: str,
                       deadline: float) -> Stored:
        """Publish ``data``; again, unchanged, while the outcome is unknown and time is left."""
        loop = asyncio.get_running_loop()
        unknown = False
        while True:
            if not self.publisher.connected and not self.publisher.moving:
                # gone past the grace: refuse at once (raised inside the try below, it was taken for
                # one more unknown outcome and the write sent again until its 10 s deadline)
                raise Unavailable("not connected to NATS")
            try:
                try:  # a copy sent again waits no later than the commit's deadline (no hang past it)
                    return await self.publisher.publish(self.subject, data, expected_last_subject_seq=expected,
                                                        headers=headers, msg_id=msg_id,
                                                        timeout=max(0.1, deadline - loop.time()) if unknown else None)
                except SequenceConflict:  # no Unavailable: commit() handles it, unless it is our own copy
                    if not unknown:
                        raise
                    landed = await self.publisher.first_after(self.follower.stream, self.subject, expected)
                    if landed is None or landed.data != data:
                        raise
                    log.info("%s: the message sent before the outcome was lost is stored at %d",
                             self.subject, landed.stream_seq)
                    return Stored(landed.stream_seq)
            except Unavailable as exc:
                unknown = True
                if loop.time() + REPUBLISH_PAUSE >= deadline:
                    raise
                self.republished += 1
                log.info("%s: %s; sending the same message again", self.subject, exc.message)
            await asyncio.sleep(REPUBLISH_PAUSE)

    async def _compact(self, stream_seq: int) -> None:
        """Best effort: a failed purge leaves older genuine events that readers skip anyway."""
        try:
            await self.publisher.purge_before(self.follower.stream, self.subject, stream_seq)
        except TenantGuardError as exc:
            log.warning("could not compact %s before message %d: %s", self.subject, stream_seq, exc)


def content_id(data: bytes) -> str:
    """The ``Nats-Msg-Id`` of a message published without an idempotency key: its bytes' SHA-256
    (signed bytes name their subject's ``seq``, so two different events never share it)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()
