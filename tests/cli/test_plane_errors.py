"""Errors that say what was wrong: which URL did not answer, and what answered instead of a plane.

Every counterpart is a real process: a closed port, a real sidecar (the CLI in a subprocess),
and Python's own http.server standing in for "some other web server".
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path

import pytest
from tenantguard.client.plane import PLANE_TITLE, PlaneClient, describe_service, retryable
from tenantguard.client.sync import AuthzClient
from tenantguard.errors import PlaneRefused, TenantGuardError, Unavailable
from tenantguard.util.urls import shown_url

from tests.harness.sidecar_process import SidecarProcess, start_sidecar

CLI = Path(sys.executable).with_name("tenantguard")
TUPLE = "acme/project:p1#member@user:alice"


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "300"}
    env.pop("TG_PLANE_URL", None)
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=60, env=env,
                          check=False)


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "admin.token"
    path.write_text("not-the-real-token\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def sidecar() -> Iterator[SidecarProcess]:
    process = start_sidecar(["--service", "orders", "--port", "0", "--grpc-port", "-1"])
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[str]:
    """A plain static file server: answers GET with 404 and POST with 501, as most non-tenantguard servers do."""
    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(tmp_path), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_unreachable_names_the_url_but_never_its_credentials(token_file: Path, refused_port: int) -> None:
    port = refused_port
    done = run_cli("relation", "write", TUPLE, "--plane", f"http://admin:hunter2@127.0.0.1:{port}",
                   "--token-file", token_file)
    assert done.returncode == 1
    flat = " ".join(done.stderr.split())
    assert f"error plane_refused: policy plane at http://admin:***@127.0.0.1:{port} refused the connection" \
        in flat, flat
    assert "hunter2" not in done.stdout + done.stderr


def test_a_refused_loopback_plane_fails_at_once_without_retrying(token_file: Path, refused_port: int) -> None:
    """Nothing listens on a loopback port that refuses: the write is not retried for --retry-for
    (20 s by default); it fails on its first attempt, naming the address (issue 30)."""
    done = run_cli("relation", "write", TUPLE, "--plane", f"http://127.0.0.1:{refused_port}",
                   "--token-file", token_file)
    assert done.returncode == 1
    assert "retrying for up to" not in done.stderr, done.stderr
    assert f"http://127.0.0.1:{refused_port}" in done.stderr
    with PlaneClient(f"http://localhost:{refused_port}", token="t") as client, \
            pytest.raises(PlaneRefused) as info:
        client.write([])
    assert client.retries == 0
    assert info.value.detail["address"] == f"http://localhost:{refused_port}"
    assert not retryable(info.value)


def test_a_refused_replica_among_several_moves_to_the_next(refused_port: int, web_server: str) -> None:
    """With several replicas, a refused one is not the end: the call goes on to the next one."""
    with PlaneClient(f"http://127.0.0.1:{refused_port},{web_server}", token="t", retry_for=5) as client, \
            pytest.raises(TenantGuardError) as info:
        client.write([])
    assert client.retries >= 1
    assert not isinstance(info.value, PlaneRefused)


def test_a_sidecar_url_given_as_the_plane_says_so(sidecar: SidecarProcess, token_file: Path) -> None:
    done = run_cli("relation", "write", TUPLE, "--plane", sidecar.base_url, "--token-file", token_file)
    assert done.returncode == 1
    flat = " ".join(done.stderr.split())
    assert (f"error not_a_plane: {sidecar.base_url} answered POST /v1/relations with HTTP 404 but is not a "
            "tenantguard policy plane (it looks like a sidecar: 'tenantguard sidecar (orders)')") in flat, flat
    assert "--plane (TG_PLANE_URL)" in flat


def test_another_web_server_given_as_the_plane_says_so(web_server: str, token_file: Path) -> None:
    done = run_cli("relation", "list", "--tenant", "acme", "--plane", web_server, "--token-file", token_file)
    assert done.returncode == 1
    flat = " ".join(done.stderr.split())
    assert (f"error not_a_plane: {web_server} answered GET /v1/relations with HTTP 404 but is not a tenantguard "
            "policy plane (it has no OpenAPI description (GET /openapi.json: HTTP 404))") in flat, flat
    done = run_cli("revoke", "tenant", "acme", "--plane", web_server, "--token-file", token_file)
    assert done.returncode == 1 and "answered POST /v1/revocations with HTTP 501 but is not" in done.stderr


def test_the_plane_is_recognised_by_its_openapi_title() -> None:
    """The plane's own answers pass through untouched (its app uses PLANE_TITLE; the dev tour test asks a real one)."""
    from policy_plane import app as plane_app

    assert plane_app.PLANE_TITLE == PLANE_TITLE
    assert describe_service(200, {"info": {"title": PLANE_TITLE}}) is None
    assert describe_service(200, {"info": {"title": "tenantguard sidecar (billing)"}}) == (
        "it looks like a sidecar: 'tenantguard sidecar (billing)'")


def test_the_sdk_names_the_sidecar_it_cannot_reach(refused_port: int) -> None:
    port = refused_port
    with AuthzClient(f"http://svc:s3cret@127.0.0.1:{port}") as client, pytest.raises(Unavailable) as info:
        client.check(token="t", action="read", resource={"type": "invoice", "id": "1"})
    assert f"sidecar at http://svc:***@127.0.0.1:{port} unreachable" in info.value.message
    assert "s3cret" not in str(info.value)


def test_an_unreachable_default_address_says_it_is_only_the_default(
        refused_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service started in a shell without ``source .tenantguard/dev.env`` asks 127.0.0.1:8181; its log
    said only "sidecar at http://127.0.0.1:8181 ... failed", not that this is the default nobody set."""
    from tenantguard.client.base import ClientSettings, transport_unavailable
    from tenantguard.client.wire import Call

    monkeypatch.delenv("TG_SIDECAR_URL", raising=False)
    monkeypatch.delenv("TG_SIDECAR_UDS", raising=False)
    default = ClientSettings()
    note = "(the default: TG_SIDECAR_URL is not set in this process's environment)"
    assert default.default_address_note == f" {note}"
    call = Call("POST", "/v1/check", lambda *_: None)
    error = transport_unavailable(call, ConnectionRefusedError(), 3, default.where, default.default_address_note)
    assert error.message.startswith(f"sidecar at http://127.0.0.1:8181 {note} unreachable"), error.message
    assert ClientSettings(base_url="http://127.0.0.1:9").default_address_note == ""
    monkeypatch.setenv("TG_SIDECAR_URL", f"http://127.0.0.1:{refused_port}")
    assert ClientSettings().default_address_note == ""
    with AuthzClient() as client, pytest.raises(Unavailable) as info:  # from the environment: no note
        client.check(token="t", action="read", resource={"type": "invoice", "id": "1"})
    assert info.value.message.startswith(f"sidecar at http://127.0.0.1:{refused_port} unreachable")


@pytest.mark.parametrize(("url", "shown"), [
    ("http://127.0.0.1:8282", "http://127.0.0.1:8282"),
    ("https://admin:pw@plane.internal:8443/base?token=abc&page=2", "https://admin:***@plane.internal:8443/base?token=***&page=2"),
    ("nats://s3cret@127.0.0.1:4222", "nats://***@127.0.0.1:4222"),
    ("http://h:99999", "***"),
])
def test_shown_url(url: str, shown: str) -> None:
    assert shown_url(url) == shown


LOOKUP = ("relation", "lookup", "resources", "--action", "documents:read", "--tenant", "acme",
          "--subject", "user:alice", "--type", "document", "--sidecar")


def test_a_lookup_at_a_sidecar_that_is_down_is_a_typed_error(refused_port: int) -> None:
    """``relation lookup`` used to end in httpx's traceback (ConnectError) when the sidecar was down."""
    done = run_cli(*LOOKUP, f"http://svc:hunter2@127.0.0.1:{refused_port}")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"error unavailable: sidecar at http://svc:***@127.0.0.1:{refused_port} "
                                  "unreachable: ConnectError"), done.stderr
    assert "`source .tenantguard/dev.env` again" in done.stderr and "hunter2" not in done.stderr


def test_a_lookup_at_a_server_that_is_no_sidecar_says_so(web_server: str) -> None:
    """...and in a JSONDecodeError traceback when --sidecar named some other web server."""
    done = run_cli(*LOOKUP, web_server)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    flat = " ".join(done.stderr.split())
    assert flat.startswith(f"error unexpected_response: {web_server} answered POST /v1/lookup/resources with "
                           "HTTP 501 but not as a tenantguard sidecar does; point --sidecar (TG_SIDECAR_URL) at "
                           "the sidecar's base URL"), flat


@pytest.mark.parametrize("args", [
    ("explain", "../../v1/relations"),
    ("explain", "d1/explain?tenant=x"),
    ("bundle", "rollout", "advance", ".."),
])
def test_an_id_that_would_leave_its_path_segment_is_refused_locally(args: tuple[str, ...], token_file: Path,
                                                                   refused_port: int) -> None:
    """An id goes into the URL's path: ``explain ../../v1/relations`` asked another route of the plane
    (and printed "not_found: Not Found"). Refused before any request: the plane here is not even up."""
    done = run_cli(*args, "--plane", f"http://127.0.0.1:{refused_port}", "--token-file", token_file)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error invalid_request: ") and "is not an id: letters, digits" in done.stderr, \
        done.stderr
    assert "unreachable" not in done.stderr  # nothing was sent


def test_plane_client_calls_keep_every_id_in_its_segment() -> None:
    from tenantguard.client.plane import explain_call, register_key_call, rollout_call
    from tenantguard.errors import InvalidInput

    assert explain_call("0a1b:c.d-e_f").path == "/v1/decisions/0a1b:c.d-e_f/explain"
    for make in (lambda v: explain_call(v), lambda v: rollout_call(v, "advance"), lambda v: rollout_call("r1", v),
                 lambda v: register_key_call(v, {})):
        for bad in ("..", "a/b", "a?b", "a#b", "a b", "", "x" * 161):
            with pytest.raises(InvalidInput):
                make(bad)
