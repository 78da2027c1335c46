"""``tenantguard sidecar``: the sidecar's own commands, registered through an entry point."""

from __future__ import annotations

import typer

app = typer.Typer(help="Run the authorization sidecar beside a service.", no_args_is_help=True)


@app.command()
def serve() -> None:
    """Start the sidecar (HTTP + gRPC ext_authz). Not yet available in this build."""
    typer.echo("tenantguard sidecar serve: not yet available in this build", err=True)
    raise typer.Exit(2)
