"""The partition proxy (tests/harness/netproxy.py) does what each mode says, against a real echo server.

The partition tests trust these modes to mean what a network fault means to the two ends (a
blackhole is silent: no FIN, no RST, nothing reaches the server; a one-way fault lets the other
way through), so each is shown here on plain sockets before any NATS client depends on it.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from tests.harness.netproxy import NetProxy, Network
from tests.harness.waiting import eventually

pytestmark = [pytest.mark.timeout(60)]

QUIET = 0.5  # seconds a socket is listened to before "nothing came" is believed


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: EchoServer = self.server  # type: ignore[assignment]
        with server.lock:
            server.connections += 1
        while data := self.request.recv(65536):
            with server.lock:
                server.received += data
            self.request.sendall(data)


class EchoServer(socketserver.ThreadingTCPServer):
    """Echoes every byte back; counts the connections it saw and keeps what it received."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Echo)
        self.lock = threading.Lock()
        self.connections = 0
        self.received = b""


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def proxy(echo: EchoServer) -> Iterator[NetProxy]:
    host, port = echo.server_address[:2]
    with Network() as net:
        yield net.proxy(str(host), int(port))


def _connect(proxy: NetProxy) -> socket.socket:
    sock = socket.create_connection((proxy.host, proxy.port), timeout=5)
    sock.settimeout(5)
    return sock


def _echoes(sock: socket.socket, payload: bytes) -> bool:
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(65536)
        if not chunk:
            return False
        got += chunk
    return got == payload


def _silent(sock: socket.socket) -> bool:
    """Nothing arrives for QUIET seconds and the connection is not closed (no FIN, no RST)."""
    sock.settimeout(QUIET)
    try:
        sock.recv(1)  # a byte, or b"" for a close: either way not silent
        return False
    except TimeoutError:
        return True
    finally:
        sock.settimeout(5)


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def test_pass_forwards_both_ways(proxy: NetProxy, echo: EchoServer) -> None:
    with _connect(proxy) as sock:
        assert _echoes(sock, b"hello" * 1000)
    assert echo.connections == 1
    assert proxy.counters.forwarded == {"up": 5000, "down": 5000}


def test_drop_closes_connections_until_healed(proxy: NetProxy) -> None:
    sock = _connect(proxy)
    assert _echoes(sock, b"before")
    proxy.drop()
    assert _closed(sock), "an existing connection is closed by a drop"
    sock.close()
    with _connect(proxy) as fresh:  # accepted, then closed at once
        assert _closed(fresh)
    proxy.heal()
    with _connect(proxy) as healed:
        assert _echoes(healed, b"after")


def test_blackhole_swallows_without_closing(proxy: NetProxy, echo: EchoServer) -> None:
    old = _connect(proxy)
    assert _echoes(old, b"before")
    proxy.blackhole()
    old.sendall(b"lost")
    assert _silent(old), "a blackholed connection neither answers nor closes"
    with _connect(proxy) as new:  # the connect succeeds: the proxy's socket answers the SYN
        new.sendall(b"into the void")
        assert _silent(new)
    assert echo.connections == 1, "nothing reached the server while blackholed"
    assert echo.received == b"before"
    assert proxy.counters.swallowed["up"] >= len(b"lost")
    proxy.heal()
    assert _closed(old), "a connection that lost bytes is closed at the heal"
    old.close()
    with _connect(proxy) as healed:
        assert _echoes(healed, b"after")


def test_a_connection_opened_while_blackholed_without_bytes_lost_carries_on_after_heal(proxy: NetProxy,
                                                                                      echo: EchoServer) -> None:
    proxy.blackhole()
    with _connect(proxy) as sock:  # the client waits, as a NATS client waits for the server's INFO
        time.sleep(0.2)
        assert echo.connections == 0
        proxy.heal()
        assert _echoes(sock, b"late but whole")


def test_one_way_blackhole_down_the_server_hears_the_client_hears_nothing(proxy: NetProxy,
                                                                          echo: EchoServer) -> None:
    with _connect(proxy) as sock:
        assert _echoes(sock, b"a")
        proxy.blackhole("down")
        sock.sendall(b"heard")
        eventually(lambda: echo.received == b"aheard", "the server got the bytes", timeout=5)
        assert _silent(sock), "the echo is swallowed on its way back"
    assert proxy.counters.swallowed == {"up": 0, "down": len(b"heard")}


def test_one_way_blackhole_up_nothing_reaches_the_server(proxy: NetProxy, echo: EchoServer) -> None:
    with _connect(proxy) as sock:
        assert _echoes(sock, b"a")
        proxy.blackhole("up")
        sock.sendall(b"unheard")
        assert _silent(sock)
    assert echo.received == b"a"
    assert proxy.counters.swallowed == {"up": len(b"unheard"), "down": 0}


@pytest.mark.parametrize(("direction", "legs"), [("both", 2), ("up", 1), ("down", 1)])
def test_delay_holds_bytes_in_order(proxy: NetProxy, direction: str, legs: int) -> None:
    delay = 0.3
    with _connect(proxy) as sock:
        assert _echoes(sock, b"warm")
        proxy.delay(delay, direction)
        started = time.monotonic()
        payload = b"".join(b"%06d" % i for i in range(2000))  # order shows in the bytes
        assert _echoes(sock, payload)
        took = time.monotonic() - started
        proxy.heal()
        assert _echoes(sock, b"healed")
    assert took >= legs * delay * 0.95, took  # a lower bound only: a loaded host is slower, never faster
    print(f"\ndelay {delay} s {direction}: round trip {took:.2f} s")
