"""Raw HTTP for tests: bytes no client library would send, and what a server answers to them."""

from __future__ import annotations

import json
import socket
from typing import Any

UNPARSEABLE = [
    b"GET /v1/status HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",  # a header line without a colon
    b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    b"POST /v1/check HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  # bad chunk size
    b"G\x00T / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
]
"""Requests an HTTP server cannot parse (uvicorn answers them itself, before any route)."""


def exchange(address: str, request: bytes) -> bytes:
    """Send ``request`` to ``host:port`` and read the whole answer (the server closes)."""
    host, port = address.removeprefix("http://").rsplit(":", 1)
    answer = b""
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def refuses_as_json(answer: bytes) -> dict[str, Any]:
    """An answer to a request the server could not parse: 400 with the JSON error body."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").lower().split("\r\n")
    assert lines[0].startswith("http/1.1 400"), answer[:200]
    assert "content-type: application/json" in lines, head
    parsed: dict[str, Any] = json.loads(body)
    assert parsed["error"] == "invalid_request" and parsed["message"], parsed
    return parsed


def never_reading(address: str, request: bytes, count: int) -> socket.socket:
    """A connection that pipelines ``count`` copies of ``request`` and will not read the answers: its
    receive buffer is as small as the kernel allows, so the server's send buffer fills soon."""
    host, port = address.removeprefix("http://").rsplit(":", 1)
    conn = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window follows it
    conn.settimeout(30)
    conn.connect((host.strip("[]"), int(port)))
    conn.sendall(request * count)
    return conn


def read_until_cut(conn: socket.socket) -> int:
    """Read what a connection the server cut still delivers (to a reset or the end); its length."""
    got = 0
    try:
        while chunk := conn.recv(1 << 16):
            got += len(chunk)
    except ConnectionResetError:
        pass
    return got


def metric(text: str, name: str) -> float:
    """The value of one sample (``name`` with its labels, as exposed) in a Prometheus text page; 0 if absent."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0
