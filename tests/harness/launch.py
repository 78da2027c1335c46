"""CLI processes whose output goes to files, tracked and signalled by PID.

``launch`` runs ``tenantguard ARGS`` with stdout and stderr in log files (no pipe can fill
up and block a process) and waits for its ``{"event": "listening"}`` line. The deployments
(``cluster``, ``r3_cluster``) start every process through it and stop each by its PID.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .paths import TENANTGUARD


@dataclass
class Proc:
    """One CLI process whose stdout/stderr go to files; ``listening`` is its announced address."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    http: str = ""
    grpc: str | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def url(self) -> str:
        return f"http://{self.http}"

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (graceful: the sidecar persists its state), SIGKILL if it does not exit in time."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=5)

    def log_tail(self, size: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-size:]
        except OSError:
            return ""


def launch(name: str, args: list[str], logs: Path, *, timeout: float = 60.0) -> Proc:
    """Run ``tenantguard ARGS`` and wait for its ``{"event": "listening"}`` line on stdout."""
    logs.mkdir(parents=True, exist_ok=True)
    out, err = logs / f"{name}.out", logs / f"{name}.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with out.open("wb") as stdout, err.open("ab") as stderr:
        popen = subprocess.Popen([TENANTGUARD, *args], stdout=stdout, stderr=stderr, env=env)
    proc = Proc(name, popen, err)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in out.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict) and event.get("event") == "listening":
                proc.http, proc.grpc = event["http"], event.get("grpc")
                return proc
        if popen.poll() is not None:
            break
        time.sleep(0.05)
    proc.stop(timeout=2)
    raise RuntimeError(f"{name} did not start (exit {popen.returncode}):\n{proc.log_tail()}")


def signal_proc(proc: Proc, sig: signal.Signals) -> None:
    """Deliver ``sig`` to one process we started, by its PID."""
    if proc.alive():
        os.kill(proc.pid, sig)


def kill_proc(proc: Proc) -> None:
    signal_proc(proc, signal.SIGCONT)  # a stopped process must run to die cleanly in wait()
    if proc.alive():
        proc.popen.kill()
    proc.popen.wait(timeout=10)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
