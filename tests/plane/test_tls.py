"""The plane over HTTPS: real plane processes started with ``--tls-cert/--tls-key`` (and
``--tls-client-ca``), a real CA (``tests.harness.tlscerts``), the CLI and a sidecar in subprocesses, the
SDK client in-process. What is refused must be refused before anything is written, and the
admin token must never show up in what the processes print."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.client.plane import PlaneClient
from tenantguard.dev.natsserver import NatsServer
from tenantguard.errors import ConfigError, PlaneTlsRefused, Unavailable
from tenantguard.relations import RelationChange, Relationship
from tenantguard.util.httptls import ClientTls

from authz_sidecar.config import SidecarConfig
from tests.harness.paths import TENANTGUARD
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import ADMIN_TOKEN, JOIN_SECRET, World
from tests.harness.sidecar_process import start_sidecar
from tests.harness.tlscerts import make_pki

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]


class TlsWorld:
    """One NATS server; a plane serving HTTPS and one requiring client certificates, both on it."""

    def __init__(self, root: Path, nats: NatsServer) -> None:
        self.pki = make_pki(root / "pki")
        self.world = World(root, nats)
        tls = ["--tls-cert", str(self.pki.server.cert), "--tls-key", str(self.pki.server.key)]
        self.plane = self.world.start(*tls)
        self.mutual = self.world.start(*tls, "--tls-client-ca", str(self.pki.ca.cert))
        self.outputs: list[str] = []  # everything the CLI printed, searched for the token at the end

    def url(self, plane: PlaneProcess) -> str:
        return f"https://{plane.http}"

    def cli(self, *args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("TG_PLANE")}
        done = subprocess.run([TENANTGUARD, *map(str, args)], capture_output=True, text=True, timeout=60,
                              env={**environment, "COLUMNS": "300", **(env or {})}, check=False)
        self.outputs += [done.stdout, done.stderr]
        return done

    def admin(self, plane: PlaneProcess | None = None, **tls: Any) -> PlaneClient:
        return PlaneClient(self.url(plane or self.plane), token=ADMIN_TOKEN, ca=self.pki.ca.cert, **tls)


@pytest.fixture(scope="module")
def tls_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsWorld]:
    root = tmp_path_factory.mktemp("tls")
    with NatsServer(root / "nats") as server:
        w = TlsWorld(root, server)
        yield w
        for plane in w.world.planes:
            plane.stop()


def _tuples(world: TlsWorld, tenant: str) -> list[dict[str, Any]]:
    with world.admin() as client:
        return list(client.list(tenant, limit=1000)["relations"])


def test_the_cli_writes_and_reads_over_https_with_the_ca(tls_world: TlsWorld) -> None:
    w = tls_world
    url, ca = w.url(w.plane), w.pki.ca.cert
    wrote = w.cli("relation", "write", "acme/project:p1#member@user:alice", "--plane", url,
                  "--token-file", w.world.token_file, "--plane-ca", ca)
    assert wrote.returncode == 0, wrote.stderr
    # TG_PLANE_CA, as --plane and --token-file are read from the environment
    checked = w.cli("relation", "check", "acme/project:p1#member@user:alice",
                    env={"TG_PLANE_URL": url, "TG_PLANE_TOKEN_FILE": str(w.world.token_file), "TG_PLANE_CA": str(ca)})
    assert checked.returncode == 0 and '"allowed": true' in checked.stdout, checked.stdout + checked.stderr
    with w.admin() as client:  # and the SDK
        assert client.check(Relationship.parse("acme/project:p1#member@user:alice"))[0]


def test_a_cli_without_the_ca_is_refused_at_once_and_nothing_is_written(tls_world: TlsWorld) -> None:
    w = tls_world
    refused = w.cli("relation", "write", "acme/project:p2#member@user:mallory", "--plane", w.url(w.plane),
                    "--token-file", w.world.token_file)
    assert refused.returncode == 1
    assert "plane_tls_refused" in refused.stderr and "certificate verify failed" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and "retrying" not in refused.stderr  # typed, and not retried
    assert not [r for r in _tuples(w, "acme") if r["object"] == "project:p2"]


def test_plain_http_to_the_https_port_writes_nothing(tls_world: TlsWorld) -> None:
    w = tls_world
    plain = f"http://{w.plane.http}"
    with PlaneClient(plain, token=ADMIN_TOKEN, retry_for=0) as client, pytest.raises(Unavailable):
        client.write([])
    with pytest.raises(httpx.HTTPError):
        httpx.post(f"{plain}/v1/relations", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                   json={"changes": [{"op": "write", "tuple": "acme/project:p3#member@user:eve"}]}, timeout=10)
    assert not [r for r in _tuples(w, "acme") if r["object"] == "project:p3"]


def test_tls_options_with_an_http_url_are_refused_by_the_cli(tls_world: TlsWorld) -> None:
    w = tls_world
    refused = w.cli("relation", "write", "acme/project:p4#member@user:eve", "--plane", f"http://{w.plane.http}",
                    "--token-file", w.world.token_file, "--plane-ca", w.pki.ca.cert)
    assert refused.returncode == 1 and "not https://" in refused.stderr, refused.stderr


def test_a_sidecar_registers_its_key_over_https(tls_world: TlsWorld, tmp_path: Path) -> None:
    """``sidecar serve --plane-url https://... --plane-ca``: the key reaches the plane's JWKS."""
    w = tls_world
    sidecar = start_sidecar(["--service", "billing", "--port", "0", "--grpc-port", "-1",
                             "--plane-url", w.url(w.plane), "--join-secret-file", str(w.world.join_file),
                             "--plane-ca", str(w.pki.ca.cert), "--state-dir", str(tmp_path / "state")])
    try:
        status = _eventually(lambda: _registration(sidecar.base_url), lambda s: s["state"] == "registered")
        with w.admin() as client:
            assert status["kid"] in {k["kid"] for k in client.jwks()["keys"]}
    finally:
        sidecar.stop()


def test_a_sidecar_without_the_ca_is_refused_and_says_why(tls_world: TlsWorld, tmp_path: Path) -> None:
    w = tls_world
    sidecar = start_sidecar(["--service", "billing", "--port", "0", "--grpc-port", "-1",
                             "--plane-url", w.url(w.plane), "--join-secret-file", str(w.world.join_file),
                             "--state-dir", str(tmp_path / "state")])
    try:
        status = _eventually(lambda: _registration(sidecar.base_url), lambda s: s["state"] == "refused")
        assert status["last_error"].startswith("plane_tls_refused"), status
        with w.admin() as client:
            assert status["kid"] not in {k["kid"] for k in client.jwks()["keys"]}
    finally:
        sidecar.stop()
    assert JOIN_SECRET not in (sidecar.proc.stderr.read() if sidecar.proc.stderr else "")


def test_mutual_tls_admits_a_client_certificate_of_its_ca(tls_world: TlsWorld) -> None:
    w = tls_world
    wrote = w.cli("relation", "write", "acme/project:m1#member@user:alice", "--plane", w.url(w.mutual),
                  "--token-file", w.world.token_file, "--plane-ca", w.pki.ca.cert,
                  "--plane-client-cert", w.pki.client.cert, "--plane-client-key", w.pki.client.key)
    assert wrote.returncode == 0, wrote.stderr


@pytest.mark.parametrize("who", ["no certificate", "another CA's certificate"])
def test_mutual_tls_refuses_other_clients_and_nothing_is_written(tls_world: TlsWorld, who: str) -> None:
    w = tls_world
    cert = {"no certificate": {}, "another CA's certificate": {"client_cert": w.pki.other_client.cert,
                                                                "client_key": w.pki.other_client.key}}[who]
    rel = Relationship.parse(f"acme/project:{who.split()[0]}#member@user:eve")
    with w.admin(w.mutual, retry_for=0, **cert) as client, pytest.raises(Unavailable) as caught:
        client.write([RelationChange("write", rel)])
    assert isinstance(caught.value, PlaneTlsRefused) or "mutual TLS" in caught.value.message, caught.value
    assert not [r for r in _tuples(w, "acme") if r["object"] == rel.object]


def test_the_admin_token_never_appears_in_what_was_printed(tls_world: TlsWorld) -> None:
    """Refusals name the URL and the TLS problem, never the credentials sent; the planes log neither."""
    w = tls_world
    without: list[str | Path] = []
    for extra in (without, ["--plane-ca", w.pki.ca.cert]):
        w.cli("relation", "list", "--tenant", "acme", "--plane", w.url(w.plane), "--token-file", w.world.token_file,
              *extra)
    printed = w.outputs + [_printed_so_far(plane) for plane in w.world.planes]
    assert any("plane_tls_refused" in out for out in printed)
    assert not [out for out in printed if ADMIN_TOKEN in out or JOIN_SECRET in out]


def test_a_private_key_readable_by_others_is_refused_at_start(tls_world: TlsWorld, tmp_path: Path) -> None:
    w = tls_world
    key = tmp_path / "server.key"
    key.write_bytes(w.pki.server.key.read_bytes())
    key.chmod(0o644)
    refused = w.cli("plane", "serve", *w.world.args("--tls-cert", str(w.pki.server.cert), "--tls-key", str(key)))
    assert refused.returncode == 1 and "readable by others" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and "listening" not in refused.stdout
    alone = w.cli("plane", "serve", *w.world.args("--tls-cert", str(w.pki.server.cert)))
    assert alone.returncode == 1 and "--tls-cert and --tls-key go together" in alone.stderr, alone.stderr


def _printed_so_far(plane: PlaneProcess) -> str:
    """What a running plane has written to stderr until now (read without waiting for more)."""
    assert plane.proc.stderr is not None
    fd = plane.proc.stderr.fileno()
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def _registration(base_url: str) -> dict[str, Any]:
    return dict(httpx.get(f"{base_url}/v1/status", timeout=10).json()["registration"])


def _eventually(read: Any, done: Any, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return dict(value)
        assert time.monotonic() < deadline, value
        time.sleep(0.1)


def test_sidecar_plane_tls_options_need_an_https_plane_url(tmp_path: Path) -> None:
    """``sidecar serve --plane-ca`` without ``--plane-url``, or with an http:// one, is a config error."""
    pki = make_pki(tmp_path)
    tls = ClientTls(ca_file=pki.ca.cert)
    with pytest.raises(ConfigError, match="need --plane-url"):
        SidecarConfig(service="billing", plane_tls=tls)
    with pytest.raises(ConfigError, match="not https"):
        SidecarConfig(service="billing", plane_url="https://a:1,http://b:2", join_secret_file=tmp_path / "s",
                      plane_tls=tls)
    assert SidecarConfig(service="billing", plane_url="https://a:1", join_secret_file=tmp_path / "s",
                         plane_tls=tls).plane_tls is tls


def test_a_client_that_never_starts_its_handshake_is_closed_at_the_read_timeout(tls_world: TlsWorld) -> None:
    """A connection still in its TLS handshake is outside the HTTP bounds; asyncio gave it 60 s, so
    17 silent connections a second held a thousand sockets. It now gets ``--http-read-timeout``."""
    w = tls_world
    plane = w.world.start("--tls-cert", str(w.pki.server.cert), "--tls-key", str(w.pki.server.key),
                          "--http-read-timeout", "1")
    try:
        host, port = plane.http.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as silent:
            silent.settimeout(30)  # the old bound was 60 s
            started = time.monotonic()
            try:
                ended = silent.recv(1)
            except ConnectionResetError:
                ended = b""
            held = time.monotonic() - started
        assert ended == b"", ended
        print(f"\na silent TLS client was closed after {held:.1f} s")
        with w.admin(plane) as client:  # a client that does shake hands is served as before
            assert client.status()["ready"] in (True, False)
    finally:
        plane.stop()


def test_a_plane_serving_plain_http_off_loopback_says_its_secrets_cross_the_network(tls_world: TlsWorld) -> None:
    w = tls_world
    exposed = w.world.start("--host", "0.0.0.0")  # noqa: S104  # a free port, for a moment: what is said
    _, said = exposed.stop()
    assert "serving plain HTTP on 0.0.0.0" in said and "--tls-cert" in said
    for quiet in (w.world.start(), w.world.start("--host", "0.0.0.0", "--tls-cert",  # noqa: S104
                                                 str(w.pki.server.cert), "--tls-key", str(w.pki.server.key))):
        _, said = quiet.stop()
        assert "serving plain HTTP" not in said  # loopback, or HTTPS


@pytest.mark.parametrize(("url", "warned"), [
    ("http://plane.internal:8282", True), ("http://10.1.2.3:8282,https://plane-1:8282", True),
    ("http://127.0.0.1:8282", False), ("http://localhost:8282", False), ("http://[::1]:8282", False),
    ("https://plane.internal:8282", False),
])
def test_a_sidecar_sending_its_join_secret_in_clear_off_the_machine_says_so(
        url: str, warned: bool, caplog: pytest.LogCaptureFixture) -> None:
    from authz_sidecar.registration import PlaneRegistrar

    with caplog.at_level("WARNING", logger="authz_sidecar.registration"):
        PlaneRegistrar(url, JOIN_SECRET)
    said = [r.getMessage() for r in caplog.records if "readable by the network" in r.getMessage()]
    assert bool(said) is warned, said
    assert all(JOIN_SECRET not in line for line in said)
