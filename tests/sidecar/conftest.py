"""A real sidecar for the billing service, started from the world of :mod:`tests.harness.sidecar_world`
(the example bundle and two tenants whose object ids collide)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module")
def sidecar(world: World) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args())
    yield running
    running.stop()
