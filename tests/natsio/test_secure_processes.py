"""Real plane and sidecar processes with real passwords in their NATS URLs: nothing they print
carries a password, and a wrong one is reported as an authorization refusal at once."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import topology
from tenantguard.feed.natsconfig import NatsUser

from tests.harness.paths import TENANTGUARD
from tests.harness.plane_process import start_plane
from tests.harness.sidecar_process import start_sidecar

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

PLANE_PW = "PlanePw-" + "q8Zr4LmN2s"  # test server passwords, built so a grep of the source finds neither whole
SIDECAR_PW = "SidecarPw-" + "t3Vb7XkP9w"
DEAD = "nats://127.0.0.1:1"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[NatsServer]:
    users = [NatsUser(user="plane", password=PLANE_PW, permissions=topology.plane_permissions()),
             NatsUser(user="billing", password=SIDECAR_PW, permissions=topology.sidecar_permissions("billing"))]
    with NatsServer(tmp_path / "nats", users=users) as nats:
        yield nats


@pytest.fixture
def plane_dir(tmp_path: Path) -> Path:
    out = tmp_path / "plane"
    subprocess.run([TENANTGUARD, "plane", "init", str(out)], check=True, capture_output=True, timeout=60)
    return out


def with_auth(url: str, user: str, password: str) -> str:
    return url.replace("nats://", f"nats://{user}:{password}@")


def plane_args(plane_dir: Path, nats: str) -> list[str]:
    return ["--nats", nats, "--event-key", str(plane_dir / "event.pem"), "--bundle-key", str(plane_dir / "bundle.pem"),
            "--admin-token-file", str(plane_dir / "admin.token"), "--port", "0", "--connect-timeout", "2"]


def poll(read: Any, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_passwords_in_nats_urls_never_reach_output_or_status(server: NatsServer, plane_dir: Path) -> None:
    token = (plane_dir / "admin.token").read_text().strip()
    plane = start_plane(plane_args(plane_dir, f"{DEAD},{with_auth(server.url, 'plane', PLANE_PW)}"), token)
    sidecar = None
    try:
        poll(lambda: httpx.get(f"{plane.base_url}/ready", timeout=5).status_code == 200, "the plane ready")
        sidecar = start_sidecar([
            "--service", "billing", "--nats", f"{DEAD},{with_auth(server.url, 'billing', SIDECAR_PW)}",
            "--plane-key", str(plane_dir / "event.pem.pub"), "--bundle-key", str(plane_dir / "bundle.pem.pub"),
            "--port", "0", "--grpc-port", "-1"])
        status_url = f"{sidecar.base_url}/v1/status"
        detail = poll(lambda: (d := httpx.get(status_url, timeout=5).json()["feed_detail"])["server"] and d,
                      "the sidecar's feed attached to a node")
        assert detail["server"] == with_auth(server.url, "billing", "***")
        assert detail["nats"]["servers"] == [DEAD, with_auth(server.url, "billing", "***")]
        metrics = httpx.get(f"{sidecar.base_url}/metrics", timeout=5).text
        plane_status = plane.status()["nats"]
        assert plane_status["server"] == with_auth(server.url, "plane", "***")
        texts = [metrics, str(plane_status), str(detail), httpx.get(f"{plane.base_url}/metrics", timeout=5).text]
    except AssertionError:
        if sidecar is not None:
            sidecar.stop()
            raise AssertionError(str(sidecar.proc.stderr.read() if sidecar.proc.stderr else "")[-3000:]) from None
        raise
    finally:
        if sidecar is not None:
            sidecar.stop()
        _, plane_err = plane.stop()
    sidecar_err = sidecar.proc.stderr.read() if sidecar is not None and sidecar.proc.stderr else ""
    assert f"feed connected to {with_auth(server.url, 'billing', '***')}" in sidecar_err
    for text in [*texts, plane_err, sidecar_err]:
        assert PLANE_PW not in text and SIDECAR_PW not in text


def test_plane_with_a_wrong_password_exits_saying_authorization_refused(server: NatsServer, plane_dir: Path) -> None:
    wrong = "WrongPw-" + "h5Jd8QxC"
    args = plane_args(plane_dir, with_auth(server.url, "plane", wrong))
    done = subprocess.run([TENANTGUARD, "plane", "serve", *args], capture_output=True, text=True, timeout=60,
                          check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "authorization refused" in output and "TimeoutError" not in output
    assert wrong not in output and "plane:***@" in output
