"""The request's tenant context: who is calling, for which tenant, through which services.

A service learns the tenant from one place only, the verified context token. This
module keeps that verified answer in a :class:`contextvars.ContextVar`, so every layer
of the request (the route, the data layer, outbound calls, queue producers) reads the
same value without threading it through arguments, and code that runs outside a
request fails loudly (:class:`NoTenantContext`) instead of silently meaning "no tenant"
or "every tenant".

Context variables follow asyncio tasks and are copied into worker threads by
Starlette/anyio, so a value set by the FastAPI middleware is visible in sync and async
routes alike and never bleeds into another request's task.

The raw token is kept (outbound propagation needs it) but never shown: ``repr`` prints
a short SHA-256 fingerprint, the same label the sidecar's logs use.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tenantguard.errors import TenantGuardError
from tenantguard.identity.tokens import Claims, token_fingerprint


class NoTenantContext(TenantGuardError):
    """Code that needs a tenant ran outside a verified request (or outside ``use_context``).

    A 500, not a 401: the caller did nothing wrong, the service forgot to establish the
    context (a missing dependency, a background task started without one).
    """

    code = "no_tenant_context"
    http_status = 500


@dataclass(frozen=True, slots=True, repr=False)
class RequestContext:
    """The verified identity of one request; build it only from a verified token."""

    claims: Claims
    token: str = field(compare=False)

    @property
    def tenant(self) -> str:
        return self.claims.tenant_id

    @property
    def subject(self) -> str:
        return self.claims.sub

    @property
    def actor_chain(self) -> list[str]:
        """Services that acted on the user's behalf, nearest first (RFC 8693 ``act``)."""
        return self.claims.actor_chain

    @property
    def roles(self) -> tuple[str, ...]:
        return self.claims.roles

    @property
    def scope(self) -> tuple[str, ...]:
        return self.claims.scope

    @property
    def expires_at(self) -> float:
        return self.claims.exp

    @property
    def fingerprint(self) -> str:
        """A short, non-reversible label for the token: what logs may show."""
        return token_fingerprint(self.token)

    def log_fields(self) -> Mapping[str, Any]:
        """Fields safe to put in a structured log line (never the token)."""
        return {"tenant": self.tenant, "sub": self.subject, "actors": self.actor_chain, "token": self.fingerprint}

    def __repr__(self) -> str:
        return f"RequestContext(tenant={self.tenant!r}, sub={self.subject!r}, token=<{self.fingerprint}>)"


_current: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "tenantguard_request_context", default=None
)


def optional_context() -> RequestContext | None:
    """The current context, or None: for code that has a sensible no-tenant path."""
    return _current.get()


def current_context() -> RequestContext:
    """The current verified context; :class:`NoTenantContext` when there is none."""
    ctx = _current.get()
    if ctx is None:
        raise NoTenantContext(
            "no tenant context: run inside a request handled by tenantguard.fastapi, "
            "a tenantguard.envelope consumer, or `with use_context(ctx):`"
        )
    return ctx


def current_tenant() -> str:
    """The current tenant id, from the verified token only."""
    return current_context().tenant


@contextmanager
def use_context(ctx: RequestContext) -> Iterator[RequestContext]:
    """Make ``ctx`` current for the block (and tasks started in it), then restore the previous one."""
    if not isinstance(ctx, RequestContext):
        raise TypeError("use_context needs a RequestContext built from verified claims")
    reset = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(reset)


def set_context(ctx: RequestContext | None) -> contextvars.Token[RequestContext | None]:
    """Low-level: set the context and return the reset token (for ASGI middleware)."""
    return _current.set(ctx)


def reset_context(token: contextvars.Token[RequestContext | None]) -> None:
    _current.reset(token)


__all__ = [
    "NoTenantContext",
    "RequestContext",
    "current_context",
    "current_tenant",
    "optional_context",
    "reset_context",
    "set_context",
    "use_context",
]
