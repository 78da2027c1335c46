"""The write doors' hot path: answered at the ASGI level, beneath the framework.

Why: a single-tuple write costs the plane's CPU about as much in FastAPI's routing,
dependency solving, validation and response layers as in everything else it does
(BENCHMARKS.md, "Policy plane writes"). The writes (``POST /v1/relations``,
``POST /v1/revocations``) are therefore answered by plain functions, the doors, which
share with the documented FastAPI routes everything after parsing (validation of the
tuples, the commit, audit, metrics, the headers of the answer), as the sidecar's
decision doors do (``authz_sidecar.http.hot``).

A door answers only what it can answer exactly as the route would: a JSON body of the
documented shape, sent with the admin token this replica has verified before. Anything
else (no or another credential, a first use of the token, a body that is not plain JSON
of that shape) goes to the FastAPI app untouched, which refuses it in its own words: the
errors a caller can get are the route's, by construction, and
``tests/plane/test_hot_writes.py`` sends a corpus of good and bad requests both ways
and compares the answers byte for byte. Once a door has started a write, it answers
itself; failures render through the same ``failure_response`` as the framework's
handlers. The request guard (body bounds) sits in front of this; ``--no-fast-writes``
turns the doors off (every request through the framework). ``/v1/status`` counts the
requests the doors answered and those they handed over (``fast_writes``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send
from tenantguard.errors import PayloadTooLarge, TenantGuardError
from tenantguard.server.asgi import (
    BodyIncomplete,
    DuplicateHeader,
    Reply,
    failure_response,
    header,
    read_body,
    replay,
    single_header,
)
from tenantguard.util.jsonlimits import is_json_media_type, loads

from ..runtime import Plane
from .auth import Principal, known_admin


class ToFramework(Exception):
    """Raised by a door before it changed anything: the FastAPI route answers this request."""


Door = Callable[[Plane, Scope, bytes], Awaitable[Reply]]
"""A write door: the replica, the request's ASGI scope and its (bounded) body."""


def plain_json(scope: Scope, body: bytes) -> Any:
    """The body's JSON document when it is announced as JSON and is bounded I-JSON (what the
    framework's ``JsonBodies`` admits); else :class:`ToFramework`, which refuses it."""
    if not body or not is_json_media_type(header(scope, b"content-type")):
        raise ToFramework
    try:  # two different codings: JsonBodies refuses them (duplicate_header), never reads the first alone
        coding = single_header(scope, b"content-encoding")
    except DuplicateHeader:
        raise ToFramework from None
    if (coding or "identity").strip().lower() != "identity":
        raise ToFramework  # JsonBodies refuses any coding: never read the body as if it had none
    try:
        return loads(body)
    except TenantGuardError:
        raise ToFramework from None


def admin_of(plane: Plane, scope: Scope) -> Principal:
    """The admin, from a token this replica verified before; else :class:`ToFramework`
    (``require_admin`` checks it, refuses it, counts the failure)."""
    credentials = [value for name, value in scope["headers"] if name == b"authorization"]
    who = known_admin(plane, credentials[0].decode("latin-1")) if len(credentials) == 1 else None
    if who is None:  # several Authorization headers included: ``bearer`` refuses them
        raise ToFramework
    return who


class HotWrites:
    """Pure ASGI front: ``POST`` to a path in ``doors`` is answered by its door unless the door
    hands it over; anything else goes to ``app`` (the FastAPI app)."""

    def __init__(self, app: ASGIApp, plane: Plane, doors: Mapping[str, Door], *, realm: str) -> None:
        self.app = app
        self.plane = plane
        self.doors = dict(doors)
        self.realm = realm

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        door = self.doors.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if door is None:
            await self.app(scope, receive, send)
            return
        limit = self.plane.config.max_body_bytes
        try:
            # The request guard in front already bounded it; bounded again in case it is not there.
            body = await read_body(receive, limit)
            if body is None:
                raise PayloadTooLarge(f"request body exceeds {limit} bytes", limit=limit)
            reply = await door(self.plane, scope, body)
        except BodyIncomplete:
            return  # the client is gone before its body ended: nothing is written
        except ToFramework:
            self.plane.write_doors["to_framework"] += 1
            await self.app(scope, replay(body or b"", receive), send)
            return
        except Exception as exc:  # typed errors as the API documents them; anything else a bare 500
            self.plane.write_doors["answered"] += 1
            response = failure_response(exc, realm=self.realm, method=scope["method"], path=scope["path"],
                                        request_id=header(scope, b"x-request-id"))
            await response(scope, receive, send)
            return
        self.plane.write_doors["answered"] += 1
        await reply.send(send)
