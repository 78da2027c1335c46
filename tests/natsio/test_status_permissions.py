"""A sidecar reports what it runs on tg.status.<its service>, and cannot report for another service.

Same secured nats-server as test_secure.py (the permissions of :mod:`tenantguard.feed.topology`):
the billing sidecar's credential publishes its status through the real feed; a status
claimed for orders over the same credential is refused by the server, so the plane's
fleet view (which takes the service from the subject) cannot be told lies across services.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tenantguard.feed import topology
from tenantguard.rollout import FleetView

from authz_sidecar.config import SidecarConfig
from authz_sidecar.feed import Feed
from authz_sidecar.runtime import Sidecar
from tests.harness.fleet import FAST, eventually
from tests.harness.secure_nats import sidecar_conn
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(90)]


async def test_a_sidecar_reports_its_revision_and_only_for_its_own_service(
        tmp_path: Path, secure_nats: Any, creds: dict[str, Path], plane: TestPlane,
        plane_pem: Path, bundle_pem: Path) -> None:
    config = SidecarConfig(service="billing", nats=sidecar_conn(secure_nats, creds), plane_key=plane_pem,
                           bundle_keys=(bundle_pem,), state_dir=tmp_path / "state", grpc_port=None)
    sidecar = Sidecar.from_config(config)
    feed = Feed.for_sidecar(sidecar, FAST)
    fleet = FleetView()
    seen: asyncio.Queue[str] = asyncio.Queue()

    async def on_status(msg: Any) -> None:
        fleet.receive(msg.subject.rsplit(".", 1)[-1], msg.data)
        await seen.put(msg.subject)

    await plane.nc.subscribe(f"{topology.SUBJECT_STATUS_PREFIX}.*", cb=on_status)
    await plane.nc.flush()
    await feed.start()
    try:
        await eventually(lambda: sidecar.bundle_revision == "1", "the sidecar activated bundle 1")
        await eventually(lambda: fleet.summary()["by_service"].get("billing") == {"1": 1},
                         "the plane's fleet view shows billing on revision 1")
        (report,) = fleet.sidecars()
        assert report["instance"] == sidecar.instance and report["bundle_serial"] == 1
        assert report["bundle_sha256"] == sidecar.fleet_status().bundle_sha256
        assert feed.status()["status_reports"] >= 1

        # the same connection claims to be orders: the server drops it. A report on its own subject sent
        # right after it (same connection, so in order) arrives: by then the forged one never will.
        forged = json.dumps({**sidecar.fleet_status().to_wire(), "bundle_revision": "evil"}).encode()
        sentinel = json.dumps({**sidecar.fleet_status().to_wire(), "instance": "sentinel"}).encode()
        await feed.publish(topology.status_subject("orders"), forged)
        await feed.publish(topology.status_subject("billing"), sentinel)
        while not any(s["instance"] == "sentinel" for s in fleet.sidecars()):
            assert await asyncio.wait_for(seen.get(), timeout=10) == topology.status_subject("billing")
        assert "orders" not in fleet.summary()["by_service"]
    finally:
        await feed.stop()
