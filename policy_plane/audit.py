"""Audit log of admin changes: one structured JSON log line each, and an in-memory ring.

Callers pass only what identifies the change (kinds, kids, tenants, revisions, counts);
tokens, join secrets and key material are never given to :meth:`AuditLog.record`, and a
detail key that looks like one is refused loudly so a future caller cannot slip.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from typing import Any, Final

log = logging.getLogger("policy_plane.audit")
_FORBIDDEN_KEYS: Final = frozenset({"token", "secret", "authorization", "password", "d", "private_key"})


class AuditLog:
    def __init__(self, keep: int, replica: str) -> None:
        self.entries: deque[dict[str, Any]] = deque(maxlen=keep)
        self.replica = replica

    def record(self, actor: str, action: str, **detail: Any) -> dict[str, Any]:
        leaked = _FORBIDDEN_KEYS.intersection(k.lower() for k in detail)
        if leaked:
            raise ValueError(f"audit detail must not carry {sorted(leaked)}")
        entry = {"time": round(time.time(), 3), "replica": self.replica, "actor": actor, "action": action,
                 "detail": detail}
        self.entries.append(entry)
        log.info(json.dumps({"audit": entry}, sort_keys=True, default=str))
        return entry

    def recent(self, limit: int) -> list[dict[str, Any]]:
        """Newest first."""
        return list(reversed(self.entries))[:limit]
