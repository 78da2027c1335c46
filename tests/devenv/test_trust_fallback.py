"""The fallback side of the trust switch: sidecars started without self-registration flags get
their keys registered with the plane on their behalf, and then trust each other through NATS."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tenantguard.devenv.stack import SidecarSpec, Stack
from tenantguard.devenv.trust import KeyRegistration

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]


def test_keys_registered_on_the_sidecars_behalf_reach_every_sidecar(tmp_path: Path) -> None:
    stack = Stack(tmp_path / "run", registration=KeyRegistration(self_registering=False))
    try:
        stack.start_nats()
        stack.init_plane(["edge", "orders"])
        stack.start_plane(["edge", "orders"])
        stack.publish_bundle()
        stack.start_sidecars([SidecarSpec("edge"), SidecarSpec("orders")])
        stack.wait_synced()
        issuers = {k["iss"] for k in httpx.get(f"{stack.plane_url}/.well-known/jwks.json").json()["keys"]}
        assert {"sidecar:edge", "sidecar:orders"} <= issuers
        for child in stack.sidecars.values():
            assert "--plane-url" not in child.proc.args
            assert httpx.get(f"{child.url}/v1/status").json()["trusted_keys"] >= 2
        pids = stack.pids()
    finally:
        stack.stop()
    assert all(not Path(f"/proc/{pid}").exists() for pid in pids.values())
