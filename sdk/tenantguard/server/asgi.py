"""What every tenantguard HTTP service shares: body bounds, loopback guard, JSON errors.

The sidecar, the plane and services using the SDK render failures the same way (a
small JSON body with a stable ``error`` code, never a traceback) and bound request
bodies the same way: the declared Content-Length first, then while reading, so a
chunked upload cannot slip past the bound.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenantguard.errors import (
    InvalidInput,
    PayloadTooLarge,
    TenantGuardError,
    TokenError,
    TokenMissing,
    UnsupportedMediaType,
)
from tenantguard.util.jsonlimits import MAX_DEPTH, is_json_media_type, loads

log = logging.getLogger(__name__)

MAX_PROBLEMS = 20
# Every 503 a tenantguard service answers carries it (typed errors, readiness probes, the token
# endpoint): the SDK, the CLI and proxies retry on it, and a 503 without it reads as "down, give up".
RETRY_AFTER: dict[str, str] = {"Retry-After": "1"}
_JSON_HEADER = (b"content-type", b"application/json")


@dataclass(slots=True)
class Reply:
    """An answer made below the framework: a JSON body, its status and any extra headers.

    Doors answered at the ASGI level (the sidecar's decision doors, the plane's writes)
    send it on the raw channel; the framework routes that share a door turn it into a
    framework response.
    """

    body: bytes
    status: int = 200
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)

    async def send(self, send: Send) -> None:
        """Answer on a raw ASGI channel (two messages, no framework objects)."""
        headers = [_JSON_HEADER, (b"content-length", b"%d" % len(self.body)), *self.headers]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})

    def response(self) -> Response:
        """The same answer as a framework response (for the FastAPI routes)."""
        return Response(self.body, status_code=self.status, media_type="application/json",
                        headers={k.decode("latin-1"): v.decode("latin-1") for k, v in self.headers})


# --------------------------------------------------------------------------- errors


class ErrorBody(BaseModel):
    """Every refusal's body, whichever door and status."""

    error: str = Field(description="Stable machine-readable code")
    message: str
    detail: dict[str, Any] | None = None


def bearer_challenge(exc: TenantGuardError | None, *, realm: str) -> str:
    """RFC 6750 3's ``WWW-Authenticate`` for a 401: ``error="invalid_token"`` (and the stable code as
    ``error_description``) when a token was presented and refused, the bare challenge when none was.
    Clients tell "send a token" from "get a fresh one" (refresh, re-exchange) by the attribute."""
    challenge = f'Bearer realm="{realm}"'
    if isinstance(exc, TokenError) and not isinstance(exc, TokenMissing):
        challenge += f', error="invalid_token", error_description="{exc.code}"'
    return challenge


def error_response(exc: TenantGuardError, *, realm: str, request_id: str | None = None) -> JSONResponse:
    """The JSON body of a typed error, with the RFC 6750 challenge on 401s."""
    headers: dict[str, str] = {}
    if exc.http_status == 401:
        headers["WWW-Authenticate"] = bearer_challenge(exc, realm=realm)
    if exc.retryable or exc.http_status == 503:
        headers.update(RETRY_AFTER)
    if request_id:
        headers["X-Request-ID"] = request_id
    return JSONResponse(exc.to_dict(), status_code=exc.http_status, headers=headers or None)


def schema_problems(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """Pydantic's validation errors as the bounded ``problems`` list every 400 carries."""
    return [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))} for e in errors[:MAX_PROBLEMS]]


def failure_response(exc: Exception, *, realm: str, method: str, path: str, request_id: str | None) -> JSONResponse:
    """What a caller sees for any exception: a typed error's own body, else a bare 500.

    One function for the framework's handlers and for doors answered below the
    framework (``authz_sidecar.http.hot``), so both render failures identically.
    """
    if isinstance(exc, TenantGuardError):
        if exc.http_status >= 500:
            log.warning("%s %s: %s", method, path, exc)
        return error_response(exc, realm=realm, request_id=request_id)
    log.error("unhandled error on %s %s", method, path, exc_info=exc)
    return JSONResponse({"error": "internal_error", "message": "internal error"}, status_code=500)


HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app serves at this request's path.

    Why not the framework's own ``Allow``: it names the methods of the first route whose
    path matches, and a path served by one route per method (``/v1/data/{path}``: GET,
    POST, PUT, PATCH, DELETE) advertised one of them. Each method is asked of the routes'
    public ``matches`` (included routers nest theirs).
    """
    scope = request.scope
    if any(isinstance(route, Mount) and isinstance(route.app, StaticFiles) and route.matches(scope)[0] is Match.FULL
           for route in request.app.router.routes):
        return ["GET", "HEAD"]  # static files (docs assets, the console's): a mount matches every method
    routes = [route for route in request.app.router.routes if not isinstance(route, Mount)]
    return [method for method in HTTP_METHODS
            if any(route.matches({**scope, "method": method})[0] is Match.FULL for route in routes)]


def http_error_headers(request: Request, exc: StarletteHTTPException) -> dict[str, str] | None:
    """The headers a framework 404/405 must keep: a 405's ``Allow`` (RFC 9110 15.5.6: "MUST
    generate"), listing every method the path serves. The handlers below dropped it."""
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        methods = allowed_methods(request)
        if methods:
            headers["Allow"] = ", ".join(methods)
    return headers or None


def install_error_handlers(app: FastAPI, *, realm: str) -> None:
    """Typed errors, schema errors, 404/405 and anything unexpected all become JSON (and the
    OpenAPI document says so: :func:`install_error_schema`)."""
    install_error_schema(app)

    @app.exception_handler(TenantGuardError)
    async def _typed(request: Request, exc: TenantGuardError) -> JSONResponse:
        return failure_response(exc, realm=realm, method=request.method, path=request.url.path,
                                request_id=request.headers.get("x-request-id"))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        body = {"error": "invalid_request", "message": "request does not match the schema",
                "detail": {"problems": schema_problems(exc.errors())}}
        return JSONResponse(body, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse({"error": code, "message": str(exc.detail)}, status_code=exc.status_code,
                            headers=http_error_headers(request, exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return failure_response(exc, realm=realm, method=request.method, path=request.url.path, request_id=None)


def install_error_schema(app: FastAPI) -> None:
    """Make the OpenAPI document say what the handlers above send.

    FastAPI documents a 422 ``HTTPValidationError`` (a list of pydantic errors) for every
    operation with parameters or a body, but a request that does not match the schema is
    answered 400 with an :class:`ErrorBody`, and the 422s the API does send
    (``idempotency_key_reused``, ``cells_mixed``...) carry an :class:`ErrorBody` too. A client
    generated from the document, or a schema checker, would otherwise reject real answers.
    The document is rewritten once, when first built."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _with_error_bodies(build())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _with_error_bodies(schema: dict[str, Any]) -> dict[str, Any]:
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    generated = [name for name in ("HTTPValidationError", "ValidationError") if name in components]
    if not generated:
        return schema
    components.setdefault("ErrorBody", ErrorBody.model_json_schema())
    ref = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            generated_422 = "HTTPValidationError" in json.dumps(responses.get("422", {}))
            if not generated_422:
                continue
            responses["422"] = {"description": "Refused: the request is well formed but cannot be done as asked",
                                "content": ref}
            responses.setdefault("400", {"description": "The request does not match the schema "
                                                        "(error invalid_request, detail.problems)", "content": ref})
    for name in generated:
        del components[name]
    return schema


# --------------------------------------------------------------------------- request guard


@functools.lru_cache(maxsize=1024)
def is_loopback(host: str | None) -> bool:
    """True for loopback addresses and for unix-socket peers (no address at all).

    Cached: the same few peer addresses ask on every request, and parsing costs ~5 µs.
    """
    if host is None:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def reject(send: Send, status: int, code: str, message: str, *, oauth: bool = False, **detail: Any) -> None:
    """Answer straight from the middleware, in the same JSON shape as the handlers.

    ``oauth``: the path is an OAuth endpoint, whose clients read RFC 6749 5.2 errors
    (``{"error": "invalid_request", "error_description"}``, never cached) instead; the
    stable tenantguard code travels beside them as ``reason``.
    """
    headers = [(b"content-type", b"application/json")]
    payload: dict[str, Any]
    if oauth:
        payload = {"error": "invalid_request", "error_description": message, "reason": code}
        headers += [(b"cache-control", b"no-store"), (b"pragma", b"no-cache")]
    else:
        payload = {"error": code, "message": message}
        if detail:
            payload["detail"] = detail
    body = json.dumps(payload).encode()
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """Pure ASGI middleware: bound bodies (per path if needed) and, optionally, loopback only.

    ``open_paths`` stay reachable from anywhere (health checks, metrics scrapes);
    refusals on ``oauth_paths`` are RFC 6749 error bodies (see :func:`reject`).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        path_limits: Mapping[str, int] | None = None,
        loopback_only: bool = False,
        open_paths: frozenset[str] = frozenset(),
        oauth_paths: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self.oauth_paths = oauth_paths
        self.max_body_bytes = max_body_bytes
        self.path_limits = dict(path_limits or {})
        self.loopback_only = loopback_only
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        oauth = scope["path"] in self.oauth_paths
        if self.loopback_only and scope["path"] not in self.open_paths:
            client = scope.get("client")
            if not is_loopback(client[0] if client else None):
                await reject(send, 403, "caller_not_local", "this service answers callers on loopback only",
                             oauth=oauth)
                return
        limit = self.path_limits.get(scope["path"], self.max_body_bytes)
        declared = content_length(scope)
        if declared is not None and declared > limit:
            await reject(send, 413, "payload_too_large", f"request body exceeds {limit} bytes", oauth=oauth,
                         limit=limit)
            return
        try:
            body = await read_body(receive, limit)
        except BodyIncomplete:
            return  # the client is gone: nothing to answer, nothing to do
        if body is None:
            await reject(send, 413, "payload_too_large", f"request body exceeds {limit} bytes", oauth=oauth,
                         limit=limit)
            return
        await self.app(scope, replay(body, receive), send)


JSON_METHODS = frozenset({"POST", "PUT", "PATCH"})


class JsonBodies:
    """Pure ASGI middleware: a body sent with POST, PUT or PATCH must be announced as JSON
    (``application/json`` or ``application/*+json``; else 415) and be bounded I-JSON
    (``tenantguard.util.jsonlimits``; else 400), checked before the framework parses it with
    plain ``json.loads``. ``raw_paths`` take other media (archive uploads, forms).

    Place it inside a :class:`RequestGuard` (which bounds the body it buffers here).
    An empty body passes: the route says what it is missing.
    """

    def __init__(self, app: ASGIApp, *, realm: str, raw_paths: frozenset[str] = frozenset(),
                 raw_prefixes: tuple[str, ...] = (), max_depth: int = MAX_DEPTH) -> None:
        self.app = app
        self.realm = realm
        self.raw_paths = raw_paths
        self.raw_prefixes = raw_prefixes  # whole subtrees that take forms (the plane's console)
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope["method"] not in JSON_METHODS or scope["path"] in self.raw_paths
                or (self.raw_prefixes and scope["path"].startswith(self.raw_prefixes))):
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(receive, 2**62) or b""  # already bounded by the guard outside
        except BodyIncomplete:
            return
        if body:
            try:
                coding = (single_header(scope, b"content-encoding") or "identity").strip().lower()
                if coding != "identity":  # never read compressed bytes as JSON text ("not UTF-8")
                    raise UnsupportedMediaType(f"content-encoding {coding[:40]} is not supported here (send none)")
                content_type = header(scope, b"content-type")
                if not is_json_media_type(content_type):
                    raise UnsupportedMediaType("send the body as application/json")
                loads(body, max_depth=self.max_depth)
            except TenantGuardError as exc:
                response = failure_response(exc, realm=self.realm, method=scope["method"], path=scope["path"],
                                            request_id=header(scope, b"x-request-id"))
                await response(scope, receive, send)
                return
        await self.app(scope, replay(body, receive), send)


class BodyIncomplete(InvalidInput):
    """The client went away before its body ended (fewer bytes than its Content-Length, no last
    chunk, or the read deadline passed): there is nobody to answer, and nothing is done."""

    code = "body_incomplete"


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole (bounded) body, or None as soon as it passes ``limit``: stop reading there.

    :class:`BodyIncomplete` when the connection ends first: a request cut short is never acted
    on as if its first bytes were all of it (a write whose JSON happened to be complete, or a
    truncated question, would otherwise be applied or answered).
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise BodyIncomplete("the client disconnected before the request body ended")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the buffered body, then waits for disconnect."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of a request header (``name`` in lower case, as ASGI delivers it)."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class DuplicateHeader(InvalidInput):
    """A header that must appear once appeared with different values (400 ``duplicate_header``)."""

    code = "duplicate_header"


def single_header(scope: Scope, name: bytes) -> str | None:
    """The one value of a request header that must not come twice (``name`` in lower case);
    :class:`DuplicateHeader` when it came with different values (identical repeats are harmless).

    Why: deciding on the first of two credentials while a proxy, a log or the service behind
    reads the last would decide for one caller and serve another. The sidecar's doors, its
    token exchange and the SDK's guard read ``Authorization`` through this one function.
    """
    found: bytes | None = None
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            if found is not None and value != found:
                raise DuplicateHeader(f"the {name.decode()} header appears with different values",
                                      header=name.decode())
            found = value
    return None if found is None else found.decode("latin-1")


def content_length(scope: Scope) -> int | None:
    headers: Any = scope.get("headers") or []
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def decoded_body(scope: Scope, body: bytes, limit: int) -> bytes:
    """``body`` with its ``Content-Encoding`` undone: none or ``identity`` as is, ``gzip`` (OPA's
    clients may send it: OPA decodes it on every endpoint) inflated to at most ``limit`` bytes.

    Why here and bounded: the request guard bounds the bytes on the wire, a gzip bomb is
    bounded only by its inflated size. Any other coding (or two) is 415 ``unsupported_media_type``
    naming it, never a body read as if it were plain (which gave "JSON text is not UTF-8").
    """
    coding = (single_header(scope, b"content-encoding") or "").strip().lower()
    if coding in ("", "identity"):
        return body
    if coding not in ("gzip", "x-gzip"):
        raise UnsupportedMediaType(f"content-encoding {coding[:40]} is not supported (send gzip or none)")
    inflater = zlib.decompressobj(wbits=31)  # gzip container only
    try:
        plain = inflater.decompress(body, limit + 1)
    except zlib.error:
        raise InvalidInput("the body is not valid gzip") from None
    if len(plain) > limit:
        raise PayloadTooLarge(f"request body exceeds {limit} bytes once decompressed")
    if not inflater.eof or inflater.unused_data:
        raise InvalidInput("the gzip body is truncated or carries trailing data")
    return plain
