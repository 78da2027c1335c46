"""``POST /oauth2/token`` (RFC 8693 token exchange), ``GET /v1/keys``, ``GET /v1/propagation``.

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

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse
from tenantguard.errors import InvalidInput
from tenantguard.exchange import ExchangeError, ExchangeRequest, InvalidClient, InvalidRequest, parse_form

from ..runtime import Sidecar

log = logging.getLogger(__name__)

router = APIRouter(tags=["token exchange"])
FORM_TYPE = "application/x-www-form-urlencoded"
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def _oauth_error(exc: ExchangeError) -> JSONResponse:
    headers = dict(NO_STORE)
    if isinstance(exc, InvalidClient):
        headers["WWW-Authenticate"] = 'Basic realm="tenantguard-sidecar"'
    return JSONResponse(exc.to_oauth(), status_code=exc.http_status, headers=headers)


def _form_pairs(content_type: str | None, body: bytes) -> list[tuple[str, str]]:
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type != FORM_TYPE:
        raise InvalidRequest(f"the token request must be {FORM_TYPE}")
    return parse_form(body)


@router.post(
    "/oauth2/token",
    responses={200: {"description": "RFC 8693 2.2.1 token response"},
               400: {"description": "RFC 6749 5.2 error"}, 401: {"description": "invalid_client"}},
)  # type: ignore[untyped-decorator]
async def token(request: Request, authorization: Annotated[str | None, Header()] = None) -> JSONResponse:
    """Exchange the calling service's subject token for a token for the next service."""
    sidecar: Sidecar = request.app.state.sidecar
    try:
        sidecar.exchange.authenticate_client(authorization)
        form = ExchangeRequest.from_form(_form_pairs(request.headers.get("content-type"), await request.body()))
        result = await sidecar.exchange.exchange(form)
    except ExchangeError as exc:
        log.info("token exchange refused: %s (%s)", exc.code, exc.reason or "-")
        return _oauth_error(exc)
    except Exception:  # never a traceback to the caller; never a token either
        log.exception("token exchange failed unexpectedly")
        return JSONResponse({"error": "server_error", "error_description": "internal error"},
                            status_code=500, headers=NO_STORE)
    return JSONResponse(result.to_wire(), headers=NO_STORE)


@router.get("/v1/keys")  # type: ignore[untyped-decorator]
async def keys(request: Request) -> dict[str, Any]:
    """This sidecar's exchange signing key as a trust-file JWKS (each key carries ``iss``)."""
    sidecar: Sidecar = request.app.state.sidecar
    return sidecar.exchange.jwks()


@router.get("/v1/propagation")  # type: ignore[untyped-decorator]
async def propagation(request: Request, target: Annotated[str, Query(min_length=1, max_length=64)]) -> dict[str, str]:
    """How an outbound call to ``target`` carries the caller's context: forward, exchange or deny."""
    sidecar: Sidecar = request.app.state.sidecar
    if not target.replace("-", "").replace("_", "").isalnum():
        raise InvalidInput("target must be a service name", field="target")
    return {"mode": sidecar.propagation_mode(target), "source": sidecar.config.service, "target": target}
