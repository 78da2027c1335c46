"""Child processes of ``tenantguard dev``/``demo``: start, wait for the listening line, stop by PID.

Every child runs in its own session (``start_new_session``), so the Ctrl-C a terminal sends
to the foreground process group reaches only the orchestrator, which then stops the children
in order (services, sidecars, plane, NATS) instead of all of them dying at once mid-write.
Stopping signals the child's *process group* (SIGTERM, then SIGKILL after a grace period),
so anything a child started is stopped with it; nothing is ever killed by name.

Each child announces readiness with one JSON line on stdout, ``{"event": "listening", ...}``
(the convention of the plane and the sidecar). stdout after that line and all of stderr go
to a log file in the dev folder, copied by a daemon thread so a chatty child can never fill
its pipe and block.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any, Final

from tenantguard.dev.procwatch import wait_for_announcement
from tenantguard.errors import TenantGuardError

LOG_TAIL_CHARS: Final = 3000
STOP_GRACE: Final = 8.0


class ChildFailed(TenantGuardError):
    """A child process did not start (or announce itself) in time; the message has its log tail."""

    code = "devenv_child_failed"


def tenantguard_command() -> list[str]:
    """How to run the ``tenantguard`` CLI: the script beside this interpreter, else on PATH.

    The services' groups (``plane``, ``sidecar``) are found through entry points, so this
    package starts them exactly as a user would, never by importing them.
    """
    beside = Path(sys.executable).with_name("tenantguard")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("tenantguard")
    if found is not None:
        return [found]
    return [sys.executable, "-c", "from tenantguard.cli import main; main()"]


@dataclass
class Child:
    """One started process: its name, Popen handle, log file and the listening line it printed."""

    name: str
    proc: subprocess.Popen[str]
    log_path: Path
    announced: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def http(self) -> str:
        return str(self.announced["http"])

    @property
    def url(self) -> str:
        return f"http://{self.http}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace: float = STOP_GRACE) -> int | None:
        """SIGTERM the process group, wait ``grace`` s, then SIGKILL it; return the exit status."""
        if self.proc.poll() is None:
            _signal_group(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                _signal_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        # The leader is gone; anything it left in its group goes too (by group id, which is its PID).
        _signal_group(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
        except OSError:
            return "(no log)"


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def start_child(name: str, argv: Sequence[str], log_path: Path, *, timeout: float = 30.0,
                env: dict[str, str] | None = None, track: Children | None = None) -> Child:
    """Run ``argv`` in a new session and return once it printed its ``listening`` line.

    ``track`` holds the child from the moment it runs, not from when it announced itself:
    a child started in a worker thread (the sidecars start in parallel) keeps starting when
    Ctrl-C reaches the main thread, and one handed back only after the run's cleanup had
    stopped "every" process was left running in its own session, holding its ports.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("a", encoding="utf-8")
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}, start_new_session=True, close_fds=True,
        )
    except OSError as exc:
        log.close()
        raise ChildFailed(f"cannot run {argv[0]}: {exc.strerror}") from None
    child = Child(name, proc, log_path)
    if track is not None:
        track.add(child)
    try:
        event, _ = wait_for_announcement(proc, "listening", timeout, sink=_log_writer(log))
        if event is None:
            raise TimeoutError
        child.announced = event
    except BaseException as exc:
        child.stop(grace=2.0)
        if track is not None:
            track.discard(child)
        if not isinstance(exc, Exception):
            raise  # Ctrl-C while waiting: the caller's cleanup runs, not a "did not start" error
        raise ChildFailed(f"{name} did not start (exit {proc.returncode}); {log_path} ends with:\n"
                          f"{child.log_tail()}") from None
    return child


def _log_writer(log: IO[str]) -> Callable[[str], None]:
    """Copy the child's stdout into its log file for its whole life (the watcher thread calls it)."""

    def write(line: str) -> None:
        with contextlib.suppress(ValueError, OSError):  # the log closed at shutdown
            log.write(line)
            log.flush()

    return write


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM both raise KeyboardInterrupt inside, so cleanup in ``finally`` always runs.

    Set explicitly: a shell that starts us in the background leaves SIGINT ignored, and
    Python keeps it ignored. Call :func:`ignore_signals` before cleanup so a second Ctrl-C
    cannot cut it short.
    """
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def ignore_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


class Children:
    """Every process one run started, stopped in reverse order of starting."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._children: list[Child] = []

    def add(self, child: Child) -> Child:
        with self._lock:
            self._children.append(child)
        return child

    def discard(self, child: Child) -> None:
        """Forget a child that already stopped (one that failed to start)."""
        with self._lock:
            self._children = [c for c in self._children if c is not child]

    def pids(self) -> dict[str, int]:
        with self._lock:
            return {c.name: c.pid for c in self._children}

    def __iter__(self) -> Any:
        with self._lock:
            return iter(list(self._children))

    def stop_all(self) -> dict[str, int | None]:
        """Stop every child at once (each waits for its own grace period); return each exit status.

        In parallel because nothing left needs an order: the run is over, each child shuts down
        on its own signal, and N sequential grace periods would make Ctrl-C feel slow.
        """
        with self._lock:
            children, self._children = list(reversed(self._children)), []
        if not children:
            return {}
        with ThreadPoolExecutor(len(children)) as pool:
            return dict(zip([c.name for c in children], pool.map(Child.stop, children), strict=True))
