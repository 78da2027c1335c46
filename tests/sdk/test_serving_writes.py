"""A client that never reads its answers cannot hold a connection, its task and the buffered
answers forever (``HttpLimits.write_timeout``), and a client that reads slowly but steadily is
never cut. A real uvicorn server over real sockets on both event loops the services run
(asyncio, uvloop), with the smallest write timeout (1 s).

Both ends get small socket buffers so that a few hundred KiB fill them: on loopback the
kernel would otherwise absorb megabytes before the server's own buffer fills.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvicorn
from tenantguard.server.serving import HttpLimits, WireCounts, bind_tcp, event_loop_runner, http_protocol

from tests.harness.rawhttp import read_until_cut

BIG = 1024 * 1024  # /big answers this many bytes: far above every buffer between the two ends
MID = 48 * 1024  # /mid: above the kernel buffers, below asyncio's 64 KiB high-water mark
LIMITS = HttpLimits(write_timeout=1)
WAIT = 30.0  # a bound on every wait below, far above the 1 s timeout (never a timing assertion)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """``/big`` and ``/mid``: that many bytes (a large listing, an export); ``/stream``: BIG bytes
    in 64 KiB parts (a streamed export)."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    size = MID if scope["path"] == "/mid" else BIG
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/octet-stream"), (b"content-length", b"%d" % size)]})
    if scope["path"] == "/stream":
        for _ in range(size // 65536):
            await send({"type": "http.response.body", "body": b"s" * 65536, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.body", "body": b"b" * size})


class Served:
    def __init__(self, server: uvicorn.Server, address: tuple[str, int], counts: WireCounts) -> None:
        self.server, self.address, self.counts = server, address, counts

    def connect(self, rcvbuf: int) -> socket.socket:
        conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connecting: the window follows it
        conn.settimeout(WAIT)
        conn.connect(self.address)
        return conn

    def until(self, condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + WAIT
        while not condition():
            assert time.monotonic() < deadline, "the server never got there"
            threading.Event().wait(0.02)


@pytest.fixture(scope="module", params=["asyncio", "uvloop"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    runner = asyncio.run if request.param == "asyncio" else event_loop_runner()
    if request.param == "uvloop" and runner is asyncio.run:
        pytest.skip("uvloop is not installed")
    sock = bind_tcp("127.0.0.1", 0)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)  # accepted sockets inherit it
    counts = WireCounts()
    server = uvicorn.Server(uvicorn.Config(app, http=http_protocol(LIMITS, counts), log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=lambda: runner(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        threading.Event().wait(0.01)
    yield Served(server, sock.getsockname()[:2], counts)
    server.should_exit = True
    thread.join(10)



@pytest.mark.parametrize("path", ["/big", "/stream"])
def test_a_client_that_never_reads_is_cut(served: Served, path: str) -> None:
    """Pipelined requests for large answers, never read: before, the connection, its task and the
    buffered answers stayed until the client left (only --max-connections bounded how many)."""
    before = served.counts.write_timeouts
    conn = served.connect(rcvbuf=4096)
    with conn:
        conn.sendall(b"".join(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode() for _ in range(20)))
        served.until(lambda: served.counts.write_timeouts > before)
        served.until(lambda: not served.server.server_state.connections)
        assert read_until_cut(conn) < 20 * BIG
    assert served.counts.write_timeouts == before + 1


def test_a_closed_connection_with_unsent_bytes_is_cut(served: Served) -> None:
    """An answer below the high-water mark never pauses the writer; with Connection: close it sat in
    the closed transport, which waits for the client to read it: for ever, if it never does."""
    before = served.counts.write_timeouts
    conn = served.connect(rcvbuf=4096)
    with conn:
        conn.sendall(b"GET /mid HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        served.until(lambda: served.counts.write_timeouts > before)
        served.until(lambda: not served.server.server_state.connections)
        assert read_until_cut(conn) < MID
    assert served.counts.write_timeouts == before + 1


@pytest.mark.parametrize("path", ["/big", "/stream"])
def test_a_slow_reader_that_keeps_reading_gets_its_whole_answer(served: Served, path: str) -> None:
    """Reading 32 KiB every 50 ms takes well over the 1 s timeout for BIG bytes, with the server's
    buffer full most of that time: each drain starts the clock again, so nothing is cut."""
    before = served.counts.write_timeouts
    conn = served.connect(rcvbuf=32768)
    got = b""
    with conn:
        conn.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
        while chunk := conn.recv(32768):
            got += chunk
            threading.Event().wait(0.05)  # the slow reader under test, not a wait for the server
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and len(body) == BIG, (head, len(body))
    assert served.counts.write_timeouts == before
