"""A port the sidecar cannot have: one line naming it and exit 1, never a traceback, never a shared port.

gRPC turns SO_REUSEPORT on by default; with it a second sidecar (or a stale one from an earlier
run) would bind the same ext_authz port without error and the kernel would spread Envoy's checks
across both, each deciding from its own policy and data.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest

from tests.harness.paths import TENANTGUARD
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World

pytestmark = pytest.mark.timeout(120)


@pytest.fixture()
def taken_port() -> Iterator[int]:
    """A loopback port some other process listens on (plain socket, no SO_REUSEPORT)."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    yield holder.getsockname()[1]
    holder.close()


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    """``tenantguard sidecar serve ARGS``; one that starts serving runs into the timeout and fails the test."""
    return subprocess.run([TENANTGUARD, "sidecar", "serve", *args], capture_output=True, text=True, timeout=60,
                          check=False)


def assert_one_line_refusal(done: subprocess.CompletedProcess[str], address: str) -> None:
    assert done.returncode == 1, done.stderr
    assert f"error config_invalid: cannot listen on {address}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_a_taken_http_port_is_refused_in_one_line(world: World, taken_port: int) -> None:
    args = world.args()
    args[args.index("--port") + 1] = str(taken_port)
    done = serve(*args)
    assert_one_line_refusal(done, f"127.0.0.1:{taken_port}")
    assert "another process is using it; stop that process, or choose another --port (0 picks a free one)" \
        in done.stderr, done.stderr  # names the flag to change, as the gRPC and --uds refusals do


def test_a_second_sidecar_cannot_share_the_grpc_port(world: World, sidecar: SidecarProcess) -> None:
    assert sidecar.grpc is not None
    port = sidecar.grpc.rsplit(":", 1)[1]
    args = world.args()
    args[args.index("--grpc-port") + 1] = port
    done = serve(*args)
    assert_one_line_refusal(done, f"127.0.0.1:{port} (gRPC ext_authz)")
    assert "another process is using it; stop that process, or choose another --grpc-port" in done.stderr
    # gRPC's C core printed its own line ("add_port.cc ... Failed to add port") before ours
    assert "Failed to add port" not in done.stderr and "add_port" not in done.stderr, done.stderr


def test_a_reuseport_grpc_server_cannot_join_the_sidecar_port(sidecar: SidecarProcess) -> None:
    """The foreign server asks for SO_REUSEPORT (gRPC's default); the kernel shares only when both did."""
    assert sidecar.grpc is not None

    async def join() -> int:
        server = grpc.aio.server()
        try:
            return server.add_insecure_port(sidecar.grpc)
        finally:
            await server.stop(None)

    with pytest.raises(RuntimeError, match="Failed to bind"):
        asyncio.run(join())


def uds_args(world: World, path: Path) -> list[str]:
    args = world.args()
    args[args.index("--grpc-port") + 1] = "-1"
    return [*args, "--uds", str(path)]


def test_a_second_sidecar_cannot_take_a_live_unix_socket(world: World) -> None:
    """Binding a unix socket first unlinks the path; only a stale file may be replaced, never a live door."""
    path = Path(tempfile.mkdtemp(prefix="tg-uds-")) / "sidecar.sock"  # short: sun_path holds 108 bytes
    first = start_sidecar(uds_args(world, path))
    try:
        done = serve(*uds_args(world, path))
        assert done.returncode == 1, done.stderr
        assert f"error config_invalid: cannot listen on {path}: another process is serving on it" in done.stderr
        assert "Traceback" not in done.stderr
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(path))) as client:  # still the first one's door
            assert client.get("http://sidecar/health", timeout=5).status_code == 200
    finally:
        first.stop()
    # The first one is gone; if it left its socket file behind, that file is stale and is replaced.
    second = start_sidecar(uds_args(world, path))
    second.stop()


def test_a_stale_unix_socket_file_is_replaced(world: World) -> None:
    path = Path(tempfile.mkdtemp(prefix="tg-uds-")) / "sidecar.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))  # a socket file nobody listens on: what a crashed process leaves
    stale.close()
    started = start_sidecar(uds_args(world, path))
    started.stop()
