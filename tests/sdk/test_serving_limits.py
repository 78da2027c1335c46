"""The services' HTTP protocol bounds what a request may cost (``HttpLimits``) without cutting
what it must not: a slow route, a request queued behind it, a response being sent. A real
uvicorn server over real sockets, with the smallest read deadline (1 s)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from tenantguard.errors import ConfigError
from tenantguard.server.serving import HttpLimits, bind_tcp, http_protocol

SLOW = 2.5  # seconds the /slow route takes: longer than the read deadline below
LIMITS = HttpLimits(read_timeout=1, max_head_bytes=4096)
SLOW_STARTED = threading.Event()  # set once /slow has read its request whole


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """``/slow`` answers after SLOW seconds (a route that takes its time); anything else answers
    its headers as the route sees them once the body is read."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    if scope["path"] == "/slow":
        SLOW_STARTED.set()
        await asyncio.sleep(SLOW)
    body = json.dumps([[k.decode(), v.decode()] for k, v in scope["headers"]]).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def address() -> Iterator[tuple[str, int]]:
    sock = bind_tcp("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, http=http_protocol(LIMITS), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        threading.Event().wait(0.01)
    yield sock.getsockname()[:2]
    server.should_exit = True
    thread.join(10)


def exchange(address: tuple[str, int], *parts: bytes, after: threading.Event | None = None) -> bytes:
    """Send ``parts`` (all but the first only once ``after`` is set), read the answer to the end."""
    with socket.create_connection(address, timeout=30) as conn:
        conn.sendall(parts[0])
        if after is not None:
            assert after.wait(30)
        for part in parts[1:]:
            conn.sendall(part)
        out = b""
        while chunk := conn.recv(1 << 16):
            out += chunk
    return out


def test_a_slow_route_is_not_cut_by_the_read_deadline(address: tuple[str, int]) -> None:
    """The deadline is for reading the request; bytes the client sends while its answer is being
    made (a stray CRLF) must not start a clock that closes the connection under the route."""
    SLOW_STARTED.clear()
    answer = exchange(address, b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"\r\n",
                      after=SLOW_STARTED)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


def test_a_request_queued_behind_a_slow_route_is_answered(address: tuple[str, int]) -> None:
    """Pipelined: the second request was read whole, then waits for its turn past the deadline."""
    body = b'{"a": 1}'
    second = b"POST /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    answer = exchange(address, b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n" + second)
    assert answer.count(b"HTTP/1.1 200") == 2, answer[:400]


def test_trailer_fields_never_reach_the_route(address: tuple[str, int]) -> None:
    request = (b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
               b"2\r\n{}\r\n0\r\nAuthorization: Bearer sneaked\r\nX-Tenant-Id: globex\r\n\r\n")
    answer = exchange(address, request)
    seen = {name for name, _ in json.loads(answer.partition(b"\r\n\r\n")[2])}
    assert answer.startswith(b"HTTP/1.1 200") and seen.isdisjoint({"authorization", "x-tenant-id"}), answer


@pytest.mark.parametrize(("timeout", "head"), [(0.5, 4096), (3601, 4096), (30, 1024), (30, 2 * 1024 * 1024)])
def test_limits_out_of_range_are_a_config_error(timeout: float, head: int) -> None:
    with pytest.raises(ConfigError):
        HttpLimits(read_timeout=timeout, max_head_bytes=head)
