"""Whether the revocations consumer has replayed its stream up to the end JetStream reported.

Why: revocations only ever add refusals, so a sidecar deciding before it has read them all
allows tokens revoked while it was down (or while it lost a message). At every (re)subscribe
the follower asks JetStream for the stream's last sequence; until the consumer has applied
everything up to it, the decision core is held (every decision denied
``revocations_not_synced``, ``/ready`` false, search and token exchange refused). A position
or a "caught up" note read from the state directory is never enough: only the live stream
says where its end is, so a restarted sidecar with NATS unreachable stays held.

A running sidecar that loses NATS is not held (it keeps deciding from memory, as before);
when it resubscribes, it is held again only if the stream moved on meanwhile.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from tenantguard.decision.hold import DecisionHold
from tenantguard.errors import RevocationsNotSynced

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """What JetStream said about the stream at a (re)subscribe."""

    last_seq: int
    messages: int


class CatchUp:
    """Holds ``hold`` with :class:`RevocationsNotSynced` from construction until caught up."""

    def __init__(self, hold: DecisionHold) -> None:
        self._hold = hold
        self.target = 0  # the stream's last seq at the latest (re)subscribe
        self.caught_up_seq = 0  # the stream seq this process last caught up at (0: not yet)
        self.synced = False
        self._behind("revocations not replayed from NATS yet")

    def begin(self, position: int, end: StreamEnd) -> None:
        """A (re)subscribe resuming after stream seq ``position``; ``end`` is the live stream's."""
        self.target = end.last_seq
        if position >= end.last_seq or end.messages == 0:
            self._reached(position)
        else:
            self._behind(f"replaying revocations: stream seq {position} of {end.last_seq}")

    def advance(self, position: int, num_pending: int) -> None:
        """Stream seq ``position`` handled; ``num_pending``: what the consumer still has after it
        (0 also means caught up when the target message itself is gone from the stream)."""
        if not self.synced and (position >= self.target or num_pending == 0):
            self._reached(position)

    def lost(self, why: str) -> None:
        """Something was missed (a message dropped by the client): held until replayed again."""
        self._behind(why)

    def _reached(self, position: int) -> None:
        self.caught_up_seq = max(position, self.target)
        if not self.synced:
            self.synced = True
            log.info("revocations caught up at stream seq %d", self.caught_up_seq)
            self._hold.release(RevocationsNotSynced.code)

    def _behind(self, why: str) -> None:
        self.synced = False
        self._hold.hold(RevocationsNotSynced(why))
