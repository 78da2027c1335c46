"""The decision doors' hot path: answered at the ASGI level, beneath the framework.

Why: on this stack FastAPI's routing, dependency solving, exception and telemetry
layers cost ~75 µs per request, more than a decision (~45 µs). The doors every
request of the protected service goes through (native check, AuthZEN, OPA Data API
POST) are plain functions (``wire.Door``), so this front calls them directly and hands
everything else (operations, token exchange, GETs, unknown paths) to the FastAPI app.
The FastAPI routes call the same functions, so the OpenAPI document describes exactly
what this front serves. Failures render through the same ``failure_response`` as the
framework's handlers. The request guard (loopback, body bounds) sits in front of this.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from starlette.types import ASGIApp, Receive, Scope, Send
from tenantguard.errors import PayloadTooLarge
from tenantguard.server.asgi import BodyIncomplete, failure_response, header, read_body

from ..runtime import Sidecar
from .wire import Door


class HotDoors:
    """Pure ASGI front: ``POST`` to an exact path in ``doors`` (or under a prefix in
    ``prefixed``), or any method where a ``routed`` predicate holds (the Envoy HTTP door,
    which matches on the raw target), is answered here; anything else goes to ``app``."""

    def __init__(self, app: ASGIApp, sidecar: Sidecar, doors: Mapping[str, Door],
                 prefixed: Mapping[str, Door] | None = None, *, realm: str,
                 routed: Sequence[tuple[Callable[[Scope], bool], Door]] = ()) -> None:
        self.app = app
        self.sidecar = sidecar
        self.doors = dict(doors)
        self.prefixed = tuple((prefix, door) for prefix, door in (prefixed or {}).items())
        self.routed = tuple(routed)
        self.realm = realm

    def door_for(self, scope: Scope) -> Door | None:
        if scope["type"] != "http":
            return None
        for matches, routed in self.routed:
            if matches(scope):
                return routed
        if scope["method"] != "POST":
            return None
        path = scope["path"]
        door = self.doors.get(path)
        if door is None:
            for prefix, candidate in self.prefixed:
                if path.startswith(prefix):
                    return candidate
        return door

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        door = self.door_for(scope)
        if door is None:
            await self.app(scope, receive, send)
            return
        try:
            # The request guard in front already bounded it; bounded again in case it is not there.
            body = await read_body(receive, self.sidecar.config.max_body_bytes)
            if body is None:
                raise PayloadTooLarge(f"request body exceeds {self.sidecar.config.max_body_bytes} bytes")
            reply = await door(self.sidecar, scope, body)
        except BodyIncomplete:
            return  # the client is gone before its body ended: nobody to answer, nothing decided
        except Exception as exc:  # typed errors as the API documents them; anything else a bare 500
            response = failure_response(exc, realm=self.realm, method=scope["method"], path=scope["path"],
                                        request_id=header(scope, b"x-request-id"))
            await response(scope, receive, send)
            return
        await reply.send(send)
