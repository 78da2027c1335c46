"""Outbound propagation: carry the caller's context to the next service, and nowhere else.

``TenantGuardAuth`` is an ``httpx.Auth`` (sync and async). For each outgoing request it
looks the host up in the configured ``targets`` (host -> service name):

* host not configured: the request goes out untouched, without any token, so a call
  to a third party (or a redirect to one: httpx drops ``Authorization`` across
  origins) can never carry a user's context token; one the app put there itself (copied
  incoming headers, a URL) is refused with :class:`PropagationDenied`;
* configured: the propagation mode for that service decides (from the static
  ``modes`` mapping, else from the sidecar's ``GET /v1/propagation``, cached):
  ``forward`` attaches the current context token as is (inside a trust zone),
  ``exchange`` attaches a token exchanged for that audience (RFC 8693, via the
  authorizer; cached per subject token, audience and scope until ``margin`` seconds
  before it expires), ``deny`` refuses the call with :class:`PropagationDenied`
  before anything is sent.

A configured host needs a current context (``tenantguard.context``); without one the
call is refused (:class:`~tenantguard.context.NoTenantContext`) rather than sent
anonymously, unless ``require_context=False``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import AsyncGenerator, Generator, Mapping, Sequence
from typing import Any

import httpx
from cachetools import TLRUCache, TTLCache

from tenantguard.client.wire import ExchangedToken, scope_string
from tenantguard.context import current_context, optional_context
from tenantguard.errors import ConfigError, TenantGuardError
from tenantguard.exchange import PROPAGATION_MODES, PropagationMode
from tenantguard.identity.tokens import token_digest

log = logging.getLogger("tenantguard.propagation")

DEFAULT_MARGIN = 30.0
DEFAULT_MODE_TTL = 60.0


class PropagationDenied(TenantGuardError):
    """Policy says this service may not call the target on the user's behalf."""

    code = "propagation_denied"
    http_status = 403


class TenantGuardAuth(httpx.Auth):
    """Attach the right context token to requests for configured hosts only."""

    requires_request_body = False
    requires_response_body = False

    def __init__(self, targets: Mapping[str, str], *, authorizer: Any = None,
                 modes: Mapping[str, PropagationMode] | None = None,
                 scopes: Mapping[str, Sequence[str] | str] | None = None,
                 margin: float = DEFAULT_MARGIN, mode_ttl: float = DEFAULT_MODE_TTL,
                 cache_size: int = 4096, require_context: bool = True) -> None:
        if not targets:
            raise ConfigError("TenantGuardAuth needs at least one host -> service target")
        for service, mode in (modes or {}).items():
            if mode not in PROPAGATION_MODES:
                raise ConfigError(f"mode for {service!r} must be one of {sorted(PROPAGATION_MODES)}")
        if authorizer is None and (not modes or set(targets.values()) - set(modes)):
            raise ConfigError("without an authorizer every target service needs a static mode")
        if not 0 <= margin < 300:
            raise ConfigError("margin must be within [0, 300) s")
        self.targets = {host.lower(): service for host, service in targets.items()}
        self.authorizer = authorizer
        self.modes = dict(modes or {})
        self.scopes = dict(scopes or {})
        self.margin = margin
        self.require_context = require_context
        self._lock = threading.Lock()
        self._mode_cache: TTLCache[str, PropagationMode] = TTLCache(maxsize=1024, ttl=mode_ttl)
        # Exchanged tokens expire `margin` seconds early, so a cached one is never sent stale.
        self._tokens: TLRUCache[tuple[bytes, str, str], ExchangedToken] = TLRUCache(
            maxsize=cache_size, ttu=lambda _k, tok, _now: tok.expires_at - self.margin)
        self.exchanges = 0  # how many exchanges went to the authorizer (cache misses)

    # -- which service, which mode -----------------------------------------------------

    def service_for(self, url: httpx.URL) -> str | None:
        host = (url.host or "").lower()
        with_port = f"{host}:{url.port}" if url.port else host
        return self.targets.get(with_port) or self.targets.get(host)

    def _cached_mode(self, service: str) -> PropagationMode | None:
        if service in self.modes:
            return self.modes[service]
        with self._lock:
            return self._mode_cache.get(service)

    def _remember_mode(self, service: str, mode: Any) -> PropagationMode:
        mode = mode if mode in PROPAGATION_MODES else "deny"
        with self._lock:
            self._mode_cache[service] = mode
        return mode

    def _cached_token(self, key: tuple[bytes, str, str]) -> ExchangedToken | None:
        with self._lock:
            return self._tokens.get(key)

    def _remember_token(self, key: tuple[bytes, str, str], token: ExchangedToken) -> ExchangedToken:
        with self._lock:
            self.exchanges += 1
            self._tokens[key] = token
        return token

    def _subject_token(self) -> str | None:
        if self.require_context:
            return current_context().token
        ctx = optional_context()
        return ctx.token if ctx is not None else None

    @staticmethod
    def _attach(request: httpx.Request, token: str | None) -> None:
        request.headers.pop("Authorization", None)  # never a stale or caller-set credential
        if token:
            request.headers["Authorization"] = f"Bearer {token}"

    # -- sync ------------------------------------------------------------------------------

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        service = self.service_for(request.url)
        if service is None:
            _refuse_caller_token(request)
        else:
            self._attach(request, self._token_sync(service))
        yield request

    def _token_sync(self, service: str) -> str | None:
        subject = self._subject_token()
        if subject is None:
            return None
        mode = self._cached_mode(service)
        if mode is None:
            mode = self._remember_mode(service, _sync(self.authorizer.propagation_mode(service)))
        if mode == "forward":
            return subject
        if mode != "exchange":
            raise PropagationDenied(f"calls to {service} on the user's behalf are not allowed", target=service)
        key = self._key(subject, service)
        cached = self._cached_token(key)
        if cached is None:
            cached = self._remember_token(key, _sync(self.authorizer.exchange(subject, service,
                                                                                self._scope(service))))
        return cached.access_token

    # -- async -----------------------------------------------------------------------------

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        service = self.service_for(request.url)
        if service is None:
            _refuse_caller_token(request)
        else:
            self._attach(request, await self._token_async(service))
        yield request

    async def _token_async(self, service: str) -> str | None:
        subject = self._subject_token()
        if subject is None:
            return None
        mode = self._cached_mode(service)
        if mode is None:
            mode = self._remember_mode(service, await _async(self.authorizer.propagation_mode, service))
        if mode == "forward":
            return subject
        if mode != "exchange":
            raise PropagationDenied(f"calls to {service} on the user's behalf are not allowed", target=service)
        key = self._key(subject, service)
        cached = self._cached_token(key)
        if cached is None:
            token = await _async(self.authorizer.exchange, subject, service, self._scope(service))
            cached = self._remember_token(key, token)
        return cached.access_token

    # -- helpers ---------------------------------------------------------------------------

    def _scope(self, service: str) -> str | None:
        return scope_string(self.scopes.get(service)) or None

    def _key(self, subject: str, service: str) -> tuple[bytes, str, str]:
        return token_digest(subject), service, self._scope(service) or ""


def _refuse_caller_token(request: httpx.Request) -> None:
    """:class:`PropagationDenied` when a request for a host outside ``targets`` carries the
    current context token anywhere (a header, the URL), before anything is sent.

    Why: ours is never added there, but an app that copies the incoming headers onto an
    outbound call, or puts the token in a callback URL, would hand the user's token to a
    third party. Credentials the app set for that party (an API key) go out untouched.
    """
    ctx = optional_context()
    if ctx is None or not ctx.token:
        return
    token = ctx.token
    if token in str(request.url) or any(token in value for value in request.headers.values()):
        raise PropagationDenied(f"the caller's context token may not go to {request.url.host}, which is not "
                                "a configured target", target=request.url.host)


def _sync(value: Any) -> Any:
    if inspect.isawaitable(value):
        raise ConfigError("the sync httpx client needs a sync authorizer (AuthzClient or EmbeddedAuthorizer)")
    return value


async def _async(fn: Any, *args: Any) -> Any:
    """Await an async authorizer; run a blocking one off the loop (embedded ones inline)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    if getattr(getattr(fn, "__self__", None), "in_process", False):
        return fn(*args)
    return await asyncio.to_thread(fn, *args)


__all__ = ["PropagationDenied", "TenantGuardAuth"]
