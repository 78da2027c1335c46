"""Error rendering: every failure becomes a small JSON body with a stable code.

Callers never see a traceback. Token errors carry ``WWW-Authenticate: Bearer`` (RFC 6750).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from tenantguard.errors import TenantGuardError, TokenError, TokenMissing

log = logging.getLogger(__name__)


def error_response(exc: TenantGuardError, request_id: str | None = None) -> JSONResponse:
    headers: dict[str, str] = {}
    if isinstance(exc, TokenMissing):
        headers["WWW-Authenticate"] = 'Bearer realm="tenantguard"'
    elif isinstance(exc, TokenError):
        headers["WWW-Authenticate"] = (
            f'Bearer realm="tenantguard", error="invalid_token", error_description="{exc.code}"'
        )
    if request_id:
        headers["X-Request-ID"] = request_id
    return JSONResponse(exc.to_dict(), status_code=exc.http_status, headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(TenantGuardError)
    async def _typed(request: Request, exc: TenantGuardError) -> JSONResponse:
        return error_response(exc, request.headers.get("x-request-id"))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))} for e in exc.errors()[:20]
        ]
        body = {"error": "invalid_request", "message": "request body does not match the schema",
                "detail": {"problems": problems}}
        return JSONResponse(body, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse({"error": code, "message": str(exc.detail)}, status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"error": "internal_error", "message": "internal error"}, status_code=500)
