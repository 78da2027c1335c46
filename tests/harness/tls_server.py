"""A real uvicorn server on loopback over TLS with the services' guarded HTTP protocol (the smallest
read deadline, 1 s), in a thread; its app answers the path and scheme it was asked, and says it
is a plane on ``/openapi.json``, so the SDK's plane client can be the client under test."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import uvicorn
from tenantguard.client.plane import PLANE_TITLE
from tenantguard.server.serving import HttpLimits, bind_tcp, http_protocol, serve_tls
from tenantguard.util.httptls import ServerTls

LIMITS = HttpLimits(read_timeout=1, max_head_bytes=4096)
SEEN: list[str] = []  # paths the app was asked, in order: what reached a route


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers the path and scheme it was asked; ``/openapi.json`` says it is a plane."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    SEEN.append(scope["path"])
    answer: dict[str, Any] = {"path": scope["path"], "scheme": scope["scheme"]}
    if scope["path"] == "/openapi.json":
        answer = {"info": {"title": PLANE_TITLE}}
    body = json.dumps(answer).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


class Served:
    def __init__(self, tls: ServerTls) -> None:
        self.sock = bind_tcp("127.0.0.1", 0)
        config = uvicorn.Config(app, http=http_protocol(LIMITS), log_level="warning", lifespan="off")
        serve_tls(config, tls.ssl_context())
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])),
                                       daemon=True)
        self.thread.start()
        while not self.server.started:
            assert self.thread.is_alive()
            threading.Event().wait(0.01)
        self.port = self.sock.getsockname()[1]

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
