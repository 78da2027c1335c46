"""``<dev folder>/dev.env``: where a running ``tenantguard dev`` is, for other shells to ``source``.

``dev`` picks free ports (fixed ones only with ``--port-base``), so a second terminal cannot
guess them. This file holds ``export`` lines for the variables the tools already read:
``TG_PLANE_URL`` and ``TG_PLANE_TOKEN_FILE`` (``tenantguard relation``, ``revoke``,
``bundle push``/``publish``) and ``TG_SIDECAR_URL`` (the SDK's clients), plus the sidecar's
gRPC address. It exists only while ``dev`` runs: written once everything is in step, removed
when ``dev`` stops, so a stale file never points a shell at ports nobody listens on.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from tenantguard.util.fsutil import atomic_write

ENV_FILE: Final = "dev.env"


def env_file(root: Path) -> Path:
    return root / ENV_FILE


def write_env_file(root: Path, values: Mapping[str, str], *, pid: int) -> Path:
    """Write ``export NAME=value`` lines (shell-quoted) atomically; return the file's path."""
    path = env_file(root)
    lines = [f"# tenantguard dev (pid {pid}) is running; in another shell: source {path}",
             *(f"export {name}={shlex.quote(value)}" for name, value in values.items())]
    atomic_write(path, ("\n".join(lines) + "\n").encode())
    return path


def remove_env_file(root: Path, *, pid: int) -> None:
    """Remove the file if this process wrote it (another ``dev`` on the same folder may own it now)."""
    path = env_file(root)
    try:
        first = path.read_text().splitlines()[0]
    except (OSError, IndexError):
        return
    if f"(pid {pid})" in first:
        path.unlink(missing_ok=True)
