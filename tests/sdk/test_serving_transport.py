"""The services' HTTP protocol sends a response's head and body in one write; nothing a client
sees changes: pipelined requests, ``Connection: close``, streamed bodies, HEAD, and clients
that leave before their answer, on a real uvicorn server over real sockets."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from tenantguard.server.serving import CoalescingTransport, bind_tcp, http_protocol

CHUNKS = [b"x" * 70_000, b"y" * 10, b"z" * 200_000]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """``/stream``: a body in three parts with awaits between; anything else: its path back."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    if scope["path"] == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for chunk in CHUNKS:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": b""})
        return
    body = scope["path"].encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[uvicorn.Server, tuple[str, int]]]:
    sock = bind_tcp("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, http=http_protocol(), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        threading.Event().wait(0.01)
    yield server, sock.getsockname()[:2]
    server.should_exit = True
    thread.join(10)
    assert not thread.is_alive()


@pytest.fixture
def server(served: tuple[uvicorn.Server, tuple[str, int]]) -> uvicorn.Server:
    return served[0]


@pytest.fixture
def address(served: tuple[uvicorn.Server, tuple[str, int]]) -> tuple[str, int]:
    return served[1]


def read_all(conn: socket.socket) -> bytes:
    out = b""
    while chunk := conn.recv(1 << 16):
        out += chunk
    return out


def dechunk(body: bytes) -> bytes:
    out = b""
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return out
        out, body = out + body[:size], body[size + 2:]


def test_every_connection_writes_through_the_coalescing_transport(address: tuple[str, int],
                                                                   server: uvicorn.Server) -> None:
    with socket.create_connection(address, timeout=10) as conn:
        conn.sendall(b"GET /open HTTP/1.1\r\nHost: x\r\n\r\n")
        assert conn.recv(1 << 16).endswith(b"/open")  # answered, and kept alive
        transports = [protocol.transport for protocol in list(server.server_state.connections)]
    assert transports and all(isinstance(t, CoalescingTransport) for t in transports)


def test_pipelined_requests_get_whole_answers_in_order(address: tuple[str, int]) -> None:
    requests = b"".join(b"GET /r%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(20))
    with socket.create_connection(address, timeout=10) as conn:
        conn.sendall(requests + b"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = read_all(conn)  # the server closes after the last: everything held was sent first
    bodies = [part.split(b"\r\n\r\n", 1)[1] for part in answer.split(b"HTTP/1.1 200 OK")[1:]]
    assert answer.count(b"HTTP/1.1 200 OK") == 21
    assert bodies == [b"/r%d" % i for i in range(20)] + [b"/last"]


def test_a_streamed_body_arrives_whole(address: tuple[str, int]) -> None:
    with socket.create_connection(address, timeout=10) as conn:
        conn.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head, _, body = read_all(conn).partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert dechunk(body) == b"".join(CHUNKS)


def test_head_has_no_body_and_the_connection_stays_usable(address: tuple[str, int]) -> None:
    with socket.create_connection(address, timeout=10) as conn:
        conn.sendall(b"HEAD /h HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = read_all(conn)
    assert answer.count(b"HTTP/1.1 200 OK") == 2 and answer.endswith(b"\r\n\r\n/after")


def test_clients_that_leave_before_their_answer_do_not_hurt_the_next(address: tuple[str, int]) -> None:
    for _ in range(50):
        conn = socket.create_connection(address, timeout=10)
        conn.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
        conn.close()
    with socket.create_connection(address, timeout=10) as conn:
        conn.sendall(b"GET /still-here HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_all(conn).endswith(b"/still-here")


def test_held_writes_leave_on_close_and_are_dropped_on_abort() -> None:
    async def scenario() -> tuple[bytes, bytes]:
        loop = asyncio.get_running_loop()
        results = []
        for ending in ("close", "abort"):
            ours, theirs = socket.socketpair()
            transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
            wrapped = CoalescingTransport(transport, loop)  # type: ignore[arg-type]
            wrapped.write(b"head ")
            wrapped.writelines([b"and ", bytearray(b"body")])
            assert wrapped.get_write_buffer_size() == len(b"head and body")
            getattr(wrapped, ending)()
            await asyncio.sleep(0.05)
            theirs.setblocking(False)
            try:
                results.append(theirs.recv(100))
            except (BlockingIOError, ConnectionResetError):
                results.append(b"")
            theirs.close()
        return results[0], results[1]

    closed, aborted = asyncio.run(scenario())
    assert closed == b"head and body" and aborted == b""


def test_writes_of_one_step_leave_together_and_later_ones_after() -> None:
    async def scenario() -> bytes:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
        wrapped = CoalescingTransport(transport, loop)  # type: ignore[arg-type]
        wrapped.write(b"1")
        wrapped.write(b"2")
        theirs.setblocking(False)
        with pytest.raises(BlockingIOError):
            theirs.recv(10)  # held within the step
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        first = theirs.recv(10)
        wrapped.write(b"3")
        await asyncio.sleep(0.01)
        wrapped.close()
        await asyncio.sleep(0.01)
        rest = theirs.recv(10)
        theirs.close()
        return first + b"|" + rest

    assert asyncio.run(scenario()) == b"12|3"


def test_a_body_streamed_without_yielding_meets_flow_control() -> None:
    """64 KiB held go at once: the real transport's buffer fills and pauses the protocol, as
    uvicorn needs to stop a sender that never yields (else the whole body would wait here)."""

    class Recording(asyncio.Protocol):
        paused = 0

        def pause_writing(self) -> None:
            self.paused += 1

    async def scenario() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        transport, protocol = await loop.connect_accepted_socket(Recording, ours)
        wrapped = CoalescingTransport(transport, loop)  # type: ignore[arg-type]
        for _ in range(400):  # 400 x 16 KiB in one step, nobody reading: far past any socket buffer
            wrapped.write(b"x" * 16384)
        held = wrapped.get_write_buffer_size() - transport.get_write_buffer_size()
        wrapped.abort()
        theirs.close()
        return protocol.paused, held

    paused, held = asyncio.run(scenario())
    assert paused >= 1 and held < CoalescingTransport.HOLD_BYTES
