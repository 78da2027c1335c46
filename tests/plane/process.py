"""Real plane replicas (the CLI in a subprocess, real uvicorn on a free port) and stream readers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nats
import nats.js.errors
from tenantguard.dev.procwatch import wait_for_announcement

TENANTGUARD = str(Path(sys.executable).with_name("tenantguard"))


@dataclass
class PlaneProcess:
    proc: subprocess.Popen[str]
    http: str
    token: str
    clients: list[httpx.Client] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://{self.http}"

    def client(self, token: str | None = "admin", **headers: str) -> httpx.Client:  # noqa: S107
        """An httpx client; ``token="admin"`` sends the admin token, None sends none."""
        value = self.token if token == "admin" else token
        if value is not None:
            headers["Authorization"] = f"Bearer {value}"
        client = httpx.Client(base_url=self.base_url, timeout=20, headers=headers)
        self.clients.append(client)
        return client

    def status(self) -> dict[str, Any]:
        return httpx.get(f"{self.base_url}/v1/status", timeout=10).json()

    def wait_until(self, predicate: Any, timeout: float = 20.0) -> dict[str, Any]:
        """Poll /v1/status until ``predicate(status)`` holds (bounded); return that status."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status()
            if predicate(status):
                return status
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not reached; last status {status}")
            time.sleep(0.05)

    def stop(self) -> tuple[int, str]:
        """SIGTERM, wait; return (exit code, stderr)."""
        for client in self.clients:
            client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        err = self.proc.stderr.read() if self.proc.stderr else ""
        return self.proc.returncode, err


def start_plane(args: list[str], token: str, *, timeout: float = 60.0) -> PlaneProcess:
    """Run ``tenantguard plane serve ARGS`` and wait for its ``listening`` line
    (up to 60 s: on a busy machine running parallel workers a start has taken 20 s)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([TENANTGUARD, "plane", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    event, _ = wait_for_announcement(proc, "listening", timeout)
    if event is not None:
        return PlaneProcess(proc, event["http"], token)
    proc.kill()
    _, err = proc.communicate(timeout=5)
    raise RuntimeError(f"plane did not start (exit {proc.returncode}):\n{err[-3000:]}")


@dataclass(frozen=True)
class Stored:
    subject: str
    seq: int
    data: bytes
    headers: dict[str, str]


async def _read_stream(url: str, stream: str) -> list[Stored]:
    nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=1, error_cb=_quiet)
    try:
        js = nc.jetstream(timeout=5)
        info = await js.stream_info(stream)
        out = []
        for seq in range(info.state.first_seq or 1, (info.state.last_seq or 0) + 1):
            try:
                msg = await js.get_msg(stream, seq)
            except nats.js.errors.NotFoundError:
                continue  # replaced (last value per subject)
            out.append(Stored(msg.subject or "", seq, msg.data or b"", dict(msg.headers or {})))
        return out
    finally:
        await nc.close()


async def _get_object(url: str, bucket: str, name: str) -> bytes:
    nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=1, error_cb=_quiet)
    try:
        store = await nc.jetstream(timeout=5).object_store(bucket)
        return bytes((await store.get(name)).data or b"")
    finally:
        await nc.close()


async def _put_object(url: str, bucket: str, name: str, data: bytes) -> None:
    nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=1, error_cb=_quiet)
    try:
        store = await nc.jetstream(timeout=5).object_store(bucket)
        await store.put(name, data)
    finally:
        await nc.close()


async def _publish_core(url: str, subject: str, data: bytes) -> None:
    nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=1, error_cb=_quiet)
    try:
        await nc.publish(subject, data)
        await nc.flush(timeout=5)
    finally:
        await nc.close()


async def _publish_js(url: str, subject: str, data: bytes) -> int:
    nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=1, error_cb=_quiet)
    try:
        return int((await nc.jetstream(timeout=5).publish(subject, data)).seq)
    finally:
        await nc.close()


async def _next_core_message(url: str, subject: str) -> bytes:
    nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=1, error_cb=_quiet)
    try:
        sub = await nc.subscribe(subject, max_msgs=1)
        msg = await sub.next_msg(timeout=20)
        return bytes(msg.data)
    finally:
        await nc.close()


async def _quiet(_exc: Exception) -> None:
    pass


def read_stream(url: str, stream: str) -> list[Stored]:
    return asyncio.run(asyncio.wait_for(_read_stream(url, stream), 30))


def get_object(url: str, bucket: str, name: str) -> bytes:
    return asyncio.run(asyncio.wait_for(_get_object(url, bucket, name), 30))


def put_object(url: str, bucket: str, name: str, data: bytes) -> None:
    """Replace an object's bytes, as anyone with NATS write access to the bucket can."""
    asyncio.run(asyncio.wait_for(_put_object(url, bucket, name, data), 30))


def publish_core(url: str, subject: str, data: bytes) -> None:
    asyncio.run(asyncio.wait_for(_publish_core(url, subject, data), 30))


def next_core_message(url: str, subject: str) -> bytes:
    return asyncio.run(asyncio.wait_for(_next_core_message(url, subject), 30))


def publish_js(url: str, subject: str, data: bytes) -> int:
    """Store raw bytes on a stream subject, as anyone with NATS write access can; the stream seq."""
    return asyncio.run(asyncio.wait_for(_publish_js(url, subject, data), 30))
