"""What every ``tenantguard`` command offers on its ``--help``: options, metavars, env vars, help.

Why: the shared option table (``tenantguard.cli.options``) replaced options declared once per
command; ``help_baseline.json`` was captured from the tree before that change, and
``test_shared_options.py`` compares every command against it, so a refactor that drops,
renames or re-words an option (or loses its env var) fails by name. Regenerate the baseline
only for an intended change: ``python -m tests.cli.helpsnap > tests/cli/help_baseline.json``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BASELINE = Path(__file__).with_name("help_baseline.json")


def root_app() -> Any:
    """The ``tenantguard`` Typer app with the service groups (sidecar, plane, dev, demo) attached."""
    from tenantguard import cli

    cli._register_service_groups()
    return cli.app


def root_command() -> Any:
    """The click command tree ``tenantguard`` runs."""
    import typer.main

    return typer.main.get_command(root_app())


def _walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _walk(sub, (*path, name))


def _param(param: Any, ctx: Any) -> dict[str, Any]:
    envvar = param.envvar
    record = param.get_help_record(ctx)  # the (flags and metavar, help) pair --help prints
    return {
        "kind": param.param_type_name,
        "name": param.name,
        "opts": list(param.opts),
        "secondary_opts": list(param.secondary_opts),
        "shown": list(record) if record is not None else None,
        "envvar": envvar if isinstance(envvar, str) or envvar is None else list(envvar),
        "required": bool(param.required),
        "multiple": bool(getattr(param, "multiple", False)),
        "default": repr(param.default) if not callable(param.default) else "<callable>",
    }


def snapshot() -> dict[str, list[dict[str, Any]]]:
    """``{"sidecar serve": [param, ...], ...}`` for every command and group, in declaration order."""
    from typer._click.core import Context

    root = root_command()
    out: dict[str, list[dict[str, Any]]] = {}
    for path, command in _walk(root, ()):
        ctx = Context(command, info_name=path[-1] if path else "tenantguard")
        out[" ".join(path) or "tenantguard"] = [_param(p, ctx) for p in command.params]
    return out


def help_texts() -> dict[str, str]:
    """The rendered ``--help`` of every command (a wide, colourless terminal), for a reader's diff."""
    from typer.testing import CliRunner

    runner = CliRunner()
    texts = {}
    for path, _command in _walk(root_command(), ()):
        result = runner.invoke(root_app(), [*path, "--help"], env={"COLUMNS": "120", "NO_COLOR": "1"},
                               prog_name="tenantguard")
        texts[" ".join(path) or "tenantguard"] = result.output
    return texts


if __name__ == "__main__":
    json.dump(snapshot(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
