"""Decision-log sink: sidecars publish ``{"decisions": [...]}`` on ``tg.decisions.<service>``.

Core NATS, so a plane that is down loses records rather than slowing anyone down. The
plane keeps the last N records in a ring and counts what it received, per service and
outcome, and what it could not parse. Records are sidecar input (unsigned; anyone who
may publish on the subject can write them): they are size- and depth-bounded I-JSON
here (``tenantguard.jsonlimits``), so a record the plane keeps can always be served
again by ``GET /v1/decisions``, and they are never evaluated.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Any, Final

from nats.aio.msg import Msg
from tenantguard.errors import JsonInvalid
from tenantguard.jsonlimits import loads_object

MAX_MESSAGE_BYTES: Final = 1024 * 1024
MAX_RECORDS_PER_MESSAGE: Final = 10_000


class DecisionSink:
    def __init__(self, keep: int) -> None:
        self.records: deque[dict[str, Any]] = deque(maxlen=keep)
        self.received = 0
        self.malformed = 0
        self.by_outcome: Counter[tuple[str, str]] = Counter()  # (service, allow|deny)

    async def on_message(self, msg: Msg) -> None:
        service = msg.subject.rsplit(".", 1)[-1]
        if len(msg.data) > MAX_MESSAGE_BYTES:
            self.malformed += 1
            return
        try:
            batch = loads_object(msg.data)["decisions"]
            if not isinstance(batch, list):
                raise TypeError
        except (JsonInvalid, KeyError, TypeError):
            self.malformed += 1
            return
        for record in batch[:MAX_RECORDS_PER_MESSAGE]:
            if not isinstance(record, dict):
                self.malformed += 1
                continue
            self.records.append({**record, "service": str(record.get("service") or service)})
            self.received += 1
            self.by_outcome[(service, "allow" if record.get("allow") is True else "deny")] += 1

    def query(self, *, tenant: str | None, service: str | None, limit: int) -> list[dict[str, Any]]:
        """Newest first."""
        out: list[dict[str, Any]] = []
        for record in reversed(self.records):
            if tenant is not None and record.get("tenant") != tenant:
                continue
            if service is not None and record.get("service") != service:
                continue
            out.append(record)
            if len(out) >= limit:
                break
        return out

    def stats(self) -> dict[str, Any]:
        return {"received": self.received, "malformed": self.malformed, "kept": len(self.records),
                "by_outcome": {f"{s}:{o}": n for (s, o), n in sorted(self.by_outcome.items())}}
