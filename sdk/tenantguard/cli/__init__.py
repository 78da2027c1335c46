"""The ``tenantguard`` command line: parses flags, calls the library, renders output.

Groups that start a service live in that service's package and are found through the
``tenantguard.cli`` entry-point group, so this library never imports the services.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import typer

from ..errors import TenantGuardError
from . import bundle, keys, relation, token
from .common import console_err

app = typer.Typer(
    name="tenantguard",
    help="Tenant-safe authorization: context tokens, signed policy bundles, local decisions.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(keys.app, name="keys")
app.add_typer(token.app, name="token")
app.add_typer(bundle.app, name="bundle")
app.add_typer(relation.app, name="relation")

_PENDING = {
    "dev": "Run NATS, the policy plane and a sidecar locally in one process tree.",
}
_SERVICE_HELP = {
    "sidecar": "Run the authorization sidecar beside a service.",
    "plane": "Run the policy plane (relationships, bundles, trust, revocations).",
}


def _not_yet(name: str, help_text: str) -> typer.Typer:
    group = typer.Typer(help=f"{help_text} (not yet available in this build)")

    @group.callback(invoke_without_command=True)
    def _placeholder() -> None:
        console_err.print(f"[yellow]tenantguard {name}: not yet available in this build[/]")
        raise typer.Exit(2)

    return group


def _register_service_groups() -> None:
    """Attach groups contributed by installed service packages (entry points)."""
    found = {ep.name: ep for ep in entry_points(group="tenantguard.cli")}
    for name, help_text in {**_SERVICE_HELP, **_PENDING}.items():
        ep = found.pop(name, None)
        if ep is not None:
            app.add_typer(ep.load(), name=name, help=help_text)
        elif name in _PENDING and not _group_exists(name):
            app.add_typer(_not_yet(name, help_text), name=name)
    for name, ep in found.items():
        app.add_typer(ep.load(), name=name)


def _group_exists(name: str) -> bool:
    return any(g.name == name for g in app.registered_groups) or any(
        c.name == name for c in app.registered_commands
    )


def main() -> None:
    """Entry point: typed errors become one red line and exit code 1, never a traceback."""
    _register_service_groups()
    try:
        app()
    except TenantGuardError as exc:
        console_err.print(f"[red]error[/] {exc.code}: {exc.message}")
        sys.exit(1)
