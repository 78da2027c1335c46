"""The authorizers a service talks to, behind one interface.

=====================  ===============================================================
``AsyncAuthzClient``   the local sidecar over HTTP (TCP or unix socket), asyncio
``AuthzClient``        the same, blocking (same settings, same parsing)
``EmbeddedAuthorizer`` the decision core in process (``tenantguard.client.embedded``)
=====================  ===============================================================

Each has ``check(action, resource, *, subject=None, context=None, token=None)``,
``is_allowed(...)`` (False on any failure: fail closed), ``check_many(...)`` (AuthZEN
evaluations with their semantics), ``exchange(token, audience, scope=None)`` and
``propagation_mode(target)``. The token defaults to the current request's
(``tenantguard.context``). See docs/sdk.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tenantguard.client.aio import AsyncAuthzClient
from tenantguard.client.base import ClientSettings
from tenantguard.client.errors import CircuitOpen, NotSupported, UnexpectedResponse
from tenantguard.client.resilience import NO_RETRY, CircuitBreaker, RetryPolicy
from tenantguard.client.sync import AuthzClient
from tenantguard.client.wire import CheckResult, ExchangedToken, Semantic
from tenantguard.errors import Unavailable

if TYPE_CHECKING:
    from tenantguard.client.embedded import EmbeddedAuthorizer


@runtime_checkable
class Authorizer(Protocol):
    """The blocking interface (``AuthzClient``, ``EmbeddedAuthorizer``)."""

    def check(self, action: Any, resource: Any, **kwargs: Any) -> CheckResult: ...

    def is_allowed(self, action: Any, resource: Any, **kwargs: Any) -> bool: ...

    def check_many(self, evaluations: Any, **kwargs: Any) -> list[CheckResult]: ...

    def exchange(self, token: str | None, audience: str, scope: Any = None) -> ExchangedToken: ...

    def propagation_mode(self, target: str) -> str: ...


@runtime_checkable
class AsyncAuthorizer(Protocol):
    """The awaitable interface (``AsyncAuthzClient``, ``EmbeddedAuthorizer.aio()``)."""

    async def check(self, action: Any, resource: Any, **kwargs: Any) -> CheckResult: ...

    async def is_allowed(self, action: Any, resource: Any, **kwargs: Any) -> bool: ...

    async def check_many(self, evaluations: Any, **kwargs: Any) -> list[CheckResult]: ...

    async def exchange(self, token: str | None, audience: str, scope: Any = None) -> ExchangedToken: ...

    async def propagation_mode(self, target: str) -> str: ...


def __getattr__(name: str) -> Any:
    # EmbeddedAuthorizer is imported lazily: it pulls in the Rego engine, which a
    # service that only talks to its sidecar should not load.
    if name == "EmbeddedAuthorizer":
        from tenantguard.client.embedded import EmbeddedAuthorizer

        return EmbeddedAuthorizer
    raise AttributeError(name)


__all__ = [
    "NO_RETRY",
    "AsyncAuthorizer",
    "AsyncAuthzClient",
    "Authorizer",
    "AuthzClient",
    "CheckResult",
    "CircuitBreaker",
    "CircuitOpen",
    "ClientSettings",
    "EmbeddedAuthorizer",
    "ExchangedToken",
    "NotSupported",
    "RetryPolicy",
    "Semantic",
    "Unavailable",
    "UnexpectedResponse",
]
