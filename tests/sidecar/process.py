"""Start a real sidecar process (the CLI, real uvicorn and grpc servers on free ports)."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TENANTGUARD = str(Path(sys.executable).with_name("tenantguard"))


@dataclass
class SidecarProcess:
    proc: subprocess.Popen[str]
    http: str
    grpc: str | None

    @property
    def base_url(self) -> str:
        return f"http://{self.http}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def start_sidecar(args: list[str], *, timeout: float = 20.0) -> SidecarProcess:
    """Run ``tenantguard sidecar serve ARGS`` and wait for its ``listening`` line."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([TENANTGUARD, "sidecar", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not selector.select(timeout=0.2):
            if proc.poll() is not None:
                break
            continue
        line = proc.stdout.readline()
        if not line:
            break
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("event") == "listening":
            return SidecarProcess(proc, event["http"], event.get("grpc"))
    proc.kill()
    _, err = proc.communicate(timeout=5)
    raise RuntimeError(f"sidecar did not start (exit {proc.returncode}):\n{err[-3000:]}")
