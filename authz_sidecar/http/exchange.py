"""``POST /oauth2/token`` (RFC 8693 token exchange), its discovery (RFC 8414 metadata,
JWKS), ``GET /v1/keys``, ``GET /v1/propagation``.

The token door speaks OAuth, not the sidecar's usual error shape: every refusal is
``{"error", "error_description"}`` with 400 (401 ``invalid_client`` + ``WWW-Authenticate:
Basic`` for a failed client authentication, 503 ``temporarily_unavailable`` before a
bundle is active), and every answer carries ``Cache-Control: no-store`` and
``Pragma: no-cache`` (RFC 6749 5.1). Parsing, checks and minting live in
:mod:`tenantguard.exchange`; this module only reads the form and renders.

Callers are the sidecar's own service: the guard middleware admits loopback and
unix-socket peers only and bounds the body size before this code runs.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from tenantguard.errors import InvalidInput, NotFound
from tenantguard.exchange import (
    GRANT_TYPE_TOKEN_EXCHANGE,
    ISSUED_TOKEN_TYPES,
    SUBJECT_TOKEN_TYPES,
    TOKEN_TYPE_ID_TOKEN,
    ExchangeError,
    ExchangeRequest,
    InvalidClient,
    InvalidRequest,
    parse_form,
    propagation_mode,
)
from tenantguard.server.asgi import RETRY_AFTER, decoded_body

from ..runtime import Sidecar
from . import wire
from .wire import DuplicateHeader

log = logging.getLogger(__name__)

router = APIRouter(tags=["token exchange"])
FORM_TYPE = "application/x-www-form-urlencoded"
TOKEN_PATH = "/oauth2/token"
JWKS_PATH = "/.well-known/jwks.json"
METADATA_PATH = "/.well-known/oauth-authorization-server"
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def _oauth_error(exc: ExchangeError) -> JSONResponse:
    headers = dict(NO_STORE)
    if isinstance(exc, InvalidClient):
        headers["WWW-Authenticate"] = 'Basic realm="tenantguard-sidecar"'
    if exc.retryable or exc.http_status == 503:  # temporarily_unavailable: no policy active yet
        headers.update(RETRY_AFTER)
    return JSONResponse(exc.to_oauth(), status_code=exc.http_status, headers=headers)


def _form_pairs(request: Request, body: bytes, limit: int) -> list[tuple[str, str]]:
    media_type = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media_type != FORM_TYPE:
        raise InvalidRequest(f"the token request must be {FORM_TYPE}")
    try:  # a gzip body inflated within the bound, any other coding named (was: "form body must be ASCII")
        plain = decoded_body(request.scope, body, limit)
    except InvalidInput as exc:
        raise InvalidRequest(exc.message, reason=exc.code) from None
    return parse_form(plain)


@router.post(
    TOKEN_PATH,
    responses={200: {"description": "RFC 8693 2.2.1 token response"},
               400: {"description": "RFC 6749 5.2 error"}, 401: {"description": "invalid_client"}},
    openapi_extra={"parameters": [{
        "in": "header", "name": "authorization", "required": False, "schema": {"type": "string"},
        "description": "HTTP Basic client credentials (RFC 6749 2.3.1), once: two different values are "
                       "invalid_request"}]},
)  # type: ignore[untyped-decorator]
async def token(request: Request) -> JSONResponse:
    """Exchange the calling service's subject token for a token for the next service.

    The client's credentials are read once: two different Authorization headers are
    invalid_request (RFC 6749 2.3: one authentication method per request), never the first
    one while a proxy or a log reads the last."""
    sidecar: Sidecar = request.app.state.sidecar
    try:
        credentials = _client_authorization(request)
        sidecar.exchange.authenticate_client(credentials)
        pairs = _form_pairs(request, await request.body(), sidecar.config.max_body_bytes)
        _one_authentication_method(credentials, pairs)
        form = ExchangeRequest.from_form(pairs)
        result = await sidecar.exchange.exchange(form)
    except ExchangeError as exc:
        log.info("token exchange refused: %s (%s)", exc.code, exc.reason or "-")
        return _oauth_error(exc)
    except Exception:  # never a traceback to the caller; never a token either
        log.exception("token exchange failed unexpectedly")
        return JSONResponse({"error": "server_error", "error_description": "internal error"},
                            status_code=500, headers=NO_STORE)
    return JSONResponse(result.to_wire(), headers=NO_STORE)


@router.api_route(TOKEN_PATH, methods=["GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"],
                  include_in_schema=False)  # type: ignore[untyped-decorator]
async def token_wrong_method(request: Request) -> JSONResponse:
    """405 as an RFC 6749 5.2 error (``invalid_request``, never cached), with ``Allow: POST``: every
    answer of the token endpoint is one its OAuth clients read (RFC 6749 3.2: the client MUST use
    POST). The framework's 405 was the sidecar's own error shape, without ``Cache-Control``."""
    exc = InvalidRequest(f"the token endpoint takes POST, not {request.method[:16]}", reason="method_not_allowed")
    response = _oauth_error(exc)
    response.status_code = 405
    response.headers["Allow"] = "POST"
    return response


FORM_CREDENTIALS = frozenset({"client_secret", "client_assertion", "client_assertion_type"})


def _one_authentication_method(credentials: str | None, pairs: list[tuple[str, str]]) -> None:
    """RFC 6749 2.3: "The client MUST NOT use more than one authentication method in each request":
    HTTP Basic and credentials in the form together are invalid_request (was: the form's ignored)."""
    basic = (credentials or "").partition(" ")[0].lower() == "basic"
    if basic and any(name in FORM_CREDENTIALS and value for name, value in pairs):
        raise InvalidRequest("use one client authentication method: HTTP Basic or the form, not both",
                             reason="two_authentication_methods")


def _client_authorization(request: Request) -> str | None:
    try:
        return wire.authorization(request.scope)
    except DuplicateHeader:
        raise InvalidRequest("the authorization header appears with different values",
                             reason="duplicate_header") from None


@router.get("/v1/keys")  # type: ignore[untyped-decorator]
async def keys(request: Request) -> dict[str, Any]:
    """This sidecar's exchange signing key as a trust-file JWKS (each key carries ``iss``)."""
    sidecar: Sidecar = request.app.state.sidecar
    return sidecar.exchange.jwks()


@router.get(JWKS_PATH)  # type: ignore[untyped-decorator]
async def jwks(request: Request) -> dict[str, Any]:
    """The same keys as ``/v1/keys``, where OAuth clients look for them (``jwks_uri``)."""
    sidecar: Sidecar = request.app.state.sidecar
    return sidecar.exchange.jwks()


def authorization_server_metadata(sidecar: Sidecar) -> dict[str, Any]:
    """RFC 8414 metadata for this sidecar's token endpoint, saying only what it does.

    No ``authorization_endpoint`` (no grant here uses one) and hence no
    ``response_types_supported``: RFC 8414 3.2 says a member with no values is omitted.
    Client authentication is HTTP Basic when ``--exchange-client-secret-file`` is set,
    else none (the loopback connection is the authentication). The token types are
    RFC 8693's, under names of our own: no registry defines them for metadata.
    """
    base = sidecar.public_url
    auth = "client_secret_basic" if sidecar.exchange.client_secret is not None else "none"
    # id_token subject tokens are accepted only from edge mode's IdPs
    subject_types = SUBJECT_TOKEN_TYPES if sidecar.exchange.edge is not None else SUBJECT_TOKEN_TYPES - {
        TOKEN_TYPE_ID_TOKEN}
    return {
        "issuer": base,
        "token_endpoint": base + TOKEN_PATH,
        "jwks_uri": base + JWKS_PATH,
        "grant_types_supported": [GRANT_TYPE_TOKEN_EXCHANGE],
        "token_endpoint_auth_methods_supported": [auth],
        "token_exchange_subject_token_types_supported": sorted(subject_types),
        "token_exchange_issued_token_types_supported": sorted(ISSUED_TOKEN_TYPES),
    }


@router.get(METADATA_PATH)  # type: ignore[untyped-decorator]
async def metadata(request: Request) -> dict[str, Any]:
    """RFC 8414 authorization server metadata; URLs from ``--public-url`` (else the bound address)."""
    return authorization_server_metadata(request.app.state.sidecar)


@router.get(METADATA_PATH + "/{suffix:path}")  # type: ignore[untyped-decorator]
async def metadata_for_path(suffix: str, request: Request) -> dict[str, Any]:
    """The same metadata where RFC 8414 3.1 puts it for an issuer with a path (``--public-url
    https://pdp.example.com/todo`` -> ``/.well-known/oauth-authorization-server/todo``; authlib's
    discovery asks there); any other suffix names another issuer: 404."""
    sidecar: Sidecar = request.app.state.sidecar
    if not sidecar.public_path or "/" + suffix.rstrip("/") != sidecar.public_path:
        raise NotFound(f"no authorization server metadata for /{suffix[:100]} here")
    return authorization_server_metadata(sidecar)


@router.get("/v1/propagation")  # type: ignore[untyped-decorator]
async def propagation(request: Request, target: Annotated[str, Query(min_length=1, max_length=64)]) -> dict[str, str]:
    """How an outbound call to ``target`` carries the caller's context: forward, exchange or deny."""
    sidecar: Sidecar = request.app.state.sidecar
    if not target.replace("-", "").replace("_", "").isalnum():
        raise InvalidInput("target must be a service name", field="target")
    service = sidecar.config.service
    return {"mode": propagation_mode(sidecar.core.active, service, target), "source": service, "target": target}
