"""Bearer secrets (admin token, per-service join secrets), kept only as scrypt hashes.

The plane reads a secret file once, hashes it with scrypt and a random salt, and drops
the secret: a heap dump or a debug endpoint cannot leak what was never kept. Checks use
:func:`hmac.compare_digest`. scrypt costs tens of milliseconds by design, so a check runs
in a worker thread (the event loop keeps serving) behind a small semaphore (a flood of
wrong tokens cannot take every thread), and a *successful* check is remembered as an
HMAC of the presented value under a per-process random key, so an admin client that
sends thousands of writes pays scrypt once. Failures are never cached.

Rotation without a restart. A secret file may hold several secrets, one per line (the new one
and the old one while clients move), and the plane looks at the file again at most once a
second (its inode, size and modification time): when it changed, every remembered success is
forgotten at once and the file is read and hashed again, off the event loop, before the next
check; a secret no longer in the file stops working there and then. A file that can no longer be
read, or is readable by others, keeps the secrets it held (an operator is not locked out by a
slip) and says so in ``reload_error`` (``/v1/status``) and the log. ``generation`` counts the
changes taken: a console session ends when the file of its role's token changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from tenantguard.errors import ConfigError, Unavailable

log = logging.getLogger(__name__)

SCRYPT_N: Final = 2**14
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1
SALT_BYTES: Final = 16
MIN_SECRET_CHARS: Final = 16
MAX_SECRET_CHARS: Final = 4096
MAX_SECRETS_PER_FILE: Final = 4  # the current one and those being rotated out
RELOAD_INTERVAL: Final = 1.0  # seconds between two looks at a secret file
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


def read_secret_file(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The secrets in ``path``, one per line (blank lines and surrounding whitespace ignored; several
    while one is rotated out); refuse unsafe files, short secrets and more than
    :data:`MAX_SECRETS_PER_FILE`."""
    target = Path(path)
    try:
        mode = target.stat().st_mode
        text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read secret file {target}: {exc}") from None
    if mode & 0o077:
        raise ConfigError(f"secret file {target} is readable by others (mode {mode & 0o777:o}); chmod 600 it")
    found = tuple(line.strip() for line in text.splitlines() if line.strip())
    if not found or any(not MIN_SECRET_CHARS <= len(one) <= MAX_SECRET_CHARS for one in found):
        raise ConfigError(f"each secret in {target} (one per line) must be {MIN_SECRET_CHARS}-{MAX_SECRET_CHARS} "
                          "characters")
    if len(found) > MAX_SECRETS_PER_FILE:
        raise ConfigError(f"{target} holds {len(found)} secrets; at most {MAX_SECRETS_PER_FILE} (the current one "
                          "and those being rotated out)")
    return found


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is rewritten or replaced (None: it cannot be looked at)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def new_secret() -> str:
    """A fresh 256-bit secret, URL-safe text (for ``plane init``)."""
    return secrets.token_urlsafe(32)


class SecretChecker:
    """Checks presented bearer values against the :class:`HashedSecret` of one secret or, given
    ``path``, of every secret its file holds (see the module docstring: rotation)."""

    def __init__(self, hashed: HashedSecret | tuple[HashedSecret, ...], *, path: Path | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.hashes = (hashed,) if isinstance(hashed, HashedSecret) else tuple(hashed)
        self.path = path
        self.generation = 0  # changes of the file taken since start
        self.reload_error: str | None = None  # why the file's last change was not taken
        self._clock = clock
        self._stamp = _stamp(path) if path is not None else None
        self._looked = clock()
        self._stale = False  # the file changed: read it again before the next check
        self._epoch = 0  # bumped whenever remembered successes are forgotten
        self._cache_key = os.urandom(32)
        self._ok: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()
        self._reloading = threading.Lock()
        self._gate = asyncio.Semaphore(_CHECKS_IN_FLIGHT)
        self._queued = 0

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *,
                  clock: Callable[[], float] = time.monotonic) -> SecretChecker:
        target = Path(path)
        return cls(tuple(HashedSecret.of(one) for one in read_secret_file(target)), path=target, clock=clock)

    @property
    def hashed(self) -> HashedSecret:
        """The first (current) secret's hash."""
        return self.hashes[0]

    def _look(self) -> None:
        """At most once per :data:`RELOAD_INTERVAL`: a changed file forgets every remembered success now
        and is read again before the next check (:meth:`_reload`). A stat, never a read, here."""
        if self.path is None:
            return
        now = self._clock()
        if now - self._looked < RELOAD_INTERVAL:  # the common case, without the lock (checked again under it)
            return
        with self._lock:
            if now - self._looked < RELOAD_INTERVAL:
                return
            self._looked = now
            stamp = _stamp(self.path)
            if stamp == self._stamp:
                return
            self._stamp = stamp
            self._stale = True
            self._forget()

    def _reload(self) -> None:
        """Read and hash the file again (scrypt per secret: run off the event loop), once for all the
        checks that found it stale."""
        assert self.path is not None
        with self._reloading:
            if not self._stale:
                return
            try:
                hashes = tuple(HashedSecret.of(one) for one in read_secret_file(self.path))
            except ConfigError as exc:
                self.reload_error = exc.message
                log.error("secret file %s changed but was not taken (the secrets it held still count): %s",
                          self.path, exc.message)
            else:
                with self._lock:
                    self.hashes = hashes
                    self._forget()
                    self.generation += 1
                self.reload_error = None
                log.warning("secret file %s changed: %d secret(s) taken, the ones removed no longer count",
                            self.path, len(hashes))
            self._stale = False

    def _forget(self) -> None:
        """Forget every remembered success (under ``_lock``); a check that began before does not
        remember its own (:meth:`check` compares the epoch)."""
        self._ok.clear()
        self._epoch += 1

    def changed_since(self, generation: int) -> bool:
        """Whether the secrets differ from those of ``generation`` (or the file changed and is about
        to be read again): what ends a console session signed in under a secret rotated out."""
        self._look()
        return self._stale or self.generation != generation

    def _matches(self, presented: str) -> bool:
        return any(hashed.matches(presented) for hashed in self.hashes)

    def _tag(self, presented: str) -> bytes:
        return hmac.new(self._cache_key, presented.encode(), hashlib.sha256).digest()

    def known(self, presented: str) -> bool:
        """True when ``presented`` passed :meth:`check` before and is still remembered (no scrypt,
        never a refusal: False only means "not remembered", which :meth:`check` then decides)."""
        self._look()
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
            while True:
                async with self._gate:
                    if self._stale:
                        await asyncio.to_thread(self._reload)
                    if self.known(presented):
                        return True
                    epoch = self._epoch
                    ok = await asyncio.to_thread(self._matches, presented)
                with self._lock:
                    if epoch == self._epoch:
                        if ok:
                            self._ok[tag] = None
                            while len(self._ok) > _CACHE_SIZE:
                                self._ok.popitem(last=False)
                        return ok
                # the file changed while scrypt ran: decide again on the secrets it holds now
        finally:
            self._queued -= 1
