"""Pure ASGI middleware: body-size bound and loopback-only callers.

Body size is checked on the declared Content-Length and again while streaming, so a
chunked upload cannot slip past the bound.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

OPEN_PATHS = frozenset({"/health", "/ready", "/metrics"})


def _is_loopback(host: str | None) -> bool:
    if host is None:  # unix domain socket: the peer is on this machine
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _reject(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": code, "message": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, loopback_only: bool) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        if self.loopback_only and scope["path"] not in OPEN_PATHS and not _is_loopback(client[0] if client else None):
            await _reject(send, 403, "caller_not_local", "this sidecar answers its own service only (loopback)")
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await _reject(send, 413, "payload_too_large", f"request body exceeds {self.max_body_bytes} bytes")
            return
        body = await _read_body(receive, self.max_body_bytes)
        if body is None:
            await _reject(send, 413, "payload_too_large", f"request body exceeds {self.max_body_bytes} bytes")
            return
        await self.app(scope, _replay(body, receive), send)


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole (bounded) body, or None once it passes ``limit``: stop reading right there."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # disconnect: let the app see an empty body
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for disconnect as usual

    return replay


def _content_length(scope: Scope) -> int | None:
    headers: Any = scope.get("headers") or []
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
