"""The operations console: server-rendered pages served by the plane under ``/console/``.

Pages for the fleet, tenants (relationships, kill switch), bundles and rollouts, the
decision log with explanations, revocations and the audit ring; signed in with the admin
token (changes) or the operator token (read-only). Assets ship in the package: no CDN,
no external font, no build step. :func:`install_console` adds it to the plane's app.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .sessions import SessionStore
from .views import PREFIX, SignInRequired, router

STATIC_PATH: Final = f"{PREFIX}/static"
CSP: Final = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
              "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
_HEADERS: Final = [(b"content-security-policy", CSP.encode()), (b"x-frame-options", b"DENY"),
                   (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"),
                   (b"cross-origin-opener-policy", b"same-origin")]


class ConsoleHeaders:
    """Pure ASGI middleware: security headers on every console response (errors and redirects
    too), and ``Cache-Control: no-store`` on everything but the static assets."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path != PREFIX and not path.startswith(PREFIX + "/"):
            await self.app(scope, receive, send)
            return
        static = path.startswith(STATIC_PATH + "/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"cache-control" or static]
                headers += _HEADERS
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


async def _sign_in(request: Request, _exc: Exception) -> Response:
    if request.method in ("GET", "HEAD"):
        return RedirectResponse(f"{PREFIX}/login", status_code=303)
    return HTMLResponse("<!doctype html><title>Sign in</title><p>Sign in first.</p>", status_code=401)


def install_console(app: FastAPI, *, sessions: SessionStore | None = None) -> None:
    """Serve the console from ``app`` (the plane's; ``app.state.plane`` is read per request)."""
    app.state.console_sessions = sessions or SessionStore()
    app.include_router(router)
    app.mount(STATIC_PATH, StaticFiles(directory=str(files("policy_plane.console") / "static")),
              name="console-static")
    app.add_exception_handler(SignInRequired, _sign_in)

    @app.get(PREFIX, include_in_schema=False)
    async def console_root() -> RedirectResponse:
        return RedirectResponse(f"{PREFIX}/", status_code=308)

    app.add_middleware(ConsoleHeaders)
