"""What the demo services share: serving on a free port, and the trace of a verified token."""

from __future__ import annotations

import json
import socket
from typing import Any

import jwt
import uvicorn
from fastapi import FastAPI

from tenantguard.context import RequestContext


class _AnnouncingServer(uvicorn.Server):
    """uvicorn, plus the ``listening`` line once startup (lifespan included) has succeeded."""

    address = ""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if not self.should_exit:  # a failed startup has set should_exit and logged why
            print(json.dumps({"event": "listening", "http": self.address}), flush=True)


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> None:
    """Bind first (port 0 = a free one, no race), then serve until SIGTERM/SIGINT."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_host, bound_port = sock.getsockname()[:2]
    server = _AnnouncingServer(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    server.address = f"{bound_host}:{bound_port}"
    server.run(sockets=[sock])


def token_trace(token: str) -> dict[str, Any]:
    """The claims worth narrating, read from a token this hop's sidecar has just accepted or minted."""
    claims = jwt.decode(token, options={"verify_signature": False})
    return {"iss": claims.get("iss"), "sub": claims.get("sub"), "tenant_id": claims.get("tenant_id"),
            "aud": claims.get("aud"), "act": claims.get("act"), "scope": claims.get("scope"),
            "lifetime": int(claims.get("exp", 0)) - int(claims.get("iat", 0))}


def context_trace(ctx: RequestContext) -> dict[str, Any]:
    return {**token_trace(ctx.token), "actors": ctx.actor_chain}


def bearer(header: str | None) -> str | None:
    scheme, _, value = (header or "").partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None
