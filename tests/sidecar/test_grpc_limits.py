"""The sidecar's gRPC door bounds what one connection may hold: streams at once, time without
calls, age (``--grpc-max-streams``, ``--grpc-max-connection-idle``, ``--grpc-max-connection-age``).
Before, a connection and its streams lived until the client ended them. A real sidecar process;
raw HTTP/2 frames where grpcio would hide what the server did (tests/harness/rawh2.py), grpcio where a
real client's behaviour is the point (it reconnects after a GOAWAY)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import grpc
import pytest
from envoy.service.auth.v3 import external_auth_pb2 as pb
from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from tenantguard.errors import ConfigError
from tenantguard.server.serving import GrpcLimits

from tests.harness import rawh2
from tests.harness.sidecar_doors import check
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World

pytestmark = pytest.mark.timeout(180)

WATCH = "/grpc.health.v1.Health/Watch"  # a call that stays open: an in-flight stream the sidecar already has
CHECK = "/envoy.service.auth.v3.Authorization/Check"


@pytest.fixture(scope="module")
def bounded(world: World) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args("billing", "--grpc-max-streams", "2", "--grpc-max-connection-idle", "1"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def aging(world: World) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args("billing", "--grpc-max-connection-age", "1",
                                       "--grpc-max-connection-idle", "0"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def few(world: World) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args("billing", "--grpc-max-connections", "2"))
    yield running
    running.stop()


def test_connections_past_the_bound_are_closed_and_the_next_after_one_ends_is_served(few: SidecarProcess) -> None:
    """Without a bound, every accepted connection held a socket and its buffers (idle ones for
    up to --grpc-max-connection-idle); past ``--grpc-max-connections`` one is closed at once."""
    assert few.grpc is not None
    first, second = rawh2.RawH2(few.grpc), rawh2.RawH2(few.grpc)
    try:
        for held in (first, second):
            held.until(rawh2.SETTINGS)  # both taken
        with rawh2.RawH2(few.grpc) as third:
            assert third.next() is None  # closed without a frame
    finally:
        first.close()
    try:
        with grpc.insecure_channel(few.grpc) as channel:  # a place is free again, once the server saw the close
            stub, deadline = pb_grpc.AuthorizationStub(channel), time.monotonic() + 30
            while True:
                try:
                    assert check(stub, "/billing/invoices").HasField("denied_response")
                    break
                except grpc.RpcError as refused:
                    assert refused.code() is grpc.StatusCode.UNAVAILABLE and time.monotonic() < deadline, refused
                    time.sleep(0.1)
    finally:
        second.close()


def test_streams_past_the_bound_are_refused(bounded: SidecarProcess) -> None:
    """The server announces its bound (SETTINGS_MAX_CONCURRENT_STREAMS) and refuses a stream past it
    (RST_STREAM REFUSED_STREAM, which clients retry); before, one connection opened any number."""
    assert bounded.grpc is not None
    with rawh2.RawH2(bounded.grpc) as conn:
        conn.until(rawh2.SETTINGS)
        assert conn.settings.get(rawh2.MAX_CONCURRENT_STREAMS) == 2, conn.settings
        for stream in (1, 3, 5):
            conn.call(stream, WATCH, b"")
        while (frame := conn.next()) is not None and frame[2] != 5:
            pass
        assert frame is not None and frame[0] == rawh2.RST_STREAM, frame
        assert int.from_bytes(frame[3], "big") == rawh2.REFUSED_STREAM


def test_a_real_client_at_the_bound_waits_for_a_free_stream(bounded: SidecarProcess) -> None:
    """grpcio keeps within the announced bound on its own: with two calls open, a third waits in
    the client and is answered once one of them ends (not failed)."""
    assert bounded.grpc is not None
    with grpc.insecure_channel(bounded.grpc) as channel:
        watch = channel.unary_stream(WATCH, request_serializer=lambda _: b"",
                                     response_deserializer=health_pb2.HealthCheckResponse.FromString)
        first, second = watch(None, timeout=60), watch(None, timeout=60)
        assert next(first).status == next(second).status == health_pb2.HealthCheckResponse.SERVING
        third = watch(None, timeout=60)
        first.cancel()
        assert next(third).status == health_pb2.HealthCheckResponse.SERVING
        second.cancel()
        third.cancel()


def test_an_idle_connection_is_closed_with_goaway(bounded: SidecarProcess) -> None:
    """A connection that opens no call is told GOAWAY and closed after the idle bound."""
    assert bounded.grpc is not None
    with rawh2.RawH2(bounded.grpc) as conn:
        conn.until(rawh2.GOAWAY)
        while conn.next() is not None:  # then the server closes it (bounded by the socket timeout)
            pass


def test_a_check_under_way_survives_the_age_goaway(aging: SidecarProcess) -> None:
    """A check whose request is still being sent when the connection reaches its age is answered:
    the GOAWAY lets calls under way finish (a grace), only new ones go to a new connection."""
    assert aging.grpc is not None
    with rawh2.RawH2(aging.grpc) as conn:
        conn.call(1, CHECK)
        conn.until(rawh2.GOAWAY)
        conn.send(1, pb.CheckRequest().SerializeToString())
        _, _, _, payload = conn.until(rawh2.DATA, stream=1)
        answer = pb.CheckResponse.FromString(payload[5:])
        assert answer.HasField("denied_response"), answer  # a decision (an empty question is refused 400)


def test_a_client_keeps_checking_across_age_cycles(aging: SidecarProcess) -> None:
    """What Envoy sees: a channel whose connection is retired every second goes on answering,
    reconnecting after each GOAWAY; no check fails."""
    assert aging.grpc is not None
    connected = threading.Semaphore(0)

    def watch(state: grpc.ChannelConnectivity) -> None:
        if state is grpc.ChannelConnectivity.READY:
            connected.release()

    with grpc.insecure_channel(aging.grpc) as channel:
        channel.subscribe(watch)
        stub = pb_grpc.AuthorizationStub(channel)
        answered = 0
        deadline = time.monotonic() + 60
        for _ in range(3):  # three connections, each retired by the server
            while not connected.acquire(blocking=False):
                assert time.monotonic() < deadline, "the connection was never retired"
                assert check(stub, "/billing/invoices").HasField("denied_response")
                answered += 1
        channel.unsubscribe(watch)
    assert answered >= 3


@pytest.mark.parametrize(("streams", "idle", "age", "keepalive"),
                         [(0, 300, 1800, 60), (1000, 0.5, 1800, 60), (1000, 300, -1, 60), (1000, 300, 1800, 0)])
def test_limits_out_of_range_are_a_config_error(streams: int, idle: float, age: float, keepalive: float) -> None:
    with pytest.raises(ConfigError):
        GrpcLimits(max_streams=streams, max_connection_idle=idle, max_connection_age=age, keepalive=keepalive)


def test_a_peer_that_stops_answering_is_closed_with_the_calls_it_held() -> None:
    """A half-open connection (the peer gone without a FIN) holding a call open: before, it stayed
    for ever. The server's keepalive pings go unanswered and it closes the connection. The same
    server options as the door, with short keepalive times, on a real grpc.aio server."""

    async def scenario() -> None:
        server = grpc.aio.server(options=GrpcLimits(keepalive=1, keepalive_timeout=1).options())
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            await asyncio.to_thread(_fall_silent, f"127.0.0.1:{port}")
        finally:
            await server.stop(None)

    asyncio.run(scenario())


def _fall_silent(address: str) -> None:
    with rawh2.RawH2(address) as conn:
        conn.call(1, WATCH, b"")
        conn.until(rawh2.DATA, stream=1)  # the call is open and answered
        conn.answer_pings = False  # from here on the peer is gone, its socket still there
        while conn.next() is not None:  # the server ends the connection (bounded by the socket timeout)
            pass
