"""The ``tenantguard`` command line: parses flags, calls the library, renders output.

Groups that start a service live in that service's package and are found through the
``tenantguard.cli`` entry-point group, so this library never imports the services.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import typer

from ..errors import TenantGuardError
from . import bundle, decisions, keys, relation, revoke, token
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
app.add_typer(revoke.app, name="revoke")
app.add_typer(decisions.app, name="decisions")
app.command("explain")(decisions.explain)

# Help shown for the groups service packages contribute; the packages own the commands.
_SERVICE_HELP = {
    "sidecar": "Run the authorization sidecar beside a service.",
    "plane": "Run the policy plane (relationships, bundles, trust, revocations).",
    "dev": "Run NATS, the policy plane and a sidecar locally until Ctrl-C.",
    "demo": "Start everything, play a narrated multi-tenant story, check every step.",
}


def _register_service_groups() -> None:
    """Attach the groups installed service packages contribute (``tenantguard.cli`` entry points).

    Idempotent, so embedding code (and tests) may call ``main()`` more than once.
    """
    for ep in sorted(entry_points(group="tenantguard.cli"), key=lambda e: e.name):
        if not _group_exists(ep.name):
            app.add_typer(ep.load(), name=ep.name, help=_SERVICE_HELP.get(ep.name))


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
