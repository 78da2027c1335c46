"""Registering the sidecar's exchange key with the policy plane.

Each sidecar generates its own exchange key pair (``tenantguard.exchange``); the private
half never leaves it. With ``--plane-url`` and ``--join-secret-file`` the sidecar hands
the public half to the plane (``POST /v1/trust/sidecars/<service>/keys``, the service's
join secret as Bearer); the plane publishes it in the token trust set for issuer
``sidecar:<service>``, and every sidecar following NATS receives it with the next
``trust.update``. That is how a token this sidecar mints is accepted by the next hop
without any local trust file.

Every replica registers its own key with an expiry (``key_ttl``, 24 h by default) and
registers it again every ``refresh`` (6 h) while it runs, so the plane can prune the keys
of replicas that are gone instead of keeping a fixed few (which evicted live replicas'
keys once a service ran more replicas than that). A sidecar cut off from the plane for
longer than ``key_ttl`` minus ``refresh`` sees its key expire everywhere: its exchanged
tokens are refused until the next registration gets through.

Registration never holds up serving: it runs as a background task, retried with
exponential backoff (full jitter) until the plane accepts it. A transient failure
(plane unreachable, 5xx, plane not ready) is retried quickly; a refusal (wrong join
secret, 4xx) is logged as an error and retried at the longest interval, since only an
operator can fix it (e.g. by correcting the plane's ``--join-secret``). Registering
the same key again is a no-op at the plane, so a retry after a lost answer is harmless.

The join secret is read once from a file that others cannot read (mode 0600) and is
never logged, shown in the status or put in an exception message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
from tenantguard.client.plane import AsyncPlaneClient, plane_urls, register_key_call
from tenantguard.errors import ConfigError, PlaneTlsRefused, TenantGuardError, Unavailable
from tenantguard.util.httptls import ClientTls
from tenantguard.util.urls import in_clear_off_the_machine, shown_url

log = logging.getLogger(__name__)

MIN_SECRET_CHARS: Final = 16
MAX_SECRET_CHARS: Final = 4096


def read_join_secret(path: Path) -> str:
    """The join secret in ``path`` (surrounding whitespace stripped); refuses a file others can read."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read join secret file {path}: {type(exc).__name__}") from None
    if mode & 0o077:
        raise ConfigError(f"join secret file {path} is readable by others (mode {mode:o}); chmod 600 it")
    if not MIN_SECRET_CHARS <= len(text) <= MAX_SECRET_CHARS or not text.isprintable() or " " in text:
        raise ConfigError(f"the join secret in {path} must be {MIN_SECRET_CHARS}-{MAX_SECRET_CHARS} printable "
                          "characters without spaces")
    return text


@dataclass(frozen=True, slots=True)
class RegistrationOptions:
    """Durations in seconds; tests shorten them."""

    timeout: float = 5.0  # one HTTP request to the plane
    backoff_initial: float = 0.2
    backoff_max: float = 30.0  # also the interval between retries after a refusal
    key_ttl: float = 24 * 3600.0  # the registration's not_after, from now
    refresh: float = 6 * 3600.0  # register again (a later not_after) this often

    def __post_init__(self) -> None:
        if not 0 < self.refresh < self.key_ttl:
            raise ConfigError("the key registration refresh must be shorter than its lifetime")


class PlaneRegistrar:
    """A :class:`~tenantguard.exchange.KeyRegistrar` that registers with the plane in the background.

    :meth:`register` (synchronous, called while the sidecar is assembled) only records the
    key; :meth:`start` (on the serving event loop) sends it, retrying until accepted, and
    :meth:`stop` cancels a registration still in progress. :meth:`status` is shown in the
    sidecar's ``/v1/status`` under ``registration``.
    """

    def __init__(self, plane_url: str, join_secret: str, *, options: RegistrationOptions | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, tls: ClientTls | None = None) -> None:
        self.plane_url = plane_url
        self.options = options or RegistrationOptions()
        self.tls = tls or ClientTls()
        for url in plane_urls(plane_url):
            if in_clear_off_the_machine(url):
                log.warning("the join secret goes to the plane at %s readable by the network: use the plane's "
                            "https:// URL (--plane-ca)", shown_url(url))
        self._secret = join_secret
        self._transport = transport
        self._pending: tuple[str, dict[str, Any]] | None = None
        self._task: asyncio.Task[None] | None = None
        self.state = "idle"  # idle -> pending -> registered | refused (retrying) | failed (retrying)
        self.kid: str | None = None
        self.trust_seq: int | None = None
        self.attempts = 0
        self.last_error: str | None = None
        self.registered_at: float | None = None
        self.expires_at: float | None = None
        self.done = asyncio.Event()
        self._changed = asyncio.Event()  # a new key to register (after a rotation)
        # Called when the plane refuses the key as revoked; it must register a new key.
        self.on_revoked: Callable[[], None] | None = None

    @classmethod
    def from_files(cls, plane_url: str, join_secret_file: Path, options: RegistrationOptions | None = None,
                   tls: ClientTls | None = None) -> PlaneRegistrar:
        return cls(plane_url, read_join_secret(join_secret_file), options=options, tls=tls)

    def __repr__(self) -> str:  # never show the secret
        return f"PlaneRegistrar({self.plane_url!r}, state={self.state!r})"

    # -- KeyRegistrar ------------------------------------------------------------------

    def register(self, service: str, jwk: Mapping[str, Any]) -> None:
        """Remember the key to register; :meth:`start` sends it (at once when already running)."""
        self._pending = (service, {k: v for k, v in jwk.items() if k != "iss"})  # the plane sets the issuer
        self.kid = str(jwk.get("kid")) if jwk.get("kid") else None
        self.state = "pending"
        self._changed.set()

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start the background registration (no-op when nothing is pending or already started)."""
        if self._pending is None or self._task is not None or self.state == "registered":
            return
        self.done = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="plane-key-registration")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        """Register, then keep registering every ``refresh`` so the key never expires while we
        run; a new key (:meth:`register` again, after a rotation) is registered at once."""
        async with AsyncPlaneClient(self.plane_url, token=self._secret, timeout=self.options.timeout,
                                    transport=self._transport, ca=self.tls.ca_file,
                                    client_cert=self.tls.cert_file, client_key=self.tls.key_file) as client:
            while True:
                assert self._pending is not None
                self._changed.clear()
                await self._register(client, *self._pending)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), self.options.refresh)

    async def _register(self, client: AsyncPlaneClient, service: str, jwk: dict[str, Any]) -> None:
        delay = self.options.backoff_initial
        while True:
            self.attempts += 1
            not_after = int(time.time() + self.options.key_ttl)
            try:
                body = await client.send(register_key_call(service, jwk, not_after))
                if not isinstance(body, dict) or not isinstance(body.get("kid"), str):
                    raise Unavailable("the plane answered without the registered kid")
            except TenantGuardError as exc:
                if exc.code == "key_revoked":  # never to be trusted again: a new key, registered next
                    self.state, self.last_error = "refused", f"{exc.code}: {exc.message}"[:300]
                    log.error("the plane refuses this sidecar's key %s: it is revoked", self.kid)
                    if self.on_revoked is not None:
                        self.on_revoked()
                    return
                tls = isinstance(exc, PlaneTlsRefused)  # only a new certificate or CA helps: as a refusal
                transient = (exc.retryable or exc.http_status >= 500) and not tls
                self.state = "failed" if transient else "refused"
                self.last_error = f"{exc.code}: {exc.message}"[:300]
                if tls:
                    log.error("%s; retrying every %.0f s", self.last_error, self.options.backoff_max)
                    delay = self.options.backoff_max
                elif transient:
                    log.warning("key registration with the plane failed (attempt %d), retrying: %s",
                                self.attempts, self.last_error)
                else:
                    log.error("the plane refused this sidecar's key registration (%s); check the join "
                              "secret of service %s; retrying every %.0f s", self.last_error, service,
                              self.options.backoff_max)
                    delay = self.options.backoff_max
                await asyncio.sleep(random.uniform(delay / 2, delay))  # noqa: S311 - jitter, not a secret
                delay = min(self.options.backoff_max, delay * 2)
                continue
            kid = str(body["kid"])
            first = self.state != "registered"
            self.kid, self.state, self.last_error = kid, "registered", None
            self.trust_seq = int(body["trust_seq"]) if isinstance(body.get("trust_seq"), int) else None
            self.registered_at, self.expires_at = time.time(), float(not_after)
            self.done.set()
            level = logging.INFO if first else logging.DEBUG  # refreshes are routine
            log.log(level, "exchange key %s registered with the plane as issuer sidecar:%s until %d",
                    kid, service, not_after)
            return

    # -- reporting ---------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {"plane_url": self.plane_url, "state": self.state, "kid": self.kid, "trust_seq": self.trust_seq,
                "attempts": self.attempts, "last_error": self.last_error, "registered_at": self.registered_at,
                "expires_at": self.expires_at}
