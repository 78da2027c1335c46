"""A new user's shell and folder: no ``tenantguard`` on PATH, no ``TG_*`` settings, a folder laid out
like a fresh clone (``bundles/`` and ``.venv`` linked to this checkout's), and what ``tenantguard dev``
wrote there for the shell to source."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from .paths import REPO


def fresh_shell_env() -> dict[str, str]:
    """A user's shell: no tenantguard on PATH, no TG_* settings, no venv active."""
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "tenantguard").exists()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TG_") and k not in {"VIRTUAL_ENV", "PYTHONHOME"}}
    return {**env, "PATH": os.pathsep.join(path), "COLUMNS": "120"}


def clone_like(folder: Path) -> Path:
    """A folder that looks like the clone the README speaks to: bundles/ and the installed .venv."""
    folder.mkdir()
    (folder / "bundles").symlink_to(REPO / "bundles")
    venv = Path(sys.prefix)
    if (venv / "bin" / "activate").is_file():
        (folder / ".venv").symlink_to(venv)
    else:  # not a venv: an activate script that does what venv's does for PATH, and nothing else
        (folder / ".venv" / "bin").mkdir(parents=True)
        bindir = shlex.quote(str(Path(sys.executable).parent))
        (folder / ".venv" / "bin" / "activate").write_text(f"export PATH={bindir}:\"$PATH\"\n")
    return folder


def dev_env(folder: Path) -> dict[str, str]:
    values = {}
    for line in (folder / ".tenantguard" / "dev.env").read_text().splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            values[name] = shlex.split(value)[0] if value else ""
    return values
