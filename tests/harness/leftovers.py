"""Which processes are still alive, by PID and by folder: what a run of ``tenantguard dev`` or ``demo``
left behind."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie has exited, it only awaits its reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line mentions ``text`` (the run folder): anything a run left behind."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_gone(pids: Iterable[int], timeout: float = 10.0) -> list[int]:
    """The PIDs still alive after ``timeout`` (children are stopped before the parent exits, so
    this is only a grace for the kernel to reap them)."""
    deadline = time.monotonic() + timeout
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left
