"""How the services serve HTTP: listening sockets bound before serving, the event loop, and
uvicorn's protocol with two changes (JSON 400s, one send per response).

Binding first lets port 0 work (the real port is announced afterwards) and lets one
place get the socket options right for every service.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import socket
from typing import Any

from .errors import ConfigError, InvalidInput


def bind_tcp(host: str, port: int, *, flag: str = "port") -> socket.socket:
    """A non-blocking listening TCP socket on ``host:port`` (0 = any free port).

    A port already taken (or a host that is not this machine's) is a :class:`ConfigError` that
    names the address and what to do (``flag``: the option that chose the port), so the CLI prints
    one line instead of a traceback.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose
    # proto says TCP, and without it Nagle + delayed ACK add ~40 ms to every response.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise cannot_listen(f"{host}:{port}", exc, flag=flag) from None
    sock.setblocking(False)
    return sock


def bind_unix(path: str) -> socket.socket:
    """A listening unix socket (0660: the service and its group only).

    A socket file left by a process that is gone is replaced; one that a live process still
    accepts on is refused, so a second sidecar never takes the door from a running one.
    """
    if _unix_socket_answers(path):
        raise ConfigError(f"cannot listen on {path}: another process is serving on it; stop that process, "
                          "or choose another --uds path")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, 0o660)
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise cannot_listen(path, exc) from None
    sock.setblocking(False)
    return sock


def _unix_socket_answers(path: str) -> bool:
    """True when something accepts connections on the unix socket ``path`` (a stale file refuses)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except TimeoutError:  # alive, only too busy to accept now
        return True
    except OSError:  # absent, not a socket, or nobody listening: free to replace
        return False
    finally:
        probe.close()
    return True


def cannot_listen(address: str, exc: OSError, *, flag: str = "port") -> ConfigError:
    """The one-line error for a listening address the service cannot take; ``flag`` names the option
    to change (``--port``, ``--ops-port``), or is a plain word when no option chose it."""
    if exc.errno == errno.EADDRINUSE:
        return ConfigError(f"cannot listen on {address}: another process is using it; stop that process, "
                           f"or choose another {flag} (0 picks a free one)")
    return ConfigError(f"cannot listen on {address}: {exc.strerror or exc}")


def event_loop_runner() -> Any:
    """``uvloop.run`` when installed (it comes with uvicorn[standard]; less CPU per request), else ``asyncio.run``."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run


def http_protocol() -> type[Any] | str:
    """The uvicorn HTTP protocol the services run: httptools, with uvicorn's own 400 (a request it
    cannot parse: a bad request line, header or framing) answered as the JSON error body every
    other refusal has (``{"error": "invalid_request", "message": ...}``), not as plain text.
    ``"auto"`` where httptools is not installed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "auto"

    class JsonErrorHttpToolsProtocol(HttpToolsProtocol):  # type: ignore[misc]
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(CoalescingTransport(transport, asyncio.get_running_loop()))

        def send_400_response(self, msg: str) -> None:
            body = json.dumps({"error": InvalidInput.code, "message": msg}).encode()
            head = [b"HTTP/1.1 400 Bad Request\r\n"]
            head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
            head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body),
                     b"connection: close\r\n\r\n"]
            self.transport.write(b"".join(head) + body)
            self.transport.close()

    return JsonErrorHttpToolsProtocol


class CoalescingTransport:
    """A transport whose writes made in one event-loop step leave in one ``send``.

    uvicorn writes a response's head and its body with two ``transport.write`` calls, and
    uvloop sends each at once: two system calls per response, about a tenth of the plane's
    CPU per single-tuple write (py-spy, BENCHMARKS.md). Writes are held until the loop's next
    step, then sent joined. Once :data:`HOLD_BYTES` are held they go at once, so a body
    streamed without yielding still meets the real transport's flow control (uvicorn pauses
    the sender when its buffer is full). ``close`` sends what is held first; ``abort`` drops
    it, as the real transport's would. Everything else is the real transport's.
    """

    __slots__ = ("_held", "_held_bytes", "_loop", "_transport")

    HOLD_BYTES = 64 * 1024

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._held_bytes = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self._send)
        self._held.append(bytes(data))
        self._held_bytes += len(data)
        if self._held_bytes >= self.HOLD_BYTES:
            self._send()

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def _send(self) -> None:
        if not self._held:
            return
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held.clear()
        self._held_bytes = 0
        if not self._transport.is_closing():
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._held_bytes

    def write_eof(self) -> None:
        self._send()
        self._transport.write_eof()

    def close(self) -> None:
        self._send()
        self._transport.close()

    def abort(self) -> None:
        self._held.clear()
        self._held_bytes = 0
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
