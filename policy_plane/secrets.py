"""Bearer secrets (admin token, per-service join secrets), kept only as scrypt hashes.

The plane reads a secret file once, hashes it with scrypt and a random salt, and drops
the secret: a heap dump or a debug endpoint cannot leak what was never kept. Checks use
:func:`hmac.compare_digest`. scrypt costs tens of milliseconds by design, so a check runs
in a worker thread (the event loop keeps serving) behind a small semaphore (a flood of
wrong tokens cannot take every thread), and a *successful* check is remembered as an
HMAC of the presented value under a per-process random key, so an admin client that
sends thousands of writes pays scrypt once. Failures are never cached.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from tenantguard.errors import ConfigError, Unavailable

SCRYPT_N: Final = 2**14
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1
SALT_BYTES: Final = 16
MIN_SECRET_CHARS: Final = 16
MAX_SECRET_CHARS: Final = 4096
_CACHE_SIZE: Final = 256
_CHECKS_IN_FLIGHT: Final = 4
MAX_QUEUED_CHECKS: Final = 64
"""Checks of one secret running or waiting at once; past it a check is refused at once (503,
retryable). Why: each check of an unknown value costs scrypt, and anyone can send one, so an
unbounded queue let a flood of wrong tokens delay a genuine first use without limit."""


def _scrypt(secret: bytes, salt: bytes) -> bytes:
    return hashlib.scrypt(secret, salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)


@dataclass(frozen=True, slots=True)
class HashedSecret:
    """``scrypt(secret, salt)``: all the plane keeps of a secret. ``repr`` shows neither."""

    salt: bytes = field(repr=False)
    digest: bytes = field(repr=False)

    @classmethod
    def of(cls, secret: str) -> HashedSecret:
        salt = os.urandom(SALT_BYTES)
        return cls(salt, _scrypt(secret.encode(), salt))

    def matches(self, presented: str) -> bool:
        if not MIN_SECRET_CHARS <= len(presented) <= MAX_SECRET_CHARS:
            return False
        return hmac.compare_digest(_scrypt(presented.encode(), self.salt), self.digest)


def read_secret_file(path: str | os.PathLike[str]) -> str:
    """The secret in ``path`` (surrounding whitespace stripped); refuse short or unsafe files."""
    target = Path(path)
    try:
        mode = target.stat().st_mode
        text = target.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read secret file {target}: {exc}") from None
    if mode & 0o077:
        raise ConfigError(f"secret file {target} is readable by others (mode {mode & 0o777:o}); chmod 600 it")
    if not MIN_SECRET_CHARS <= len(text) <= MAX_SECRET_CHARS:
        raise ConfigError(f"secret in {target} must be {MIN_SECRET_CHARS}-{MAX_SECRET_CHARS} characters")
    return text


def new_secret() -> str:
    """A fresh 256-bit secret, URL-safe text (for ``plane init``)."""
    return secrets.token_urlsafe(32)


class SecretChecker:
    """Checks presented bearer values against one :class:`HashedSecret`."""

    def __init__(self, hashed: HashedSecret) -> None:
        self.hashed = hashed
        self._cache_key = os.urandom(32)
        self._ok: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()
        self._gate = asyncio.Semaphore(_CHECKS_IN_FLIGHT)
        self._queued = 0

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> SecretChecker:
        return cls(HashedSecret.of(read_secret_file(path)))

    def _tag(self, presented: str) -> bytes:
        return hmac.new(self._cache_key, presented.encode(), hashlib.sha256).digest()

    def known(self, presented: str) -> bool:
        """True when ``presented`` passed :meth:`check` before and is still remembered (no scrypt,
        never a refusal: False only means "not remembered", which :meth:`check` then decides)."""
        tag = self._tag(presented)
        with self._lock:
            if tag in self._ok:
                self._ok.move_to_end(tag)
                return True
        return False

    async def check(self, presented: str) -> bool:
        """Whether ``presented`` is the secret: remembered successes at once, else scrypt in a worker
        thread behind the gate; :class:`Unavailable` when :data:`MAX_QUEUED_CHECKS` are already
        queued. A value verified while this one waited (a fleet presenting one join secret at
        once) is let through without another scrypt."""
        if self.known(presented):
            return True
        if self._queued >= MAX_QUEUED_CHECKS:
            raise Unavailable("too many credential checks at once; retry shortly")
        tag = self._tag(presented)
        self._queued += 1
        try:
            async with self._gate:
                if self.known(presented):
                    return True
                ok = await asyncio.to_thread(self.hashed.matches, presented)
        finally:
            self._queued -= 1
        if ok:
            with self._lock:
                self._ok[tag] = None
                while len(self._ok) > _CACHE_SIZE:
                    self._ok.popitem(last=False)
        return ok
