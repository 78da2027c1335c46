"""Pure ASGI middleware bounding request bodies: declared Content-Length first, then while streaming.

Bundle uploads get their own (larger) bound; every other body the general one.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

BUNDLE_UPLOAD_PATH = "/v1/bundles"


async def _reject(send: Send, limit: int) -> None:
    body = json.dumps({"error": "payload_too_large", "message": f"request body exceeds {limit} bytes",
                       "detail": {"limit": limit}}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, max_bundle_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_bundle_bytes = max_bundle_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bundle_bytes if scope["path"] == BUNDLE_UPLOAD_PATH else self.max_body_bytes
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _reject(send, limit)
            return
        body = await _read_body(receive, limit)
        if body is None:
            await _reject(send, limit)
            return
        await self.app(scope, _replay(body, receive), send)


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
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
        return await receive()

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
