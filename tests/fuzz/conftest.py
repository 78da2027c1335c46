"""One real sidecar and one real plane (with a real nats-server) shared by the fuzz tests.

Both are the CLI processes the other suites start (``tests/sidecar``, ``tests/plane``),
on loopback and free ports, so the fuzzers hit exactly what is deployed: uvicorn, the
request guard, the framework-free doors and the FastAPI routes behind them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.dev.procwatch import wait_for_announcement
from tenantguard.identity.tokens import mint

from tests.harness.paths import TENANTGUARD
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import ADMIN_TOKEN
from tests.harness.plane_world import World as PlaneWorld
from tests.harness.sidecar_process import SidecarProcess
from tests.harness.sidecar_world import World as SidecarWorld


def _start(kind: str, args: list[str], log: Path,
           timeout: float = 30.0) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """``tenantguard KIND serve ARGS`` with stderr to ``log``: thousands of refused requests
    log thousands of lines, and an unread stderr pipe would fill and freeze the server."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as err:
        proc = subprocess.Popen([TENANTGUARD, kind, "serve", *args], stdout=subprocess.PIPE, stderr=err,
                                text=True, env=env)
    event, _ = wait_for_announcement(proc, "listening", timeout)
    if event is None:
        proc.kill()
        proc.wait(timeout=5)
        raise RuntimeError(f"{kind} did not start (exit {proc.returncode}):\n{log.read_text()[-3000:]}")
    return proc, event


@dataclass
class FuzzSidecar:
    """A running sidecar for service ``billing`` and what a legitimate caller holds."""

    world: SidecarWorld
    process: SidecarProcess

    @property
    def address(self) -> str:
        return self.process.http

    @property
    def base_url(self) -> str:
        return self.process.base_url

    def token(self, **claims: object) -> str:
        """A valid context token for billing (acme/alice, editor), claims overridable."""
        args: dict[str, object] = {"issuer": "edge", "sub": "alice", "tenant_id": "acme", "audience": "billing",
                                   "roles": ["editor"], "lifetime": 3600}
        args.update(claims)
        return mint(self.world.edge, check_claims=False, **args)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def fuzz_sidecar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzSidecar]:
    world = SidecarWorld(tmp_path_factory.mktemp("fuzz-sidecar"))
    proc, event = _start("sidecar", world.args(), world.root / "sidecar.log")
    process = SidecarProcess(proc, event["http"], event.get("grpc"))
    yield FuzzSidecar(world, process)
    process.stop()


@dataclass
class FuzzPlane:
    world: PlaneWorld
    process: PlaneProcess

    @property
    def address(self) -> str:
        return self.process.http

    @property
    def base_url(self) -> str:
        return self.process.base_url

    admin_token: str = ADMIN_TOKEN


@pytest.fixture(scope="session")
def fuzz_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzPlane]:
    root: Path = tmp_path_factory.mktemp("fuzz-plane")
    with NatsServer(root / "nats") as server:
        world = PlaneWorld(root, server)
        proc, event = _start("plane", world.args(), root / "plane.log")
        process = PlaneProcess(proc, event["http"], ADMIN_TOKEN)
        process.wait_until(lambda status: status.get("ready"))
        yield FuzzPlane(world, process)
        process.stop()
