"""``AsyncAuthzClient``: the sidecar over HTTP (TCP or a unix socket), for asyncio services."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import httpx

from ..errors import TenantGuardError
from ..exchange import PropagationMode
from . import wire
from .base import (
    ClientSettings,
    log_denied,
    merge_defaults,
    outcome,
    request_kwargs,
    should_retry,
    transport_unavailable,
)
from .wire import Call, CheckResult, ExchangedToken, Semantic


class AsyncAuthzClient:
    """Asks the local sidecar; fails closed (``Unavailable``) when it cannot get an answer.

    One instance per process and sidecar: it holds the connection pool and the circuit
    breaker. Use ``async with`` or call :meth:`aclose` at shutdown.
    """

    def __init__(self, base_url: str | None = None, *, uds: str | None = None,
                 settings: ClientSettings | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 **options: Any) -> None:
        self.settings = settings or ClientSettings(base_url=base_url, uds=uds, **options)
        uds_path = self.settings.resolved_uds
        if transport is None:
            transport = httpx.AsyncHTTPTransport(uds=uds_path, limits=self.settings.limits, retries=0)
        self._http = httpx.AsyncClient(transport=transport, **self.settings.httpx_kwargs())

    @property
    def breaker(self) -> Any:
        return self.settings.breaker

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

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
                response = await self._http.request(call.method, call.path, **request_kwargs(call))
            except httpx.TransportError as exc:
                settings.breaker.on_failure()
                if attempt + 1 >= attempts:
                    raise transport_unavailable(call, exc, attempt + 1) from exc
            else:
                settings.breaker.on_success()
                if attempt + 1 >= attempts or not should_retry(response):
                    return outcome(call, response)
            await asyncio.sleep(settings.retry.delay(attempt))
        raise AssertionError("unreachable")  # pragma: no cover
