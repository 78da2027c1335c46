"""``AsyncAuthzClient``: the sidecar over HTTP (TCP or a unix socket), for asyncio services.

The I/O is aiohttp's: measured against this repository's sidecar, an httpx
``AsyncClient`` spent ~690 µs of CPU per check with one request in flight and ~2.2 ms
with 32 (its connection pool scans every connection per request), aiohttp ~130 µs and
~80 µs (``bench/bench_sdk.py``, BENCHMARKS.md). The settings (``httpx.Timeout`` and
``httpx.Limits``) stay the same vocabulary as the blocking client's; they are
translated here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import aiohttp

from tenantguard.client import wire
from tenantguard.client.base import (
    MAX_RESPONSE_BYTES,
    ClientSettings,
    log_denied,
    merge_defaults,
    outcome,
    request_kwargs,
    should_retry,
    transport_unavailable,
)
from tenantguard.client.wire import Call, CheckResult, ExchangedToken, Semantic
from tenantguard.errors import TenantGuardError
from tenantguard.exchange import PropagationMode
from tenantguard.search.core import ResourceFilter

# What a failed exchange with the sidecar raises: refused, reset, closed early, timed out.
TRANSPORT_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, OSError)
_READ_CHUNK = 64 * 1024


class AsyncAuthzClient:
    """Asks the local sidecar; fails closed (``Unavailable``) when it cannot get an answer.

    One instance per process and sidecar: it holds the connection pool and the circuit
    breaker. Use ``async with`` or call :meth:`aclose` at shutdown.
    """

    def __init__(self, base_url: str | None = None, *, uds: str | None = None,
                 settings: ClientSettings | None = None, **options: Any) -> None:
        self.settings = settings or ClientSettings(base_url=base_url, uds=uds, **options)
        self._base_url = self.settings.resolved_base_url
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _http(self) -> aiohttp.ClientSession:
        """The session of the running loop, created on first use (so a client may be built
        at import time, before any loop runs); a new loop gets a new session."""
        loop = asyncio.get_running_loop()
        session = self._session
        if session is None or session.closed or self._loop is not loop:
            session = self._session = _new_session(self.settings)
            self._loop = loop
        return session

    @property
    def breaker(self) -> Any:
        return self.settings.breaker

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()

    # -- the one interface ------------------------------------------------------------

    async def check(self, action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str, *,
                    subject: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
                    token: str | None = None, at_least: int | None = None) -> CheckResult:
        """One decision. The token defaults to the current request's (``tenantguard.context``)."""
        body = wire.question(action, resource, subject=subject, context=context)
        return await self._send(wire.check_call(body, wire.resolve_token(token, subject), at_least))

    async def is_allowed(self, action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str,
                         **kwargs: Any) -> bool:
        """True only for an explicit allow; any failure is False (fail closed) and is logged."""
        try:
            return (await self.check(action, resource, **kwargs)).allow
        except TenantGuardError as exc:
            log_denied(exc, "is_allowed")
            return False

    async def check_many(self, evaluations: Sequence[Mapping[str, Any]], *,
                         action: Mapping[str, Any] | str | None = None,
                         resource: Mapping[str, Any] | str | None = None,
                         subject: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
                         token: str | None = None, semantic: Semantic = "execute_all") -> list[CheckResult]:
        """AuthZEN evaluations: top-level members are defaults; ``semantic`` may stop early."""
        defaults = merge_defaults(subject, action, resource, context)
        call = wire.evaluations_call(defaults, wire.evaluation_items(evaluations), semantic,
                                     wire.resolve_token(token, defaults.get("subject")))
        return await self._send(call)

    async def resource_filter(self, action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str,
                        attribute: str, *, via: str | None = None, subject: Mapping[str, Any] | None = None,
                        context: Mapping[str, Any] | None = None, token: str | None = None,
                        at_least: int | None = None) -> ResourceFilter:
        """The values of ``resource.properties[attribute]`` the caller may act on, for a list
        endpoint's own query (``tenantguard.search.sql``); errors raise, so no answer means no list."""
        body = wire.question(action, resource, subject=subject, context=context)
        return await self._send(wire.filter_call(body, attribute, via, wire.resolve_token(token, subject), at_least))

    async def exchange(self, token: str | None, audience: str,
                       scope: Sequence[str] | str | None = None) -> ExchangedToken:
        """RFC 8693: a token for ``audience`` in exchange for ``token`` (default: the current one)."""
        subject_token = wire.resolve_token(token, None)
        assert subject_token is not None
        return await self._send(wire.exchange_call(subject_token, audience, scope,
                                                   self.settings.basic_auth()))

    async def propagation_mode(self, target: str) -> PropagationMode:
        """How a call to ``target`` carries the caller's context, per the sidecar's policy."""
        return await self._send(wire.propagation_call(target))

    # -- I/O ----------------------------------------------------------------------------

    async def _send(self, call: Call) -> Any:
        settings = self.settings
        attempts = settings.retry.attempts
        for attempt in range(attempts):
            settings.breaker.before_call()
            try:
                status, content = await self._exchange(call)
            except TRANSPORT_ERRORS as exc:
                settings.breaker.on_failure()
                if attempt + 1 >= attempts:
                    raise transport_unavailable(call, exc, attempt + 1, self.settings.where,
                                                self.settings.default_address_note) from exc
            else:
                settings.breaker.on_success()
                if attempt + 1 >= attempts or not should_retry(status):
                    return outcome(call, status, content)
            await asyncio.sleep(settings.retry.delay(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _exchange(self, call: Call) -> tuple[int, bytes | None]:
        """One request: its status and body (None when over ``MAX_RESPONSE_BYTES``, unread)."""
        async with self._http().request(call.method, self._base_url + call.path, allow_redirects=False,
                                        **request_kwargs(call, raw_body="data")) as response:
            if (response.content_length or 0) > MAX_RESPONSE_BYTES:
                return response.status, None
            content = bytearray()
            async for chunk in response.content.iter_chunked(_READ_CHUNK):
                content += chunk
                if len(content) > MAX_RESPONSE_BYTES:
                    return response.status, None
            return response.status, bytes(content)


def _new_session(settings: ClientSettings) -> aiohttp.ClientSession:
    """A pooled session with every phase bounded, as ``ClientSettings`` says.

    ``limits.max_connections`` bounds the pool, ``keepalive_expiry`` idle connections;
    ``timeout.pool`` + ``connect`` bound getting a connection, ``read`` each read, and
    the sum of all four the whole exchange (aiohttp has no separate write timeout).
    """
    limits, timeout = settings.limits, settings.timeout
    keepalive = limits.keepalive_expiry if limits.keepalive_expiry is not None else 15.0
    uds = settings.resolved_uds
    connector: aiohttp.BaseConnector = (
        aiohttp.UnixConnector(path=uds, limit=limits.max_connections or 0, keepalive_timeout=keepalive)
        if uds is not None else
        aiohttp.TCPConnector(limit=limits.max_connections or 0, keepalive_timeout=keepalive, use_dns_cache=True)
    )
    phases = (timeout.connect, timeout.read, timeout.write, timeout.pool)  # each finite: ClientSettings checks
    client_timeout = aiohttp.ClientTimeout(
        total=sum(p for p in phases if p is not None), connect=(timeout.pool or 0) + (timeout.connect or 0),
        sock_connect=timeout.connect, sock_read=timeout.read)
    return aiohttp.ClientSession(connector=connector, timeout=client_timeout, trust_env=False,
                                 headers={"Accept": "application/json", "User-Agent": "tenantguard-sdk"})
