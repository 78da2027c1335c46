"""The gRPC health service follows readiness, also when the bundle arrives over NATS.

Envoy (and Istio, and kubelet gRPC probes) ask ``grpc.health.v1.Health/Check``; before this
was fixed it stayed NOT_SERVING forever for a sidecar fed by NATS, while ``/ready`` said ready.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tenantguard.dev.natsserver import NatsServer
from tenantguard.identity.keys import SigningKey

from authz_sidecar.config import SidecarConfig
from authz_sidecar.grpc_ext_authz import SERVICE_NAME, start_grpc
from authz_sidecar.runtime import Sidecar
from tests.harness.fleet import eventually_async, make_bundle
from tests.harness.sidecar_process import start_sidecar
from tests.harness.stand_in_plane import TestPlane

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
async def empty_plane(nats_server: NatsServer, plane_key: SigningKey) -> AsyncIterator[TestPlane]:
    """The topology, and no bundle yet."""
    publisher = await TestPlane.connect(nats_server.url, plane_key)
    await publisher.create_topology()
    yield publisher
    await publisher.close()


async def health_status(channel: grpc.aio.Channel, service: str = "") -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    response = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    return int(response.status)


async def test_health_turns_serving_when_the_bundle_arrives_over_nats(
    empty_plane: TestPlane, nats_server: NatsServer, plane_pem: Path, bundle_pem: Path, bundle_key: SigningKey,
    tmp_path: Path,
) -> None:
    running = start_sidecar(["--service", "billing", "--nats", nats_server.url, "--plane-key", str(plane_pem),
                             "--bundle-key", str(bundle_pem), "--state-dir", str(tmp_path / "state"),
                             "--port", "0", "--grpc-port", "0"])
    try:
        assert running.grpc is not None
        async with grpc.aio.insecure_channel(running.grpc) as channel, \
                httpx.AsyncClient(base_url=running.base_url, timeout=5) as http:
            # nothing published yet: both say not ready
            not_ready = await http.get("/ready")  # typed, and says when to ask again: every 503 does
            assert not_ready.status_code == 503 and not_ready.json()["error"] == "not_ready", not_ready.text
            assert not_ready.headers["Retry-After"] == "1"
            assert await health_status(channel) == NOT_SERVING
            assert await health_status(channel, SERVICE_NAME) == NOT_SERVING

            await empty_plane.bundle(make_bundle(bundle_key, 1), "1")

            async def serving() -> bool:
                return await health_status(channel) == SERVING

            await eventually_async(serving, "gRPC health SERVING after the bundle arrived over NATS")
            assert await health_status(channel, SERVICE_NAME) == SERVING
            assert (await http.get("/ready")).status_code == 200
    finally:
        running.stop()
    assert running.proc.returncode == 0


async def test_health_follows_readiness_both_ways(bundle_pem: Path, bundle_key: SigningKey) -> None:
    """In-process, on a real gRPC server: ready -> SERVING, not ready again -> NOT_SERVING.

    No production path takes a sidecar's bundle away today, so the test does (the core's
    active revision), once with the readiness signal and once without it (the bounded poll).
    """
    sidecar = Sidecar.from_config(SidecarConfig(service="billing", bundle_keys=(bundle_pem,), grpc_port=0))
    door = await start_grpc(sidecar, "127.0.0.1", 0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{door.port}") as channel:
            assert await health_status(channel) == NOT_SERVING

            async def shows(status: int) -> bool:
                return await health_status(channel) == status and \
                    await health_status(channel, SERVICE_NAME) == status

            await sidecar.activate_bundle_async(make_bundle(bundle_key, 1))
            await eventually_async(lambda: shows(SERVING), "SERVING once a bundle is active")

            sidecar.core.active = None  # unsignalled: the poll must notice
            await eventually_async(lambda: shows(NOT_SERVING), "NOT_SERVING once no bundle is active")

            await sidecar.activate_bundle_async(make_bundle(bundle_key, 2))
            await eventually_async(lambda: shows(SERVING), "SERVING again")
    finally:
        await door.stop(grace=0)
    assert door.follower is not None and door.follower.done()


async def test_watch_and_checks_share_one_channel_across_bundle_swaps(
    empty_plane: TestPlane, nats_server: NatsServer, plane_pem: Path, bundle_pem: Path, bundle_key: SigningKey,
    tmp_path: Path,
) -> None:
    """A real grpcio client as Envoy uses one: a health ``Watch`` stream and ``Check`` calls on one
    channel opened before any bundle. The stream reports NOT_SERVING, then SERVING when the bundle
    arrives over NATS, and stays open through a second bundle; checks on the channel are answered
    (a typed denial, never a transport error) before, between and after the swaps."""
    from envoy.service.auth.v3 import external_auth_pb2 as pb
    from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc

    running = start_sidecar(["--service", "billing", "--nats", nats_server.url, "--plane-key", str(plane_pem),
                             "--bundle-key", str(bundle_pem), "--state-dir", str(tmp_path / "state"),
                             "--port", "0", "--grpc-port", "0"])
    try:
        assert running.grpc is not None
        async with grpc.aio.insecure_channel(running.grpc) as channel, \
                httpx.AsyncClient(base_url=running.base_url, timeout=5) as http:
            watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=SERVICE_NAME),
                                                              timeout=60)
            check = pb_grpc.AuthorizationStub(channel)

            async def answered() -> int:
                request = pb.CheckRequest()
                request.attributes.request.http.method = "GET"
                request.attributes.request.http.path = "/tenants/acme/orders"
                request.attributes.request.http.headers["authorization"] = "Bearer not-a-token"
                response = await check.Check(request, timeout=5)
                assert response.HasField("denied_response")  # no trust set here: a typed 401, never an error
                return int(response.denied_response.status.code)

            assert await answered() == 401
            assert (await watch.read()).status == NOT_SERVING
            await empty_plane.bundle(make_bundle(bundle_key, 1), "1")
            assert (await watch.read()).status == SERVING  # pushed, no polling by the client
            assert await answered() == 401
            await empty_plane.bundle(make_bundle(bundle_key, 2), "2")

            async def swapped() -> bool:
                return (await http.get("/v1/status")).json()["bundle_revision"] == "2"

            await eventually_async(swapped, "bundle 2 active")
            assert await answered() == 401
            assert await health_status(channel, SERVICE_NAME) == SERVING
            watch.cancel()
    finally:
        running.stop()
    assert running.proc.returncode == 0
