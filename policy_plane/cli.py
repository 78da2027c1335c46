"""``tenantguard plane``: the policy plane's own commands, registered through an entry point."""

from __future__ import annotations

import typer

app = typer.Typer(help="Run the policy plane.", no_args_is_help=True)


@app.command()
def serve() -> None:
    """Start the policy plane API. Not yet available in this build."""
    typer.echo("tenantguard plane serve: not yet available in this build", err=True)
    raise typer.Exit(2)
