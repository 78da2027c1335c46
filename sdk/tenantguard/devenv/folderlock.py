"""One ``tenantguard dev`` (or ``demo --dir``) per folder: an exclusive lock on ``<folder>/dev.lock``.

Two runs on one folder would share its JetStream store, plane state and sidecar state, and the
second would overwrite ``dev.env`` and ``pids.json`` and, on stopping, remove the first one's
``dev.env`` while it still runs. The lock is a ``flock`` taken before anything starts: the
kernel drops it when its holder exits, however it exits, so a crashed run never leaves a stale
lock behind. The file keeps the holder's pid only to name it in the refusal.

A run killed with SIGKILL cannot stop its children (each runs in its own session), so its
nats-server, plane and sidecars outlive the lock. They are found through the folder's
``pids.json`` (a PID still alive whose command line names this folder) and refused the same
way: a new run beside them would start a second nats-server on the same JetStream store.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from tenantguard.errors import ConfigError, TenantGuardError

LOCK_FILE: Final = "dev.lock"
PIDS_FILE: Final = "pids.json"  # written by dev and demo (:func:`.ui.write_pids`)


class FolderBusy(TenantGuardError):
    """Another ``tenantguard dev``/``demo`` holds the folder; the message says which pid and what to do."""

    code = "dev_folder_in_use"
    http_status = 409


@contextlib.contextmanager
def folder_lock(root: Path, *, command: str) -> Iterator[None]:
    """Hold ``root``'s lock for the duration; raise :class:`FolderBusy` at once if another run holds it."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot use {root} as the {command} folder: {exc.strerror or exc}; "
                          "give a writable folder with --dir") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusy(_busy_message(root, fd, command)) from None
        left = leftovers(root)
        if left:
            raise FolderBusy(_leftover_message(root, left))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def leftovers(root: Path) -> dict[str, int]:
    """The children ``<root>/pids.json`` lists that still run: alive, and their command line names ``root``
    (so a PID the kernel has since given to an unrelated process is not one of them)."""
    try:
        listed = json.loads((root / PIDS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(listed, dict):
        return {}
    found = {}
    for name, pid in listed.items():
        if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 and _runs_in(pid, root):
            found[str(name)] = pid
    return found


def _runs_in(pid: int, root: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and str(root) in cmdline


def _leftover_message(root: Path, left: dict[str, int]) -> str:
    listed = ", ".join(f"{name} pid {pid}" for name, pid in sorted(left.items()))
    pids = " ".join(str(pid) for pid in sorted(left.values()))
    return (f"processes of an earlier tenantguard dev or demo in {root} are still running ({listed}): it was "
            f"killed before it could stop them; stop them (kill {pids}) and run again")


def _busy_message(root: Path, fd: int, command: str) -> str:
    holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
    who = f" (pid {holder})" if holder.isdigit() else ""
    env = root / "dev.env"
    use = f"use it (source {env} in this shell), " if env.exists() else ""
    return (f"another tenantguard dev or demo is already running in {root}{who}: {use}"
            f"stop it with Ctrl-C in its shell, or give this {command} another folder with --dir")
