"""Durable file replacement: the one way tenantguard writes state to disk.

A reader (a restarting sidecar, a plane replica) must find either the old file or the
new one, never half of either: write a temp file in the same directory, fsync it,
``os.replace`` it over the target, then fsync the directory so the rename survives a
crash. Temp files are created 0600 (``mkstemp``) and keep that mode.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from tenantguard.errors import ConfigError


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably; the result is mode 0600."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename durable; best effort where a directory cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def require_private(path: str | os.PathLike[str]) -> None:
    """Refuse a secret file that anyone but its owner can read (group/other bits set)."""
    target = Path(path)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError as exc:
        raise ConfigError(f"cannot read secret file {target}: {exc.strerror}") from None
    if not stat.S_ISREG(target.stat().st_mode):
        raise ConfigError(f"secret file {target} is not a regular file")
    if mode & 0o077:
        raise ConfigError(f"secret file {target} is readable by others (mode {mode:o}); chmod 600 it")


def read_private_text(path: str | os.PathLike[str], *, max_bytes: int) -> str:
    """The text of an owner-only secret file, surrounding whitespace stripped; never echoes it."""
    require_private(path)
    target = Path(path)
    try:
        with target.open("rb") as fh:
            data = fh.read(max_bytes + 1)
        text = data.decode("utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read secret file {target}: {type(exc).__name__}") from None
    if len(data) > max_bytes or not text:
        raise ConfigError(f"secret file {target} is empty or larger than {max_bytes} bytes")
    return text
