"""HTTPS with the services' guarded HTTP protocol above asyncio's TLS transport: the read deadline,
pipelining and JSON refusals work as over plain TCP; a client's verification failures are typed.

A real uvicorn server on loopback with a real certificate chain (``tests.harness.tlscerts``), the
smallest read deadline (1 s), and the SDK's plane client as the client under test.
"""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from tenantguard.client.plane import PlaneClient, retryable
from tenantguard.errors import ConfigError, PlaneTlsRefused, Unavailable
from tenantguard.util.httptls import ClientTls, ServerTls

from tests.harness.tls_server import SEEN, Served
from tests.harness.tlscerts import Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def served(pki: Pki) -> Iterator[Served]:
    s = Served(ServerTls(pki.server.cert, pki.server.key))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def mutual(pki: Pki) -> Iterator[Served]:
    s = Served(ServerTls(pki.server.cert, pki.server.key, client_ca_file=pki.ca.cert))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def wrong_host(pki: Pki) -> Iterator[Served]:
    s = Served(ServerTls(pki.wrong_host.cert, pki.wrong_host.key))
    yield s
    s.stop()


def tls_exchange(port: int, ca: Path, *parts: bytes) -> bytes:
    """Send ``parts`` over a verified TLS connection and read the answer until the server closes."""
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
        for part in parts:
            conn.sendall(part)
        out = b""
        try:
            while chunk := conn.recv(1 << 16):
                out += chunk
        except ssl.SSLZeroReturnError:
            pass
    return out


# --------------------------------------------------------------------------- the guards over TLS


def test_a_slowloris_over_tls_is_cut_at_the_read_deadline(served: Served, pki: Pki) -> None:
    """A head that never ends, inside a completed TLS session: 408 as JSON, then closed."""
    answer = tls_exchange(served.port, pki.ca.cert, b"GET /x HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), answer[:200]
    assert json.loads(body)["error"] == "request_timeout"


def test_pipelined_requests_over_tls_are_answered_in_order(served: Served, pki: Pki) -> None:
    first = b"GET /one HTTP/1.1\r\nHost: x\r\n\r\n"
    second = b"GET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answer = tls_exchange(served.port, pki.ca.cert, first + second)
    assert answer.count(b"HTTP/1.1 200") == 2, answer[:400]
    assert answer.index(b'"/one"') < answer.index(b'"/two"')
    assert b'"scheme": "https"' in answer  # routes see https: the console's cookies are Secure


def test_an_unparseable_request_over_tls_is_a_json_400(served: Served, pki: Pki) -> None:
    answer = tls_exchange(served.port, pki.ca.cert, b"GET /v1/status HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"] == "invalid_request"


def test_plain_http_to_the_tls_port_gets_no_http_answer(served: Served) -> None:
    """A client speaking plain HTTP gets nothing it could act on (a TLS alert at most, then close)."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as conn:
        conn.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        out = b""
        try:
            while chunk := conn.recv(1 << 16):
                out += chunk
        except ConnectionResetError:
            pass
    assert b"HTTP/" not in out and b"scheme" not in out


def test_plain_http_client_to_the_tls_port_is_unavailable(served: Served) -> None:
    with PlaneClient(f"http://127.0.0.1:{served.port}", retry_for=0) as client, pytest.raises(Unavailable):
        client.status()


# --------------------------------------------------------------------------- the client's verification


def test_the_client_with_the_ca_is_answered_over_https(served: Served, pki: Pki) -> None:
    with PlaneClient(f"https://127.0.0.1:{served.port}", ca=pki.ca.cert) as client:
        assert client.status() == {"path": "/v1/status", "scheme": "https"}


def test_a_client_without_the_ca_is_refused_typed_and_not_retried(served: Served) -> None:
    """The system's CAs do not know ours: a typed, non-retryable error that names the problem."""
    with PlaneClient(f"https://127.0.0.1:{served.port}") as client, pytest.raises(PlaneTlsRefused) as caught:
        client.status()
    assert "certificate verify failed" in caught.value.message and "--plane-ca" in caught.value.message
    assert not retryable(caught.value) and caught.value.code == "plane_tls_refused"


def test_a_write_without_the_ca_fails_at_once_instead_of_retrying(served: Served) -> None:
    """Writes retry retryable failures for retry_for seconds; a TLS refusal is not one."""
    with PlaneClient(f"https://127.0.0.1:{served.port}", retry_for=60) as client, pytest.raises(PlaneTlsRefused):
        client.revoke({"kind": "tenant", "tenant": "acme"})
    assert client.retries == 0


def test_a_certificate_for_another_host_is_refused(wrong_host: Served, pki: Pki) -> None:
    with PlaneClient(f"https://127.0.0.1:{wrong_host.port}", ca=pki.ca.cert) as client, \
            pytest.raises(PlaneTlsRefused) as caught:
        client.status()
    assert "mismatch" in caught.value.message.lower() or "not valid" in caught.value.message.lower()


def test_a_certificate_from_another_ca_is_refused(served: Served, pki: Pki) -> None:
    with PlaneClient(f"https://127.0.0.1:{served.port}", ca=pki.other_ca.cert) as client, \
            pytest.raises(PlaneTlsRefused):
        client.status()


def test_tls_options_with_a_plain_http_url_are_refused(pki: Pki) -> None:
    """The operator asked for TLS; sending the token in clear instead would be a silent downgrade."""
    with pytest.raises(ConfigError, match="not https"):
        PlaneClient("http://127.0.0.1:1", ca=pki.ca.cert)
    with pytest.raises(ConfigError, match="not https"):
        PlaneClient("https://127.0.0.1:1,http://127.0.0.1:2", ca=pki.ca.cert)


# --------------------------------------------------------------------------- mutual TLS


def test_mutual_tls_answers_a_client_with_a_certificate_of_its_ca(mutual: Served, pki: Pki) -> None:
    with PlaneClient(f"https://127.0.0.1:{mutual.port}", ca=pki.ca.cert, client_cert=pki.client.cert,
                     client_key=pki.client.key) as client:
        assert client.status()["scheme"] == "https"


@pytest.mark.parametrize("who", ["no certificate", "another CA's certificate"])
def test_mutual_tls_refuses_other_clients_at_the_handshake(mutual: Served, pki: Pki, who: str) -> None:
    """Under TLS 1.3 the server judges the client's certificate after the client's side of the
    handshake is done: the client sees the server's alert (PlaneTlsRefused) or, when the close
    overtakes it, a connection closed without an answer; either way no request reaches a route."""
    cert, key = (None, None) if who == "no certificate" else (pki.other_client.cert, pki.other_client.key)
    SEEN.clear()
    with PlaneClient(f"https://127.0.0.1:{mutual.port}", ca=pki.ca.cert, retry_for=0, client_cert=cert,
                     client_key=key) as client, pytest.raises(Unavailable) as caught:
        client.status()
    assert SEEN == []
    assert isinstance(caught.value, PlaneTlsRefused) or "mutual TLS" in caught.value.message, caught.value


# --------------------------------------------------------------------------- configuration


def test_a_key_readable_by_others_is_refused(pki: Pki, tmp_path: Path) -> None:
    key = tmp_path / "server.key"
    key.write_bytes(pki.server.key.read_bytes())
    key.chmod(0o644)
    with pytest.raises(ConfigError, match="readable by others"):
        ServerTls(pki.server.cert, key)
    with pytest.raises(ConfigError, match="readable by others"):
        ClientTls(cert_file=pki.client.cert, key_file=key)


def test_a_key_that_does_not_match_the_certificate_is_a_config_error(pki: Pki) -> None:
    with pytest.raises(ConfigError, match="cannot be loaded"):
        ServerTls(pki.server.cert, pki.client.key)


def test_cert_and_key_go_together(pki: Pki) -> None:
    with pytest.raises(ConfigError, match="go together"):
        ServerTls.from_options(pki.server.cert, None)
    with pytest.raises(ConfigError, match="needs --tls-cert"):
        ServerTls.from_options(None, None, pki.ca.cert)
    with pytest.raises(ConfigError, match="go together"):
        ClientTls(cert_file=pki.client.cert)
    assert ServerTls.from_options(None, None) is None


def test_the_server_context_is_tls12_at_least_without_compression(pki: Pki) -> None:
    context = ServerTls(pki.server.cert, pki.server.key, client_ca_file=pki.ca.cert).ssl_context()
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2
    assert context.options & ssl.OP_NO_COMPRESSION
    assert context.verify_mode == ssl.CERT_REQUIRED
    client = ClientTls(ca_file=pki.ca.cert).ssl_context()
    assert client.verify_mode == ssl.CERT_REQUIRED and client.check_hostname
