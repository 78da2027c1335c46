"""FastAPI integration: verify the caller's context token, set the tenant context, enforce.

::

    guard = TenantGuard(AsyncAuthzClient(), verifier=TokenVerifier(trust, VerifyOptions(audience="billing")))
    app = FastAPI()
    guard.install(app)          # middleware (sets the context per request) + error bodies

    @app.get("/invoices/{invoice_id}",
             dependencies=[Depends(require("invoices:read",
                                           resource=lambda invoice_id: {"type": "invoice", "id": invoice_id}))])
    async def read_invoice(invoice_id: str): ...

    @app.post("/invoices")
    @require("invoices:write", resource="invoice")      # decorator form, below the route decorator
    def create_invoice(body: InvoiceIn): ...

Failure is closed and machine-readable (the sidecar's ``{"error", "message", "detail"}``):
401 + ``WWW-Authenticate: Bearer`` for a missing or invalid token, 403 for a deny
(with reasons and the decision id), 503 when no decision can be had.

The ``resource`` callable is itself a FastAPI dependency: its parameters are resolved
by name like a route's (path, query, body, other dependencies), and it may be async
(e.g. to look up the invoice's project). FastAPI runs a plain ``def`` (a lambda too) in
a worker thread, ~115 µs a request: write a callable that only builds a mapping as
``async def`` (docs/sdk.md, "Speed"). The bearer scheme is ``HTTPBearer(auto_error=False)``
so the OpenAPI document shows it while the error bodies stay ours.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from cachetools import TLRUCache
from fastapi import Depends, FastAPI, Request, Security
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from tenantguard.client.wire import CheckResult
from tenantguard.context import NoTenantContext, RequestContext, reset_context, set_context
from tenantguard.errors import ClaimInvalid, TenantGuardError, TokenError, TokenMissing, Unavailable
from tenantguard.identity.tokens import (
    CHAIN_CLAIM,
    CHAIN_KIDS_CLAIM,
    ROOT_IAT_CLAIM,
    Claims,
    TokenVerifier,
    decode_unverified,
    token_digest,
)
from tenantguard.server.asgi import DuplicateHeader, bearer_challenge, single_header

log = logging.getLogger("tenantguard.fastapi")

STATE_KEY = "tenantguard"
_CONTEXT_STATE = "tenantguard_context"
_ERROR_STATE = "tenantguard_token_error"
DECISION_PARAM = "tenantguard_decision__"
ResourceSpec = Mapping[str, Any] | str | Callable[..., Any] | None


# --------------------------------------------------------------------------- errors


class AuthzHTTPError(HTTPException):
    """An HTTP refusal carrying the tenantguard error body; rendered flat by ``install``."""

    def __init__(self, status_code: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None):
        super().__init__(status_code=status_code, detail=dict(body),  # type: ignore[arg-type]
                         headers=dict(headers or {}))
        self.body = dict(body)


def unauthorized(exc: TokenError) -> AuthzHTTPError:
    """401 with the same RFC 6750 challenge every tenantguard door writes (``asgi.bearer_challenge``)."""
    return AuthzHTTPError(401, exc.to_dict(), {"WWW-Authenticate": bearer_challenge(exc, realm="tenantguard")})


def forbidden(result: CheckResult, action: str) -> AuthzHTTPError:
    return AuthzHTTPError(403, {"error": "forbidden", "message": f"{action} is not allowed",
                                "detail": {"reasons": list(result.reasons), "decision_id": result.decision_id}})


def http_error(exc: TenantGuardError) -> AuthzHTTPError:
    """Typed errors to responses: token -> 401, unavailable -> 503 (fail closed), else its status."""
    if isinstance(exc, TokenError):
        return unauthorized(exc)
    if isinstance(exc, Unavailable):
        return AuthzHTTPError(503, {"error": exc.code, "message": "authorization is unavailable; try again"},
                              {"Retry-After": "1"})
    if isinstance(exc, NoTenantContext) or exc.http_status >= 500:
        log.error("authorization misconfigured: %s", exc)
        return AuthzHTTPError(500, {"error": exc.code, "message": "internal error"})
    return AuthzHTTPError(exc.http_status, exc.to_dict())


# --------------------------------------------------------------------------- token verification


class SidecarTokenVerifier:
    """Verify a context token through the sidecar when the service holds no trust set.

    The sidecar has no introspection endpoint, so this asks it a harmless question
    (``tenantguard:verify`` on ``tenantguard:token``) with the token: a 401 means the
    token is bad, any decision means it verified (signature, audience, times,
    revocation), and only then are its claims read. Successes are cached for at most
    ``max_cache_seconds`` so a revocation is noticed soon. Prefer a local
    :class:`~tenantguard.identity.tokens.TokenVerifier` (no round trip) where the trust set is at hand.
    """

    def __init__(self, client: Any, *, max_cache_seconds: float = 30.0, cache_size: int = 10_000) -> None:
        self.client = client
        self.max_cache_seconds = max_cache_seconds
        self._cache: TLRUCache[bytes, Claims] = TLRUCache(
            maxsize=cache_size, ttu=lambda _k, claims, now: min(claims.exp, now + self.max_cache_seconds),
            timer=time.time)

    async def verify(self, token: str) -> Claims:
        digest = token_digest(token)
        claims = self._cache.get(digest)
        if claims is not None:
            return claims
        action, resource = "tenantguard:verify", {"type": "tenantguard:token"}
        if inspect.iscoroutinefunction(self.client.check):
            await self.client.check(action, resource, token=token)
        else:  # a blocking client must not stall the event loop
            await run_in_threadpool(self.client.check, action, resource, token=token)
        claims = claims_of_verified(token)
        self._cache[digest] = claims
        return claims


def claims_of_verified(token: str) -> Claims:
    """Claims of a token a sidecar has just verified (the payload is trusted, not re-checked)."""
    doc = decode_unverified(token)
    payload, header = doc["payload"], doc["header"]
    try:
        aud = payload["aud"]
        act = payload.get("act")
        return Claims(iss=payload["iss"], sub=payload["sub"], tenant_id=payload["tenant_id"],
                      aud=(aud,) if isinstance(aud, str) else tuple(aud), exp=float(payload["exp"]),
                      iat=float(payload["iat"]), nbf=float(payload["nbf"]) if "nbf" in payload else None,
                      jti=str(payload["jti"]), roles=tuple(payload.get("roles") or ()),
                      scope=tuple(s for s in str(payload.get("scope") or "").split(" ") if s),
                      act=act if isinstance(act, dict) else None, kid=str(header.get("kid", "")), raw=payload,
                      chain=tuple(payload.get(CHAIN_CLAIM) or ()),
                      root_iat=float(payload[ROOT_IAT_CLAIM]) if ROOT_IAT_CLAIM in payload else None,
                      chain_kids=tuple(payload.get(CHAIN_KIDS_CLAIM) or ()))
    except (KeyError, TypeError, ValueError):
        raise ClaimInvalid("verified token has unexpected claims") from None


# --------------------------------------------------------------------------- the guard


class TenantGuard:
    """One service's enforcement point: how tokens are verified and who decides.

    ``authorizer`` is any of the SDK's authorizers (async or sync). ``verifier`` is a
    local :class:`TokenVerifier`; without one, tokens are verified by the sidecar
    (:class:`SidecarTokenVerifier`), which needs ``authorizer`` to be a sidecar client.
    """

    def __init__(self, authorizer: Any, *, verifier: TokenVerifier | SidecarTokenVerifier | None = None) -> None:
        self.authorizer = authorizer
        self.verifier = verifier if verifier is not None else SidecarTokenVerifier(authorizer)
        self.bearer = HTTPBearer(auto_error=False, scheme_name="ContextToken",
                                 description="tenantguard context token (a short-lived JWT)")
        self._async_check = _is_async(authorizer.check)

    def install(self, app: FastAPI) -> None:
        """Register the guard on ``app``: context middleware and flat error bodies."""
        app.state.tenantguard = self
        app.add_middleware(TenantContextMiddleware, guard=self)

        @app.exception_handler(AuthzHTTPError)
        async def _render(request: Request, exc: AuthzHTTPError) -> JSONResponse:
            return JSONResponse(exc.body, status_code=exc.status_code, headers=exc.headers)

        @app.exception_handler(NoTenantContext)
        async def _no_context(request: Request, exc: NoTenantContext) -> JSONResponse:
            refusal = _caller_refusal(request)
            if refusal is not None:  # the caller brought no valid token: theirs to fix, not a 500
                return JSONResponse(refusal.body, status_code=refusal.status_code, headers=refusal.headers)
            log.error("route needed a tenant context and had none: %s %s", request.method, request.url.path)
            return JSONResponse({"error": exc.code, "message": "internal error"}, status_code=500)

    async def authenticate(self, token: str) -> RequestContext:
        """Verify ``token`` and build the request context; raises :class:`TokenError`."""
        claims = self.verifier.verify(token)
        if inspect.isawaitable(claims):
            claims = await claims
        return RequestContext(claims=claims, token=token)

    async def decide(self, action: str, resource: Mapping[str, Any] | str, ctx: RequestContext) -> CheckResult:
        if self._async_check:
            return await self.authorizer.check(action, resource, token=ctx.token)
        if getattr(self.authorizer, "in_process", False):  # microseconds: no thread hop
            return self.authorizer.check(action, resource, token=ctx.token)
        return await run_in_threadpool(self.authorizer.check, action, resource, token=ctx.token)

    @property
    def context(self) -> Callable[..., Awaitable[RequestContext]]:
        """Dependency: the verified :class:`RequestContext` (401 when absent or invalid)."""
        bearer = self.bearer

        async def tenant_context(request: Request,
                                 credentials: HTTPAuthorizationCredentials | None = Security(bearer)) -> RequestContext:  # noqa: B008
            return await self._context_of(request, credentials)

        return tenant_context

    async def _context_of(self, request: Request, credentials: HTTPAuthorizationCredentials | None) -> RequestContext:
        try:  # without the middleware, this is the only place that sees both headers
            single_header(request.scope, b"authorization")
        except DuplicateHeader as exc:
            raise http_error(exc) from None
        ctx = getattr(request.state, _CONTEXT_STATE, None)
        if ctx is not None:
            return ctx
        error = getattr(request.state, _ERROR_STATE, None)
        if error is not None:
            raise unauthorized(error)
        if credentials is None or not credentials.credentials:
            raise unauthorized(TokenMissing("a context token is required (Authorization: Bearer ...)"))
        try:
            ctx = await self.authenticate(credentials.credentials)
        except TokenError as exc:
            raise unauthorized(exc) from None
        except TenantGuardError as exc:
            raise http_error(exc) from None
        # Without the middleware the context lives for the rest of this request's task.
        set_context(ctx)
        setattr(request.state, _CONTEXT_STATE, ctx)
        return ctx

    def require(self, action: str, resource: ResourceSpec = None) -> Requirement:
        return Requirement(action, resource, guard=self)


def _caller_refusal(request: Request) -> AuthzHTTPError | None:
    """The 401 a route that read the context (``current_tenant()``) without ``require`` owes a
    caller whose token was missing or invalid; None when the request had a verified context.

    Why: the middleware lets such requests through for public routes, so a route that
    needs a tenant meets :class:`NoTenantContext`; answering 500 would turn an expired
    or forged token into a server error instead of the 401 the caller can act on.
    """
    if getattr(request.state, _CONTEXT_STATE, None) is not None:
        return None
    error = getattr(request.state, _ERROR_STATE, None)
    if error is not None:
        return unauthorized(error)
    return unauthorized(TokenMissing("a context token is required (Authorization: Bearer ...)"))


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn)


# --------------------------------------------------------------------------- middleware


class TenantContextMiddleware:
    """Pure ASGI: verify a presented bearer token once, set the context for the whole request.

    A missing token passes through (public routes stay public; ``require`` answers 401);
    an invalid one is remembered so the dependency can answer 401 with its code. The
    context variable is reset when the request ends, so nothing outlives it.
    """

    def __init__(self, app: ASGIApp, *, guard: TenantGuard) -> None:
        self.app = app
        self.guard = guard
        self._unguarded: list[str] | None = None  # routes found registered without their require()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._unguarded is None:
            self._unguarded = unguarded_routes(scope.get("app"))
        if self._unguarded:
            log.error("routes registered without their @require (put it below the route decorator): %s",
                      ", ".join(self._unguarded))
            await _send_error(send, AuthzHTTPError(500, {"error": "misconfigured", "message": "internal error"}))
            return
        try:
            token = _bearer(scope)
        except DuplicateHeader as exc:
            await _send_error(send, http_error(exc))
            return
        if token is None:
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        ctx: RequestContext | None = None
        try:
            ctx = await self.guard.authenticate(token)
        except TokenError as exc:
            state[_ERROR_STATE] = exc
        except TenantGuardError as exc:  # e.g. the sidecar is unreachable: fail closed
            await _send_error(send, http_error(exc))
            return
        state[_CONTEXT_STATE] = ctx
        reset = set_context(ctx)
        try:
            await self.app(scope, receive, send)
        finally:
            reset_context(reset)


def unguarded_routes(app: Any) -> list[str]:
    """Paths whose endpoint is a function ``@require`` wrapped, registered unwrapped.

    Why: ``@require`` above ``@app.get`` wraps the function after the router stored it,
    so the route would run with no check at all; the middleware refuses every request
    instead (500 ``misconfigured``), which a deployment notices at once.
    """
    found = []
    for route in getattr(app, "routes", None) or ():
        endpoint = getattr(route, "endpoint", None)
        try:
            wrapped = endpoint in _REQUIRE_WRAPPED
        except TypeError:  # not weak-referenceable: never one of ours
            wrapped = False
        if wrapped:
            found.append(str(getattr(route, "path", "?")))
    return found


def _bearer(scope: Scope) -> str | None:
    value = single_header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


async def _send_error(send: Send, exc: AuthzHTTPError) -> None:
    body = json.dumps(exc.body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in (exc.headers or {}).items()]
    await send({"type": "http.response.start", "status": exc.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# --------------------------------------------------------------------------- require


class Requirement:
    """``Depends(require(...))`` and ``@require(...)`` in one object.

    As a dependency FastAPI sees the async function in ``__wrapped__`` (its signature,
    its coroutine-ness) and calls this object with keyword arguments; as a decorator it
    is called with the route function and returns it wrapped, signature kept, plus one
    keyword-only parameter whose default is ``Depends(self)``.
    """

    def __init__(self, action: str, resource: ResourceSpec = None, *, guard: TenantGuard | None = None) -> None:
        if not isinstance(action, str) or not action:
            raise ValueError("require() needs a non-empty action name")
        self.action = action
        self.resource = resource
        self.guard = guard
        self.__wrapped__ = self._dependency()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return self._decorate(args[0])
        return self.__wrapped__(*args, **kwargs)

    def _guard(self, request: Request) -> TenantGuard:
        guard = self.guard or getattr(request.app.state, STATE_KEY, None)
        if not isinstance(guard, TenantGuard):
            raise NoTenantContext("require() used on an app without TenantGuard.install(app)")
        return guard

    def _dependency(self) -> Callable[..., Awaitable[CheckResult]]:
        # The bearer scheme is a module-level singleton per name, so OpenAPI lists it once.
        bearer = self.guard.bearer if self.guard is not None else _BEARER
        spec = self.resource

        async def enforce(request: Request, credentials: HTTPAuthorizationCredentials | None,
                          resource: Any) -> CheckResult:
            guard = self._guard(request)
            ctx = await guard._context_of(request, credentials)
            try:
                result = await guard.decide(self.action, _resource(resource), ctx)
            except TenantGuardError as exc:
                raise http_error(exc) from None
            if not result.allow:
                log.info("denied %s for %r: %s", self.action, ctx, ",".join(result.reasons))
                raise forbidden(result, self.action)
            return result

        if callable(spec):
            async def with_resource(request: Request,
                                    credentials: HTTPAuthorizationCredentials | None = Security(bearer),  # noqa: B008
                                    resource: Any = Depends(spec)) -> CheckResult:  # noqa: B008
                return await enforce(request, credentials, resource)

            return with_resource

        async def static_resource(request: Request,
                                  credentials: HTTPAuthorizationCredentials | None = Security(bearer)) -> CheckResult:  # noqa: B008
            return await enforce(request, credentials, spec)

        return static_resource

    def _decorate(self, func: Callable[..., Any]) -> Callable[..., Any]:
        _REQUIRE_WRAPPED.add(func)
        signature = inspect.signature(func)
        params = list(signature.parameters.values())
        extra = inspect.Parameter(DECISION_PARAM, inspect.Parameter.KEYWORD_ONLY, default=Depends(self),
                                  annotation=CheckResult)
        at = next((i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD), len(params))
        params.insert(at, extra)

        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def async_route(*args: Any, **kwargs: Any) -> Any:
                kwargs.pop(DECISION_PARAM, None)
                return await func(*args, **kwargs)

            wrapper: Callable[..., Any] = async_route
        else:
            @functools.wraps(func)
            def sync_route(*args: Any, **kwargs: Any) -> Any:
                kwargs.pop(DECISION_PARAM, None)
                return func(*args, **kwargs)

            wrapper = sync_route
        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        return wrapper


# Functions @require has wrapped: one of them registered as a route endpoint is a route
# the router stored before the wrapper existed (the decorators in the wrong order).
_REQUIRE_WRAPPED: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()
_BEARER = HTTPBearer(auto_error=False, scheme_name="ContextToken",
                     description="tenantguard context token (a short-lived JWT)")


def _resource(value: Any) -> Mapping[str, Any] | str:
    if value is None:
        raise NoTenantContext("require() needs a resource (a type name, a mapping or a callable)")
    if isinstance(value, str | Mapping):
        return value
    raise TypeError(f"resource callable returned {type(value).__name__}, not a mapping")


def require(action: str, resource: ResourceSpec = None) -> Requirement:
    """Allow the route only when ``action`` on ``resource`` is allowed for the caller.

    ``resource`` is a type name (``"invoice"``), a mapping, or a callable whose
    parameters FastAPI fills like a route's, e.g.
    ``lambda invoice_id: {"type": "invoice", "id": invoice_id}``. Uses the guard that
    :meth:`TenantGuard.install` put on the app.
    """
    return Requirement(action, resource)


async def tenant_context(request: Request,
                         credentials: HTTPAuthorizationCredentials | None = Security(_BEARER)) -> RequestContext:  # noqa: B008
    """Dependency: the verified request context via the installed guard (401 without one)."""
    guard = getattr(request.app.state, STATE_KEY, None)
    if not isinstance(guard, TenantGuard):
        raise NoTenantContext("tenant_context used on an app without TenantGuard.install(app)")
    return await guard._context_of(request, credentials)


__all__ = [
    "AuthzHTTPError",
    "Requirement",
    "SidecarTokenVerifier",
    "TenantContextMiddleware",
    "TenantGuard",
    "require",
    "tenant_context",
]
