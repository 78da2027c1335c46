"""Raw HTTP/2 for tests: frames no gRPC client would send (streams past the server's bound), and
frames a client library hides (SETTINGS, GOAWAY, RST_STREAM)."""

from __future__ import annotations

import socket
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
MAX_CONCURRENT_STREAMS = 0x3
REFUSED_STREAM = 0x7

Frame = tuple[int, int, int, bytes]  # type, flags, stream, payload


def _literal(name: bytes, value: bytes) -> bytes:
    """An HPACK literal field without indexing, plain strings (both shorter than 127 bytes)."""
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def grpc_message(payload: bytes) -> bytes:
    """A gRPC length-prefixed message (not compressed)."""
    return b"\x00" + struct.pack(">I", len(payload)) + payload


class RawH2:
    """One HTTP/2 connection spoken frame by frame. It acknowledges the server's SETTINGS and PINGs
    (as every client must), and nothing else happens unless the test asks."""

    def __init__(self, address: str, timeout: float = 30.0) -> None:
        self.answer_pings = True  # False: a peer gone without a word (a half-open connection)
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.settings: dict[int, int] = {}
        self._buffer = b""
        self.sock.sendall(PREFACE + self._frame(SETTINGS, 0, 0, b""))

    @staticmethod
    def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload

    def _read(self, size: int) -> bytes | None:
        while len(self._buffer) < size:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self._buffer += chunk
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out

    def next(self) -> Frame | None:
        """The server's next frame (None at the end of the connection)."""
        head = self._read(9)
        if head is None:
            return None
        size = int.from_bytes(head[:3], "big")
        kind, flags, stream = head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        payload = self._read(size) if size else b""
        if payload is None:
            return None
        if kind == SETTINGS and not flags & ACK:
            for at in range(0, len(payload), 6):
                key, value = struct.unpack(">HI", payload[at:at + 6])
                self.settings[key] = value
            self.sock.sendall(self._frame(SETTINGS, ACK, 0, b""))
        elif kind == PING and not flags & ACK and self.answer_pings:
            self.sock.sendall(self._frame(PING, ACK, 0, payload))
        return kind, flags, stream, payload

    def until(self, kind: int, stream: int | None = None) -> Frame:
        """Read frames until one of ``kind`` (on ``stream``, when given) arrives."""
        while (frame := self.next()) is not None:
            if frame[0] == kind and (stream is None or frame[2] == stream):
                return frame
        raise AssertionError(f"the connection ended before a frame of type {kind}")

    def call(self, stream: int, path: str, message: bytes | None = None) -> None:
        """Open a gRPC call on ``stream``; with ``message``, send it and end the request."""
        block = b"".join(_literal(n, v) for n, v in (
            (b":method", b"POST"), (b":scheme", b"http"), (b":path", path.encode()), (b":authority", b"sidecar"),
            (b"content-type", b"application/grpc"), (b"te", b"trailers")))
        self.sock.sendall(self._frame(HEADERS, END_HEADERS, stream, block))
        if message is not None:
            self.send(stream, message)

    def send(self, stream: int, message: bytes) -> None:
        """The call's one request message, ending the request."""
        self.sock.sendall(self._frame(DATA, END_STREAM, stream, grpc_message(message)))

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawH2:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
