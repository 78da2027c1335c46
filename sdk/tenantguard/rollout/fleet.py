"""Which sidecar runs which revision: the status a sidecar reports on ``tg.status.<service>``.

Plain JSON on core NATS, like decision logs: informational, not a source of trust. A
sidecar may publish only on its own service's subject (``topology.sidecar_permissions``),
so the service comes from the subject, never from the body. The plane keeps the last
status of each instance in a bounded map (:class:`FleetView`). An instance that stops
reporting is *silent* after two report intervals: it stays listed (a sidecar cut off from
NATS is exactly the one an operator must see) but no longer counts as running its revision;
it is forgotten after ``forget_after`` seconds, or sooner when the map is full.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from tenantguard.errors import InvalidInput, JsonInvalid
from tenantguard.util.jsonlimits import loads_object

MAX_STATUS_BYTES: Final = 16 * 1024
DEFAULT_MAX_INSTANCES: Final = 10_000
STATUS_INTERVAL: Final = 5.0  # seconds between a sidecar's reports (and one right after each bundle swap)
SILENT_AFTER: Final = 2 * STATUS_INTERVAL + 1  # no report for this long: the instance is silent
DEFAULT_FORGET_AFTER: Final = 900.0
_SHADOW_COUNTS: Final = ("offered", "evaluated", "agreed", "sampled_out", "rate_limited", "dropped")
MAX_SHADOW_EXAMPLES: Final = 10


@dataclass(frozen=True, slots=True)
class SidecarStatus:
    """One sidecar instance's report: who it is and what it runs."""

    service: str
    instance: str
    bundle_revision: str | None
    bundle_serial: int | None
    bundle_sha256: str | None
    relations_seq: int
    ready: bool
    sent_at: float
    shadow: Mapping[str, Any] | None = None  # ShadowEvaluator.stats(examples=5) while a shadow runs
    # For the operations console (absent from older sidecars: None):
    staleness_seconds: float | None = None  # since the sidecar last heard from the plane (heartbeat or data)
    trust_seq: int | None = None  # the trust set sequence it applied
    revocations_seq: int | None = None
    decisions: int | None = None  # decisions made since it started (the plane derives a rate)

    def to_wire(self) -> dict[str, Any]:
        return {"service": self.service, "instance": self.instance, "bundle_revision": self.bundle_revision,
                "bundle_serial": self.bundle_serial, "bundle_sha256": self.bundle_sha256,
                "relations_seq": self.relations_seq, "ready": self.ready, "sent_at": self.sent_at,
                "shadow": self.shadow, "staleness_seconds": self.staleness_seconds, "trust_seq": self.trust_seq,
                "revocations_seq": self.revocations_seq, "decisions": self.decisions}

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any], *, service: str) -> SidecarStatus:
        instance, revision = raw.get("instance"), raw.get("bundle_revision")
        serial, digest, seq = raw.get("bundle_serial"), raw.get("bundle_sha256"), raw.get("relations_seq", 0)
        if not isinstance(instance, str) or not 0 < len(instance) <= 128:
            raise InvalidInput("status instance must be a short string")
        if revision is not None and (not isinstance(revision, str) or len(revision) > 128):
            raise InvalidInput("status bundle_revision must be a short string")
        if serial is not None and (isinstance(serial, bool) or not isinstance(serial, int)):
            raise InvalidInput("status bundle_serial must be an integer")
        if digest is not None and (not isinstance(digest, str) or len(digest) != 64):
            raise InvalidInput("status bundle_sha256 must be 64 hex digits")
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise InvalidInput("status relations_seq must be a non-negative integer")
        sent, shadow = raw.get("sent_at"), raw.get("shadow")
        if shadow is not None and not (isinstance(shadow, Mapping) and isinstance(shadow.get("revision"), str)
                                       and all(isinstance(shadow.get(k, 0), int) for k in _SHADOW_COUNTS)
                                       and isinstance(shadow.get("disagreed", {}), Mapping)):
            raise InvalidInput("status shadow must be the shadow evaluator's stats")
        staleness = raw.get("staleness_seconds")
        if staleness is not None and (isinstance(staleness, bool) or not isinstance(staleness, int | float)
                                      or not 0 <= staleness < 1e9):
            raise InvalidInput("status staleness_seconds must be a non-negative number")
        counts = {k: raw.get(k) for k in ("trust_seq", "revocations_seq", "decisions")}
        for key, value in counts.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 0 <= value < 2**63):
                raise InvalidInput(f"status {key} must be a non-negative integer")
        return cls(service, instance, revision, serial, digest, seq, raw.get("ready") is True,
                   float(sent) if isinstance(sent, int | float) and not isinstance(sent, bool) else 0.0,
                   shadow, float(staleness) if staleness is not None else None, **counts)


class FleetView:
    """The last report of every instance; bounded, expiring; fed by the plane's subscription."""

    def __init__(self, *, max_instances: int = DEFAULT_MAX_INSTANCES, silent_after: float = SILENT_AFTER,
                 forget_after: float = DEFAULT_FORGET_AFTER) -> None:
        self.max_instances = max_instances
        self.silent_after = silent_after
        self.forget_after = forget_after
        self._latest: dict[tuple[str, str], tuple[float, SidecarStatus]] = {}
        self._rates: dict[tuple[str, str], float] = {}  # decisions per second between the last two reports
        self.received = 0
        self.malformed = 0
        self.dropped = 0

    def receive(self, service: str, data: bytes, *, now: float | None = None) -> SidecarStatus | None:
        """Take one message from ``tg.status.<service>``; None (counted) when it is refused."""
        now = time.time() if now is None else now
        if len(data) > MAX_STATUS_BYTES:
            self.malformed += 1
            return None
        try:
            status = SidecarStatus.from_wire(loads_object(data), service=service)
        except (JsonInvalid, InvalidInput):
            self.malformed += 1
            return None
        key = (service, status.instance)
        if key not in self._latest and len(self._latest) >= self.max_instances:
            self._forget(now)
            if len(self._latest) >= self.max_instances:
                self.dropped += 1
                return None
        previous = self._latest.get(key)
        if previous is not None and status.decisions is not None and previous[1].decisions is not None:
            elapsed, made = now - previous[0], status.decisions - previous[1].decisions
            if elapsed > 0 and made >= 0:  # a restarted instance counts from 0 again: no rate from that pair
                self._rates[key] = made / elapsed
        self._latest[key] = (now, status)
        self.received += 1
        return status

    def _forget(self, now: float) -> None:
        for key in [k for k, (seen, _) in self._latest.items() if now - seen > self.forget_after]:
            del self._latest[key]
            self._rates.pop(key, None)

    def sidecars(self, *, now: float | None = None) -> list[dict[str, Any]]:
        now = time.time() if now is None else now
        self._forget(now)
        return [{**s.to_wire(), "seen_seconds_ago": round(now - seen, 3), "silent": now - seen > self.silent_after,
                 "decision_rate": round(self._rates[key], 3) if key in self._rates else None}
                for key, (seen, s) in sorted(self._latest.items())]

    def summary(self, *, now: float | None = None) -> dict[str, Any]:
        """Reporting instances per (service, revision): the picture a staged rollout is watched with.

        Silent instances are counted apart: what they ran when last heard of is not what they run now."""
        listed = self.sidecars(now=now)
        sidecars = [s for s in listed if not s["silent"]]
        by_revision: Counter[str] = Counter(str(s["bundle_revision"]) for s in sidecars)
        by_service: dict[str, dict[str, int]] = {}
        for s in sidecars:
            counts = by_service.setdefault(s["service"], {})
            counts[str(s["bundle_revision"])] = counts.get(str(s["bundle_revision"]), 0) + 1
        return {"instances": len(sidecars), "silent": len(listed) - len(sidecars),
                "by_revision": dict(sorted(by_revision.items())),
                "by_service": dict(sorted(by_service.items())), "shadow": _shadows(sidecars),
                "received": self.received, "malformed": self.malformed, "dropped": self.dropped}


def _shadows(sidecars: list[dict[str, Any]]) -> dict[str, Any]:
    """Shadow counters summed per shadow revision and service, with a few disagreement examples."""
    out: dict[str, Any] = {}
    for s in sidecars:
        shadow = s.get("shadow")
        if not shadow:
            continue
        entry = out.setdefault(str(shadow["revision"]), {"services": {}, "examples": []})
        per = entry["services"].setdefault(s["service"], {"instances": 0, "evaluated": 0, "agreed": 0,
                                                           "allow->deny": 0, "deny->allow": 0})
        per["instances"] += 1
        per["evaluated"] += int(shadow.get("evaluated", 0))
        per["agreed"] += int(shadow.get("agreed", 0))
        disagreed = shadow.get("disagreed") or {}
        for direction in ("allow->deny", "deny->allow"):
            value = disagreed.get(direction, 0)
            per[direction] += value if isinstance(value, int) else 0
        examples = shadow.get("examples")
        if isinstance(examples, list):
            room = MAX_SHADOW_EXAMPLES - len(entry["examples"])
            entry["examples"].extend(e for e in examples[:room] if isinstance(e, Mapping))
    return out
