"""Start a real sidecar process (the CLI, real uvicorn and grpc servers on free ports)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from dataclasses import dataclass

from tenantguard.dev.procwatch import wait_for_announcement

from .paths import TENANTGUARD


@dataclass
class SidecarProcess:
    proc: subprocess.Popen[str]
    http: str
    grpc: str | None
    ops: str | None = None

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


def start_sidecar(args: list[str], *, timeout: float = 60.0) -> SidecarProcess:
    """Run ``tenantguard sidecar serve ARGS`` and wait for its ``listening`` line
    (up to 60 s: on a busy machine running parallel workers a start has taken 20 s)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([TENANTGUARD, "sidecar", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    event, _ = wait_for_announcement(proc, "listening", timeout)
    if event is not None:
        return SidecarProcess(proc, event["http"], event.get("grpc"), event.get("ops"))
    proc.kill()
    _, err = proc.communicate(timeout=5)
    raise RuntimeError(f"sidecar did not start (exit {proc.returncode}):\n{err[-3000:]}")


def drain(proc: SidecarProcess) -> None:
    """Keep reading the sidecar's stderr so its log can never fill the pipe and block it."""
    stream = proc.proc.stderr
    if stream is not None:
        threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()
