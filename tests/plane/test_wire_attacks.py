"""Attacks on the plane's HTTP framing, sent as raw bytes to a real replica: a write whose
body never ended, a token sent as a chunked trailer, a request that stalls."""

from __future__ import annotations

import json
import socket
import time

import pytest
from tenantguard.server.serving import LOG_BURST

from tests.harness import rawhttp
from tests.harness.plane_world import ADMIN_TOKEN, World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(180)]

AUTH = b"Authorization: Bearer " + ADMIN_TOKEN.encode()
WAIT = 30  # a bound on every read, far above the 1 s deadline (never a timing assertion)


def _rel(obj: str) -> bytes:
    return json.dumps({"changes": [{"op": "write", "rel": {"tenant": "acme", "object": obj, "relation": "member",
                                                            "subject": "user:alice"}}]}).encode()


def _head(*lines: bytes) -> bytes:
    return b"POST /v1/relations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + b"".join(
        line + b"\r\n" for line in lines) + b"\r\n"


def _chunk(body: bytes) -> bytes:
    return b"%x\r\n" % len(body) + body + b"\r\n"


def _send_and_hang_up(address: str, data: bytes) -> None:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=WAIT) as conn:
        conn.sendall(data)


@pytest.mark.parametrize("fast", [True, False], ids=["hot-door", "framework"])
def test_a_write_whose_body_never_ended_is_not_applied(world: World, fast: bool) -> None:
    """Before, the body read so far was handed on at a disconnect; a complete JSON document sent
    under a larger Content-Length (or without the last chunk) was committed."""
    plane = world.start() if fast else world.start("--no-fast-writes")
    http = plane.client()
    assert http.post("/v1/relations", content=_rel("doc:warm"),
                     headers={"content-type": "application/json"}).status_code == 200
    cut = {
        "doc:short": _head(AUTH, b"Content-Length: %d" % (len(_rel("doc:short")) + 10)) + _rel("doc:short"),
        "doc:nolast": _head(AUTH, b"Transfer-Encoding: chunked") + _chunk(_rel("doc:nolast")),
        "doc:halfchunk": _head(AUTH, b"Transfer-Encoding: chunked") + _chunk(_rel("doc:halfchunk"))[:-2],
    }
    for request in cut.values():
        _send_and_hang_up(plane.http, request)
    # A write sent after the hang-ups: once it is answered, the cut ones were long read to their end.
    assert http.post("/v1/relations", content=_rel("doc:after"),
                     headers={"content-type": "application/json"}).status_code == 200
    listed = json.dumps(http.get("/v1/relations", params={"tenant": "acme"}).json())
    assert "doc:after" in listed
    for obj in cut:
        assert obj not in listed, obj


def test_an_admin_token_sent_as_a_trailer_writes_nothing(world: World) -> None:
    """Trailer fields were appended to the headers the write door read after the body."""
    plane = world.start()
    body = _rel("doc:trailer")
    request = _head(b"Transfer-Encoding: chunked", b"Connection: close") + _chunk(body) + b"0\r\n" + AUTH + b"\r\n\r\n"
    answer = rawhttp.exchange(plane.http, request)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    listed = json.dumps(plane.client().get("/v1/relations", params={"tenant": "acme"}).json())
    assert "doc:trailer" not in listed


def test_a_write_that_stalls_is_answered_408_and_not_applied(world: World) -> None:
    plane = world.start("--http-read-timeout", "1")
    host, port = plane.http.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=WAIT) as conn:
        conn.sendall(_head(AUTH, b"Content-Length: 500") + _rel("doc:stalled"))
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"] == "request_timeout"
    listed = json.dumps(plane.client().get("/v1/relations", params={"tenant": "acme"}).json())
    assert "doc:stalled" not in listed
    head = b"GET /v1/status HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 70000 + b"\r\n\r\n"
    assert rawhttp.exchange(plane.http, head).startswith(b"HTTP/1.1 431")


def test_past_max_connections_a_request_is_refused_503_json(world: World) -> None:
    """The plane faces many clients: held connections past ``--max-connections`` cannot starve it of
    sockets and tasks; a request past the bound gets a JSON 503 with Retry-After, none once they close."""
    plane = world.start("--max-connections", "3")
    host, port = plane.http.rsplit(":", 1)
    held = [socket.create_connection((host, int(port)), timeout=30) for _ in range(3)]
    try:
        refused = plane.client().get("/v1/status")
        assert refused.status_code == 503 and refused.json()["error"] == "too_many_connections", refused.text
        assert refused.headers["retry-after"] == "1"
    finally:
        for conn in held:
            conn.close()
    plane.wait_until(lambda status: status.get("ready") is True)  # answered again once they are gone (bounded)


def test_a_reader_that_never_reads_is_cut_and_a_garbage_flood_logs_a_bounded_number_of_lines(world: World) -> None:
    """The plane faces every sidecar and operator: pipelined requests whose answers are never read
    held a connection and its buffered answers for as long as the client kept the socket; every
    unparseable request wrote a log line. Now the first is cut after ``--http-write-timeout`` and
    counted, and the lines past a burst are counted, not written."""
    plane = world.start("--http-write-timeout", "1")
    cut = 'tg_http_connections_cut_total{reason="write_timeout"}'
    http = plane.client()
    with rawhttp.never_reading(plane.http, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 3000) as conn:
        deadline = time.monotonic() + WAIT
        while not rawhttp.metric(http.get("/metrics").text, cut):
            assert time.monotonic() < deadline, "the connection was never cut"
            time.sleep(0.05)
        assert rawhttp.read_until_cut(conn) < 3000 * 1000
    for _ in range(500):
        rawhttp.exchange(plane.http, rawhttp.UNPARSEABLE[0])
    suppressed = rawhttp.metric(http.get("/metrics").text, "tg_log_lines_suppressed_total")
    _, err = plane.stop()
    logged = err.count("Invalid HTTP request received.")
    assert logged <= LOG_BURST and logged + suppressed == 500, (logged, suppressed)
