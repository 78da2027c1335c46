"""``AuthzClient``: the blocking twin of :class:`~tenantguard.client.aio.AsyncAuthzClient`.

Same settings object, same request building and parsing (``wire``/``base``); only the
I/O loop differs. For sync frameworks and scripts; inside asyncio use the async client.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import httpx

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


class AuthzClient:
    """Blocking sidecar client; thread-safe (httpx.Client and the breaker are)."""

    def __init__(self, base_url: str | None = None, *, uds: str | None = None,
                 settings: ClientSettings | None = None, transport: httpx.BaseTransport | None = None,
                 **options: Any) -> None:
        self.settings = settings or ClientSettings(base_url=base_url, uds=uds, **options)
        if transport is None:
            transport = httpx.HTTPTransport(uds=self.settings.resolved_uds, limits=self.settings.limits, retries=0)
        self._http = httpx.Client(transport=transport, **self.settings.httpx_kwargs())

    @property
    def breaker(self) -> Any:
        return self.settings.breaker

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def check(self, action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str, *,
              subject: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
              token: str | None = None, at_least: int | None = None) -> CheckResult:
        body = wire.question(action, resource, subject=subject, context=context)
        return self._send(wire.check_call(body, wire.resolve_token(token, subject), at_least))

    def is_allowed(self, action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str, **kwargs: Any) -> bool:
        try:
            return self.check(action, resource, **kwargs).allow
        except TenantGuardError as exc:
            log_denied(exc, "is_allowed")
            return False

    def check_many(self, evaluations: Sequence[Mapping[str, Any]], *,
                   action: Mapping[str, Any] | str | None = None,
                   resource: Mapping[str, Any] | str | None = None,
                   subject: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
                   token: str | None = None, semantic: Semantic = "execute_all") -> list[CheckResult]:
        defaults = merge_defaults(subject, action, resource, context)
        call = wire.evaluations_call(defaults, wire.evaluation_items(evaluations), semantic,
                                     wire.resolve_token(token, defaults.get("subject")))
        return self._send(call)

    def resource_filter(self, action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str,
                        attribute: str, *, via: str | None = None, subject: Mapping[str, Any] | None = None,
                        context: Mapping[str, Any] | None = None, token: str | None = None,
                        at_least: int | None = None) -> ResourceFilter:
        """The values of ``resource.properties[attribute]`` the caller may act on, for a list
        endpoint's own query (``tenantguard.search.sql``); errors raise, so no answer means no list."""
        body = wire.question(action, resource, subject=subject, context=context)
        return self._send(wire.filter_call(body, attribute, via, wire.resolve_token(token, subject), at_least))

    def exchange(self, token: str | None, audience: str, scope: Sequence[str] | str | None = None) -> ExchangedToken:
        subject_token = wire.resolve_token(token, None)
        assert subject_token is not None
        return self._send(wire.exchange_call(subject_token, audience, scope,
                                             self.settings.basic_auth()))

    def propagation_mode(self, target: str) -> PropagationMode:
        return self._send(wire.propagation_call(target))

    def _send(self, call: Call) -> Any:
        settings = self.settings
        attempts = settings.retry.attempts
        for attempt in range(attempts):
            settings.breaker.before_call()
            try:
                status, content = self._exchange(call)
            except httpx.TransportError as exc:
                settings.breaker.on_failure()
                if attempt + 1 >= attempts:
                    raise transport_unavailable(call, exc, attempt + 1, self.settings.where,
                                                self.settings.default_address_note) from exc
            else:
                settings.breaker.on_success()
                if attempt + 1 >= attempts or not should_retry(status):
                    return outcome(call, status, content)
            time.sleep(settings.retry.delay(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _exchange(self, call: Call) -> tuple[int, bytes | None]:
        """One request: its status and body (None when over ``MAX_RESPONSE_BYTES``, not read further).

        Why streamed, with a deadline: httpx bounds each read, not the whole answer, so
        a sidecar that dribbles a byte just inside the read timeout would hold the
        request (and its worker thread) forever, and read into memory whatever size it
        sends. The deadline is the sum of the phases, as the async client's total.
        """
        timeout = self.settings.timeout
        deadline = time.monotonic() + sum(p for p in (timeout.connect, timeout.read, timeout.write, timeout.pool)
                                          if p is not None)
        with self._http.stream(call.method, call.path, **request_kwargs(call)) as response:
            content = bytearray()
            for chunk in response.iter_bytes():
                content += chunk
                if len(content) > MAX_RESPONSE_BYTES:
                    return response.status_code, None
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("the sidecar's answer took longer than the whole timeout")
            return response.status_code, bytes(content)
