"""A hold on every decision: while any reason is held, the core denies everything with it.

Why: some states make every answer unsafe, whatever the question (a sidecar whose revocations
have not been replayed would allow tokens revoked while it was down). Such a state is named by
a typed error (its ``code`` is the deny reason, its HTTP mapping what the doors that do not
decide answer, e.g. search) and held here; releasing it is one call. The check on the hot path
is one attribute read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from tenantguard.errors import TenantGuardError


class DecisionHold:
    """The reasons decisions are held, by code; the first held is the one reported."""

    def __init__(self) -> None:
        self._held: dict[str, TenantGuardError] = {}
        self._lock = threading.Lock()
        self.current: TenantGuardError | None = None  # read without the lock: one reference
        # called after every change (on the changing thread): readiness follows the hold
        self.on_change: Callable[[], None] | None = None

    def hold(self, error: TenantGuardError) -> None:
        """Deny every decision with ``error.code`` until :meth:`release` of that code."""
        with self._lock:
            self._held[error.code] = error
            self.current = next(iter(self._held.values()))
        self._changed()

    def release(self, code: str) -> None:
        with self._lock:
            if self._held.pop(code, None) is None:
                return
            self.current = next(iter(self._held.values()), None)
        self._changed()

    def held(self, code: str) -> bool:
        return code in self._held

    def check(self) -> None:
        """Raise the held error (a fresh instance: callers on several threads may raise it)."""
        error = self.current
        if error is not None:
            raise type(error)(error.message, **error.detail)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()
