"""Console sign-in sessions: server-side, in memory, expiring, bounded.

Decision: sessions live in the memory of the replica that signed the operator in and do
not survive a restart (nothing to store safely, nothing to steal from disk or NATS); after
a restart or on another replica the operator signs in again. The cookie carries only a
random session id; the store is keyed by its SHA-256, so the id itself is never kept and
a lookup compares no secret byte by byte. Each session has its own CSRF token
(synchronizer pattern), compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final, Literal

Role = Literal["admin", "operator"]
DEFAULT_IDLE_SECONDS: Final = 15 * 60.0
DEFAULT_ABSOLUTE_SECONDS: Final = 8 * 3600.0
DEFAULT_MAX_SESSIONS: Final = 256


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


@dataclass(slots=True)
class Session:
    """One signed-in operator: the role decides what the pages offer and what a POST may do."""

    role: Role
    csrf: str
    created: float
    last_seen: float
    key: str = field(repr=False)
    generation: int = 0  # of the secret file its token was checked against (ended when it changes)

    @property
    def can_change(self) -> bool:
        return self.role == "admin"

    def csrf_ok(self, presented: str | None) -> bool:
        """The form's CSRF token is this session's (constant-time comparison)."""
        return presented is not None and hmac.compare_digest(presented.encode(), self.csrf.encode())


class SessionStore:
    """At most ``max_sessions`` sessions; each ends ``idle`` seconds after its last request or
    ``absolute`` seconds after sign-in. A full store drops expired sessions, then the oldest."""

    def __init__(self, *, idle: float = DEFAULT_IDLE_SECONDS, absolute: float = DEFAULT_ABSOLUTE_SECONDS,
                 max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
        self.idle = idle
        self.absolute = absolute
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, role: Role, *, now: float | None = None, generation: int = 0) -> tuple[str, Session]:
        """A new session; the id (for the cookie only) and the session."""
        now = time.time() if now is None else now
        session_id = secrets.token_urlsafe(32)
        session = Session(role, secrets.token_urlsafe(32), now, now, _key(session_id), generation)
        with self._lock:
            self._expire(now)
            while len(self._sessions) >= self.max_sessions:
                self._sessions.popitem(last=False)
                self.evicted += 1
            self._sessions[session.key] = session
        return session_id, session

    def get(self, session_id: str | None, *, now: float | None = None, activity: bool = True) -> Session | None:
        """The live session of this id, or None; ``activity``: the operator did something, so its
        idle clock restarts (a page reloading itself is no activity)."""
        if not session_id or len(session_id) > 128:
            return None
        now = time.time() if now is None else now
        key = _key(session_id)
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                return None
            if self._expired(session, now):
                del self._sessions[key]
                return None
            if activity:
                session.last_seen = now
            return session

    def end(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.key, None)

    def _expired(self, session: Session, now: float) -> bool:
        return now - session.last_seen > self.idle or now - session.created > self.absolute

    def _expire(self, now: float) -> None:
        for key in [k for k, s in self._sessions.items() if self._expired(s, now)]:
            del self._sessions[key]
