"""Real plane replicas (the CLI in a subprocess, real uvicorn on a free port).

What they store in NATS is read with :mod:`tests.harness.nats_raw`."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from tenantguard.dev.procwatch import wait_for_announcement

from .paths import TENANTGUARD


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
