"""Which plane replicas are alive, and which one writes each cell.

A replica is alive while its signed heartbeats (``tg.plane.heartbeat``, every replica sends
them) keep arriving. The writer of a cell is chosen among the live replicas by rendezvous
hashing (the highest SHA-256 of cell and replica), so every replica that sees the same
set picks the same writer without talking to the others, the cells spread over the
replicas, and a replica joining or leaving moves only the cells it wins or held.

Nothing here is needed for correctness: JetStream's expected-sequence check orders every
batch whoever publishes it. Two replicas that disagree for a moment (one has not heard a
heartbeat yet) both write, as every replica did before forwarding, and race as before.
"""

from __future__ import annotations

import hashlib
import time
from typing import Final

from tenantguard.events import EventRejected, verify_event
from tenantguard.freshness import Heartbeat
from tenantguard.keys import TrustSet
from tenantguard.topology import PLANE_HEARTBEAT, replica_token

BEATS_MISSED: Final = 3  # a replica unheard of for this many heartbeat intervals is taken for gone


class Peers:
    def __init__(self, me: str, trust: TrustSet, heartbeat_seconds: float) -> None:
        self.me = me  # our replica token
        self.trust = trust
        self.ttl = BEATS_MISSED * heartbeat_seconds
        self._seen: dict[str, float] = {}  # replica token -> monotonic time its last heartbeat arrived
        self._benched: dict[str, float] = {}  # replica token -> monotonic time until which it is not asked

    def on_heartbeat(self, data: bytes) -> None:
        """Note the replica a genuine, unexpired heartbeat comes from (anything else is ignored)."""
        try:
            beat = Heartbeat.from_event(verify_event(data, self.trust, expected_type=PLANE_HEARTBEAT))
        except EventRejected:
            return
        if beat.replica:
            token = replica_token(beat.replica)
            if token != self.me:
                self._seen[token] = time.monotonic()

    def bench(self, token: str, seconds: float) -> None:
        """Do not hand ``token`` writes for ``seconds`` (it did not take the last ones)."""
        self._benched[token] = time.monotonic() + seconds

    def live(self) -> list[str]:
        """The other replicas heard from lately and not benched, by token."""
        now = time.monotonic()
        return [t for t, at in self._seen.items() if now - at <= self.ttl and self._benched.get(t, 0.0) <= now]

    def writer_of(self, cell: str) -> str | None:
        """The replica that writes ``cell``; None when it is this one."""
        best = max([self.me, *self.live()], key=lambda token: _rank(cell, token))
        return None if best == self.me else best


def _rank(cell: str, token: str) -> bytes:
    return hashlib.sha256(f"{cell}\n{token}".encode()).digest()
