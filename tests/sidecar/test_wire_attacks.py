"""Attacks on the sidecar's HTTP framing, sent as raw bytes to a real sidecar process.

What a parser reports beside the request (trailer fields, a fragment, an absolute-form
authority) must never change the question a door answers; a request head is bounded; a
client that trickles bytes or goes quiet is answered 408 and closed (``--http-read-timeout``)
without holding up anyone else; one that never reads its answers is cut (``--http-write-timeout``);
a flood of unparseable requests writes a bounded number of log lines; pipelined questions are
answered in order, each in its own caller's tenant.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest
from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc
from tenantguard.server.serving import LOG_BURST

from tests.harness import rawhttp
from tests.harness.sidecar_doors import check, invoice
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World, token

READ_TIMEOUT = 1  # seconds: the smallest --http-read-timeout, so the deadline tests are short
WAIT = 30  # a bound on every read below, far above the deadline (never a timing assertion)


@pytest.fixture(scope="module")
def strict(world: World) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args("billing", "--http-read-timeout", str(READ_TIMEOUT), "--http-write-timeout", "1",
                                       "--max-head-bytes", "8192", "--ops-port", "0", "--ops-host", "127.0.0.1"))
    yield running
    running.stop()


def _connect(sidecar: SidecarProcess, address: str | None = None) -> socket.socket:
    host, port = (address or sidecar.http).rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=WAIT)


def _read_all(conn: socket.socket) -> bytes:
    answer = b""
    while chunk := conn.recv(65536):
        answer += chunk
    return answer


def _responses(answer: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """Split a stream of HTTP/1.1 answers (each with a Content-Length) into (status, headers, body)."""
    out = []
    while answer:
        head, _, rest = answer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.lower().split(": ", 1) for line in lines[1:])
        size = int(headers.get("content-length", "0"))
        out.append((int(lines[0].split()[1]), headers, rest[:size]))
        answer = rest[size:]
    return out


def _post(path: bytes, body: bytes, *lines: bytes) -> bytes:
    head = b"".join(line + b"\r\n" for line in lines)
    return (b"POST " + path + b" HTTP/1.1\r\nHost: billing.internal\r\nContent-Type: application/json\r\n" + head
            + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def _chunked(body: bytes) -> bytes:
    return b"%x\r\n" % len(body) + body + b"\r\n"


# -- what the parser reports beside the request ----------------------------------------------------


def test_an_authorization_sent_as_a_chunked_trailer_authenticates_nothing(sidecar: SidecarProcess,
                                                                           world: World) -> None:
    """httptools reports trailer fields like headers; they reached the scope the door read after
    the body, so a token sent after the body (where no proxy looks) was believed."""
    bearer = b"Authorization: Bearer " + token(world).encode()
    body = json.dumps(invoice("acme")).encode()
    request = (b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + _chunked(body) + b"0\r\n" + bearer
               + b"\r\n\r\n")
    [(status, _, answer)] = _responses(rawhttp.exchange(sidecar.http, request))
    assert status == 401 and json.loads(answer)["error"] == "token_missing", answer  # the trailer is no token
    head_token = (b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + bearer +
                  b"\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + _chunked(body) + b"0\r\n"
                  b"Authorization: Bearer other\r\n\r\n")  # a different trailer beside the real header: ignored
    [(status, _, answer)] = _responses(rawhttp.exchange(sidecar.http, head_token))
    assert status == 200 and json.loads(answer)["allow"] is True


@pytest.mark.parametrize("suffix", [b"#/../../globex/orders", b"#x", b"?a=1#/../globex", b"#"])
def test_a_fragment_in_the_request_target_is_refused(sidecar: SidecarProcess, world: World, suffix: bytes) -> None:
    """The parser drops a fragment silently, so the Envoy door decided on less than it was sent
    (its own rule refuses fragments): 400 before any door, on every path."""
    for path in (b"/envoy/ext_authz/tenants/acme/orders", b"/v1/check"):
        request = (b"GET " + path + suffix + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "
                   + token(world).encode() + b"\r\n\r\n")
        rawhttp.refuses_as_json(rawhttp.exchange(sidecar.http, request))


@pytest.mark.parametrize("target", [b"http://admin.internal/envoy/ext_authz/tenants/acme/orders",
                                    b"https://evil/v1/status", b"http:///v1/status", b"tenants/acme/orders",
                                    b"evil:443", b"*"])
def test_a_target_that_is_not_origin_form_is_refused(sidecar: SidecarProcess, world: World, target: bytes) -> None:
    """An absolute form names an authority the Host header (read as ``resource.properties.host``)
    may contradict; only the one naming the Host header's own authority is taken."""
    request = (b"GET " + target + b" HTTP/1.1\r\nHost: billing.internal\r\nConnection: close\r\n"
               b"Authorization: Bearer " + token(world).encode() + b"\r\n\r\n")
    rawhttp.refuses_as_json(rawhttp.exchange(sidecar.http, request))
    same = request.replace(b"Host: billing.internal", b"Host: admin.internal")
    if target.startswith(b"http://admin.internal/"):
        assert rawhttp.exchange(sidecar.http, same).startswith(b"HTTP/1.1 200")


def test_a_websocket_upgrade_is_not_taken(sidecar: SidecarProcess) -> None:
    """No route takes a WebSocket, and an upgraded connection would bypass the request guard."""
    request = (b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n"
               b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    answer = rawhttp.exchange(sidecar.http, request)
    assert answer.startswith(b"HTTP/1.1 200") and b"101 Switching" not in answer, answer[:200]


# -- bounds ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("count", "size"), [(9, 1000), (300, 1), (1, 9000)])
def test_a_request_head_beyond_the_bound_is_431(strict: SidecarProcess, count: int, size: int) -> None:
    """uvicorn read heads of any size (50 MB was answered 200): bounded bytes and fields."""
    head = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * size) for i in range(count))
    answer = rawhttp.exchange(strict.http, b"GET /v1/status HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"] == "request_header_fields_too_large"
    fine = b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + b"X-Pad: a\r\n" * 100 + b"\r\n"
    assert rawhttp.exchange(strict.http, fine).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("partial", [
    b"POST /v1/check HTTP/1.1\r\nHost: x\r\n",  # a head that never ends
    b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
    b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"1\r\n{\r\n",  # a body that never ends
    b"G",
])
def test_a_request_that_stalls_is_answered_408_and_closed(strict: SidecarProcess, world: World,
                                                          partial: bytes) -> None:
    """Slowloris: before, a connection that stopped mid-request was held forever. Meanwhile,
    another caller is answered (the stalled one blocks nobody)."""
    with _connect(strict) as stalled:
        stalled.sendall(partial)
        request = _post(b"/v1/check", json.dumps(invoice("acme")).encode(), b"Connection: close",
                        b"Authorization: Bearer " + token(world).encode())
        [(status, _, other)] = _responses(rawhttp.exchange(strict.http, request))
        assert status == 200 and json.loads(other)["allow"] is True
        answer = _read_all(stalled)  # bounded by WAIT: the server closes it
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"] == "request_timeout"


def test_the_ops_listener_has_the_same_bounds(strict: SidecarProcess) -> None:
    """The ops listener is the one bound to the pod IP: a stalled or oversized request there too."""
    assert strict.ops is not None
    with _connect(strict, strict.ops) as stalled:
        stalled.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        assert _read_all(stalled).startswith(b"HTTP/1.1 408")
    flood = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: a\r\n" * 300 + b"\r\n"
    assert rawhttp.exchange(strict.ops, flood).startswith(b"HTTP/1.1 431")


def test_a_trickling_client_is_cut_off(strict: SidecarProcess) -> None:
    """One byte at a time keeps no deadline alive: the deadline is for the whole request."""
    with _connect(strict) as conn:
        conn.settimeout(0.2)
        answer = b""
        for byte in b"GET /v1/status HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 4000:
            try:
                conn.send(bytes([byte]))
                answer += conn.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if answer:
                break
        conn.settimeout(WAIT)
        answer += _read_all(conn)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]


def test_an_idle_connection_is_closed(strict: SidecarProcess) -> None:
    """A connection that never sends a byte (or only blank lines) is closed, without an answer."""
    for opening in (b"", b"\r\n"):
        with _connect(strict) as conn:
            conn.sendall(opening)
            assert _read_all(conn) == b""


WRITE_CUTS = 'tg_http_connections_cut_total{reason="write_timeout"}'


def _metrics(sidecar: SidecarProcess) -> str:
    assert sidecar.ops is not None
    return httpx.get(f"http://{sidecar.ops}/metrics", timeout=WAIT).text


def _until(condition: Any) -> None:
    """Ask again until ``condition()`` holds, for at most WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        threading.Event().wait(0.05)


@pytest.mark.parametrize("door", ["http", "ops"])
def test_a_client_that_never_reads_its_answers_is_cut(strict: SidecarProcess, door: str) -> None:
    """Pipelined requests whose answers are never read: before, the connection, its task and the
    answers buffered for it stayed for as long as the client kept the socket open."""
    cut = rawhttp.metric(_metrics(strict), WRITE_CUTS)
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    with rawhttp.never_reading(getattr(strict, door), request, 3000) as conn:
        _until(lambda: rawhttp.metric(_metrics(strict), WRITE_CUTS) > cut)
        assert rawhttp.read_until_cut(conn) < 3000 * 1000  # cut long before its answers were all sent


def test_a_flood_of_unparseable_requests_writes_a_bounded_log(world: World) -> None:
    """Before, uvicorn logged a warning for every unparseable request: 500 lines for 500 requests,
    at whatever rate the attacker sends. Now the lines beyond a burst are counted, not written."""
    sidecar = start_sidecar(world.args("billing", "--ops-port", "0", "--ops-host", "127.0.0.1"))
    try:
        for _ in range(500):
            rawhttp.exchange(sidecar.http, rawhttp.UNPARSEABLE[0])
        suppressed = rawhttp.metric(_metrics(sidecar), "tg_log_lines_suppressed_total")
    finally:
        sidecar.stop()
    _, err = sidecar.proc.communicate(timeout=WAIT)
    logged = err.count("Invalid HTTP request received.")
    assert logged <= LOG_BURST and logged + suppressed == 500, (logged, suppressed)
    assert err.count("warnings of the HTTP server in") == 1, err[-2000:]
    assert "gRPC health: SERVING" in err  # the sidecar's own lines still pass


# -- pipelining ------------------------------------------------------------------------------------


def test_pipelined_questions_are_answered_in_order_each_in_its_callers_tenant(strict: SidecarProcess,
                                                                              world: World) -> None:
    """Several requests in one packet, different callers: each answer is its own question's."""
    acme, globex = token(world), token(world, sub="mallory", tenant="globex")
    plan = [(acme, "acme", True), (globex, "acme", False), (globex, "globex", True), (acme, "globex", False)] * 3
    packet = b"".join(_post(path, json.dumps(invoice(tenant) if path == b"/v1/check" else {"input": invoice(tenant)})
                            .encode(), b"Authorization: Bearer " + bearer.encode())
                      for bearer, tenant, _ in plan
                      for path in (b"/v1/check", b"/v1/data/tenantguard/decision"))
    packet += b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with _connect(strict) as conn:
        conn.sendall(packet)
        answers = _responses(_read_all(conn))
    assert len(answers) == 2 * len(plan) + 1
    for index, (_, _, allow) in enumerate(plan):
        native, opa = answers[2 * index], answers[2 * index + 1]
        assert native[0] == opa[0] == 200
        assert json.loads(native[2])["allow"] is allow, index
        assert json.loads(opa[2])["result"]["allow"] is allow, index
    assert json.loads(answers[-1][2])["service"] == "billing"


# -- headers an upstream reads as another method or target -----------------------------------------


@pytest.fixture(scope="module")
def grpc_stub(sidecar: SidecarProcess) -> Iterator[Any]:
    assert sidecar.grpc is not None
    channel = grpc.insecure_channel(sidecar.grpc)
    yield pb_grpc.AuthorizationStub(channel)
    channel.close()


OVERRIDES = [("X-HTTP-Method-Override", "DELETE"), ("x-http-method", "PUT"), ("X-Method-Override", "post"),
             ("X-Original-URL", "/tenants/globex/orders"), ("X-Rewrite-URL", "/admin"),
             ("x-original-url", "/tenants/acme/orders?x=1")]


@pytest.mark.parametrize(("name", "value"), OVERRIDES)
def test_a_header_naming_another_method_or_target_is_refused_by_both_envoy_doors(
        sidecar: SidecarProcess, grpc_stub: Any, world: World, name: str, value: str) -> None:
    """Allowed as ``GET /tenants/acme/orders``, run upstream as a DELETE or on globex's path by a
    framework that honours the header: before, both doors allowed it (200, upstream headers set)."""
    bearer = f"Bearer {token(world)}"
    response = check(grpc_stub, "/tenants/acme/orders", {"authorization": bearer, name.lower(): value})
    assert response.status.code != 0 and response.denied_response.status.code == 400
    assert json.loads(response.denied_response.body)["error"] == "header_overrides_request"
    http = httpx.get(f"{sidecar.base_url}/envoy/ext_authz/tenants/acme/orders",
                     headers=[("authorization", bearer), (name, value)])
    assert http.status_code == 400 and http.json()["error"] == "header_overrides_request"


def test_a_header_repeating_the_requests_own_method_or_target_passes(sidecar: SidecarProcess, grpc_stub: Any,
                                                                    world: World) -> None:
    bearer = f"Bearer {token(world)}"
    same = {"authorization": bearer, "x-http-method-override": "get", "x-original-url": "/tenants/acme/orders?x=1"}
    assert check(grpc_stub, "/tenants/acme/orders?x=1", same).status.code == 0
    http = httpx.get(f"{sidecar.base_url}/envoy/ext_authz/tenants/acme/orders?x=1", headers=same)
    assert http.status_code == 200, http.text


# -- connection bound ----------------------------------------------------------------------------


def _status_of(sidecar: SidecarProcess) -> tuple[int, dict[str, str], bytes]:
    with _connect(sidecar) as conn:
        conn.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return _responses(_read_all(conn))[0]


def test_past_max_connections_a_request_is_refused_503_json_until_connections_close(world: World) -> None:
    """Connections that hold a socket and send nothing (or never read) cannot take every one: past
    ``--max-connections`` a request is answered 503 ``too_many_connections`` with Retry-After, as JSON;
    once they close, requests are answered again."""
    bound = 4
    sidecar = start_sidecar(world.args("billing", "--max-connections", str(bound)))
    try:
        assert _status_of(sidecar)[0] == 200
        held = [_connect(sidecar) for _ in range(bound)]
        try:
            status, headers, body = _status_of(sidecar)
            assert status == 503, body
            assert json.loads(body)["error"] == "too_many_connections"
            assert headers["content-type"] == "application/json" and headers["retry-after"] == "1"
        finally:
            for conn in held:
                conn.close()
        answered = []
        while len(answered) < 200 and 200 not in answered:  # bounded: the server notices the closes
            answered.append(_status_of(sidecar)[0])
        assert answered[-1] == 200, answered[-5:]
    finally:
        sidecar.stop()
