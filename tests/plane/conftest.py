"""A real nats-server per test (free port, own store), plane keys and secrets, real plane replicas
(the world of :mod:`tests.harness.plane_world`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tenantguard.dev.natsserver import NatsServer

from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with NatsServer(tmp_path / "nats") as server:
        w = World(tmp_path, server)
        yield w
        for plane in w.planes:
            plane.stop()


@pytest.fixture
def plane(world: World) -> PlaneProcess:
    return world.start()
