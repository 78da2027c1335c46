"""Revocations: token ids, signing keys, a subject in a tenant, or a whole tenant.

The plane pushes revocations to every sidecar; this is the local set they land in.
Checks are set/dict lookups so they can run on every decision, including cache hits.
Subject and tenant revocations carry a cut-off time: tokens issued before it are dead,
tokens issued after it (a re-login, a lifted kill switch) live. For an exchanged token
"issued" means when its root token was (``tg_root_iat``), and its ancestors' jtis and kids
count as its own: a revocation reaches every token derived from the revoked one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(slots=True)
class RevocationList:
    """What this process must refuse even when the signature is good."""

    jtis: dict[str, float] = field(default_factory=dict)  # jti -> forget after (epoch s)
    kids: set[str] = field(default_factory=set)
    subjects: dict[tuple[str, str], float] = field(default_factory=dict)  # (tenant, sub) -> cut-off
    tenants: dict[str, float] = field(default_factory=dict)  # tenant -> cut-off
    version: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def revoke_jti(self, jti: str, until: float) -> None:
        """Refuse token ``jti``; ``until`` is when it would have expired anyway."""
        with self._lock:
            self.jtis[jti] = until
            self.version += 1

    def revoke_kid(self, kid: str) -> None:
        with self._lock:
            self.kids.add(kid)
            self.version += 1

    def revoke_subject(self, tenant: str, sub: str, issued_before: float | None = None) -> None:
        with self._lock:
            self.subjects[(tenant, sub)] = time.time() if issued_before is None else issued_before
            self.version += 1

    def revoke_tenant(self, tenant: str, issued_before: float | None = None) -> None:
        """The kill switch: every token of ``tenant`` issued before the cut-off is refused."""
        with self._lock:
            self.tenants[tenant] = time.time() if issued_before is None else issued_before
            self.version += 1

    def lift_tenant(self, tenant: str) -> None:
        with self._lock:
            self.tenants.pop(tenant, None)
            self.version += 1

    def reason(
        self, *, jti: str, kid: str, tenant: str, sub: str, iat: float, chain: Iterable[str] = (),
        chain_kids: Iterable[str] = (),
    ) -> str | None:
        """Why a token with these claims is revoked, or None when it is not.

        ``chain`` holds the jtis of the tokens it was exchanged from and ``chain_kids`` the
        kids of the keys that signed them; ``iat`` is its root token's ``iat`` for an
        exchanged token (the caller passes ``Claims.origin_iat``).
        """
        if jti in self.jtis:
            return "jti revoked"
        for ancestor in chain:
            if ancestor in self.jtis:
                return "a token it was exchanged from is revoked"
        if kid in self.kids:
            return "signing key revoked"
        for ancestor_kid in chain_kids:
            if ancestor_kid in self.kids:
                return "the key that signed a token it was exchanged from is revoked"
        cut = self.tenants.get(tenant)
        if cut is not None and iat <= cut:
            return "tenant revoked"
        cut = self.subjects.get((tenant, sub))
        if cut is not None and iat <= cut:
            return "subject revoked"
        return None

    def prune(self, now: float | None = None) -> int:
        """Forget jti entries whose tokens have expired by themselves."""
        now = time.time() if now is None else now
        with self._lock:
            dead = [j for j, until in self.jtis.items() if until < now]
            for jti in dead:
                del self.jtis[jti]
            return len(dead)
