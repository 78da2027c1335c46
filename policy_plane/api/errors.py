"""Error rendering: every failure is a small JSON body with a stable code; never a traceback."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from tenantguard.errors import TenantGuardError

from ..errors import Unauthenticated

log = logging.getLogger(__name__)


def error_response(exc: TenantGuardError) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="tenantguard-plane"'} if isinstance(exc, Unauthenticated) else None
    if exc.retryable:
        headers = (headers or {}) | {"Retry-After": "1"}
    return JSONResponse(exc.to_dict(), status_code=exc.http_status, headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(TenantGuardError)
    async def _typed(request: Request, exc: TenantGuardError) -> JSONResponse:
        if exc.http_status >= 500:
            log.warning("%s %s: %s", request.method, request.url.path, exc)
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))} for e in exc.errors()[:20]
        ]
        body = {"error": "invalid_request", "message": "request does not match the schema",
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
