"""The real CLI process with ``--nats`` and ``--plane-key``: the feed runs inside ``serve()``."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tenantguard.dev.natsserver import NatsServer

from tests.harness.fleet import eventually_async, question
from tests.harness.sidecar_process import start_sidecar
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]


async def test_sidecar_process_follows_the_plane_and_reports_it(
    plane: TestPlane, nats_server: NatsServer, plane_pem: Path, bundle_pem: Path, tmp_path: Path
) -> None:
    await plane.write("acme/project:p1#member@user:alice")
    running = start_sidecar(["--service", "billing", "--nats", nats_server.url, "--plane-key", str(plane_pem),
                             "--bundle-key", str(bundle_pem),
                             "--state-dir", str(tmp_path / "state"), "--port", "0", "--grpc-port", "-1"])
    try:
        async with httpx.AsyncClient(base_url=running.base_url, timeout=5) as client:
            status: dict[str, object] = {}

            async def caught_up() -> bool:
                status.update((await client.get("/v1/status")).json())
                return (status.get("feed"), status.get("relations_seq"), status.get("bundle_revision")) == (
                    "live", 1, "1")

            await eventually_async(caught_up, "the process live at seq 1 with bundle 1")
            seq = await plane.write("acme/project:p2#member@user:alice")
            check = await client.post("/v1/check", json={**question("alice", "p2"), "at_least": seq})
            assert check.json()["allow"] is True
            await caught_up()
            detail = status["feed_detail"]
            assert isinstance(detail, dict)
            assert detail["relations"]["applied_seq"] == seq and detail["state"] == "live"
            assert "staleness_seconds" in status
    finally:
        running.stop()
    assert running.proc.returncode == 0
    assert (tmp_path / "state" / "feed" / "relations.snapshot").is_file()  # persisted on shutdown
