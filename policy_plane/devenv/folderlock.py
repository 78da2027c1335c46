"""One ``tenantguard dev`` (or ``demo --dir``) per folder: an exclusive lock on ``<folder>/dev.lock``.

Two runs on one folder would share its JetStream store, plane state and sidecar state, and the
second would overwrite ``dev.env`` and ``pids.json`` and, on stopping, remove the first one's
``dev.env`` while it still runs. The lock is a ``flock`` taken before anything starts: the
kernel drops it when its holder exits, however it exits, so a crashed run never leaves a stale
lock behind. The file keeps the holder's pid only to name it in the refusal.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from tenantguard.errors import ConfigError, TenantGuardError

LOCK_FILE: Final = "dev.lock"


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
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _busy_message(root: Path, fd: int, command: str) -> str:
    holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
    who = f" (pid {holder})" if holder.isdigit() else ""
    env = root / "dev.env"
    use = f"use it (source {env} in this shell), " if env.exists() else ""
    return (f"another tenantguard dev or demo is already running in {root}{who}: {use}"
            f"stop it with Ctrl-C in its shell, or give this {command} another folder with --dir")
