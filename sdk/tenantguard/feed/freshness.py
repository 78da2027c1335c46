"""The plane's signed heartbeat: what "up to date" means, and for how long a reader may believe it.

A sidecar that hears nothing new cannot tell a quiet plane from an attacker who withholds
messages (TUF's *freeze attack*) or who replays old ones. The heartbeat answers both, the
way TUF's timestamp role does:

* it names the newest version of every stream the plane has (relations, trust,
  revocations, and the bundle announce of every scope), so a reader that applied less
  knows it is **behind**, whatever the broker happens to deliver;
* it carries a signed **expiry**. A reader takes a heartbeat only while it is unexpired by
  its own clock, so a captured heartbeat replayed later is worthless, and a reader fed
  nothing new sees its last heartbeat age past the bound and reports (and, for high-risk
  actions, refuses) instead of believing it is fresh.

The plane and its readers therefore need clocks within a few seconds of each other (NTP),
as TUF clients do; the expiry is several heartbeat intervals long to absorb that.

Wire payload (type ``plane.heartbeat``; ``seq`` is the issue time in milliseconds, so
heartbeats of every replica keep increasing)::

    {"relations_seq": 42, "cells": 2, "relations": {"c0": 42, "c1": 17}, "trust_seq": 8,
     "revocations_seq": 3, "bundles": {"all": 5, "billing": 2}, "expires_at_ms": 1767225620000,
     "replica": "plane-1"}

``relations`` names the newest relations sequence of every tenant cell (each cell has its
own sequence, ``tenantguard.feed.topology.cell_of``) and ``cells`` the system's cell count, which
a sidecar compares with its own setting; ``relations_seq`` is the highest of them (kept for
readers that predate cells).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from tenantguard.feed.events import Event, EventMalformed, sign_event
from tenantguard.feed.topology import MAX_CELLS, PLANE_HEARTBEAT, cell_index
from tenantguard.identity.keys import SigningKey

MIN_VALIDITY_SECONDS: Final = 10.0
VALIDITY_INTERVALS: Final = 4  # a heartbeat outlives this many intervals: a few lost ones are not an alarm
MAX_SCOPES: Final = 1024
_SCOPE_RE: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_SEQS: Final = ("relations_seq", "trust_seq", "revocations_seq")


class HeartbeatExpired(EventMalformed):
    """A genuine heartbeat past its signed expiry: a replay, or a clock far off."""

    code = "event_expired"


def validity_for(interval_seconds: float) -> float:
    """How long a heartbeat sent every ``interval_seconds`` stays believable."""
    return max(MIN_VALIDITY_SECONDS, VALIDITY_INTERVALS * interval_seconds)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """The plane's newest versions, as of ``issued_at``, believable until ``expires_at``."""

    relations_seq: int
    trust_seq: int
    revocations_seq: int
    bundles: Mapping[str, int] = field(default_factory=dict)
    issued_at: float = 0.0
    expires_at: float = 0.0
    replica: str = ""
    cells: int = 1
    relations: Mapping[str, int] = field(default_factory=dict)  # cell -> newest relations seq

    def sign(self, key: SigningKey) -> bytes:
        payload: dict[str, Any] = {name: getattr(self, name) for name in _SEQS}
        payload |= {"bundles": dict(self.bundles), "expires_at_ms": int(self.expires_at * 1000),
                    "replica": self.replica, "cells": self.cells, "relations": dict(self.relations)}
        return sign_event(key, PLANE_HEARTBEAT, payload, int(self.issued_at * 1000), now=self.issued_at)

    @classmethod
    def from_event(cls, event: Event, *, now: float | None = None) -> Heartbeat:
        """The heartbeat in a verified event; raise if malformed or expired at ``now``."""
        p = event.payload
        seqs = [p.get(name) for name in _SEQS]
        if not all(_is_seq(s) for s in seqs):
            raise EventMalformed("heartbeat sequences must be non-negative integers")
        expires_ms, bundles, replica = p.get("expires_at_ms"), p.get("bundles"), p.get("replica", "")
        if not _is_seq(expires_ms):
            raise EventMalformed("heartbeat lacks an integer expires_at_ms")
        if not isinstance(bundles, dict) or len(bundles) > MAX_SCOPES or not all(
                isinstance(k, str) and _SCOPE_RE.fullmatch(k) and _is_seq(v) for k, v in bundles.items()):
            raise EventMalformed("heartbeat bundles must map scope names to announce sequences")
        if not isinstance(replica, str) or len(replica) > 128:
            raise EventMalformed("heartbeat replica must be a short string")
        cells, per_cell = p.get("cells", 1), p.get("relations", {})
        if not _is_seq(cells) or not 1 <= cells <= MAX_CELLS:
            raise EventMalformed(f"heartbeat cells must be an integer within 1..{MAX_CELLS}")
        if not isinstance(per_cell, dict) or not all(_is_cell(k, cells) and _is_seq(v) for k, v in per_cell.items()):
            raise EventMalformed("heartbeat relations must map cells to sequences")
        expires_at = expires_ms / 1000
        if expires_at <= (time.time() if now is None else now):
            raise HeartbeatExpired(f"heartbeat issued at {event.issued_at:.0f} expired at {expires_at:.0f}",
                                   issued_at=int(event.issued_at), expires_at=int(expires_at))
        return cls(seqs[0], seqs[1], seqs[2], dict(bundles), event.issued_at, expires_at, replica, cells,
                   dict(per_cell))


def _is_cell(value: Any, cells: int) -> bool:
    try:
        cell_index(value, cells)
    except (ValueError, TypeError):
        return False
    return True


def _is_seq(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63
