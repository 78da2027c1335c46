"""``tenantguard dev`` and ``tenantguard demo``, registered through the ``tenantguard.cli`` entry point.

Each is a Typer app whose callback is the command, so ``tenantguard dev --nats URL`` works
with no sub-command name. ``app`` holds both for ``python -m tenantguard.devenv``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tenantguard.feed.natsconn import HELP as NATS_HELP

dev_app = typer.Typer(help="Run NATS, the policy plane and a sidecar locally until Ctrl-C.",
                      invoke_without_command=True, no_args_is_help=False)
demo_app = typer.Typer(help="Start everything, play a narrated multi-tenant story, check every step.",
                       invoke_without_command=True, no_args_is_help=False)

BundleOption = Annotated[Path | None, typer.Option(
    "--bundle", file_okay=False, help="Bundle source directory (default: the example bundle, bundles/tenantguard)")]


@dev_app.callback(invoke_without_command=True)
def dev(
    nats: Annotated[str | None, typer.Option(
        "--nats", envvar="TG_DEV_NATS",
        help=NATS_HELP["servers"] + ": use it instead of starting a local nats-server")] = None,
    directory: Annotated[Path, typer.Option(
        "--dir", file_okay=False,
        help="Dev folder: keys, admin token, JetStream store, logs; one running dev per folder")
    ] = Path(".tenantguard"),
    port_base: Annotated[int | None, typer.Option(
        "--port-base", min=1, max=65533, help="Fixed ports: plane N, sidecar HTTP N+1, gRPC N+2 (default: free)")
    ] = None,
    bundle: BundleOption = None,
    reset: Annotated[bool, typer.Option(
        "--reset", help="Start fresh: first remove the dev folder's JetStream store (relationships, bundles, "
        "trust, revocations), sidecar state and logs; keys, admin token and join secrets are kept (delete the "
        "folder for new ones). Refused while a dev runs there, with --nats, and for a --dir that is no dev folder")
    ] = False,
) -> None:
    """Run NATS, the policy plane and a sidecar (service orders) until Ctrl-C or SIGTERM."""
    from tenantguard.devenv.dev import run_dev
    from tenantguard.devenv.ui import make_console

    raise typer.Exit(run_dev(make_console(), root=directory, nats_url=nats, port_base=port_base, bundle_dir=bundle,
                             reset=reset))


@demo_app.callback(invoke_without_command=True)
def demo(
    ctx: typer.Context,
    directory: Annotated[Path | None, typer.Option(
        "--dir", file_okay=False, help="Run folder (kept); default: a temporary one, removed after a good run")
    ] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the run folder (logs) even after a good run")] = False,
    pg_dsn: Annotated[str | None, typer.Option(
        "--pg-dsn", envvar="TG_DEMO_PG_DSN", help="PostgreSQL for the row-level-security step "
        "[default: host=127.0.0.1 port=5432 user=postgres dbname=test]")] = None,
    no_pg: Annotated[bool, typer.Option("--no-pg", help="Skip the PostgreSQL step")] = False,
    bundle: BundleOption = None,
) -> None:
    """Play edge → orders → billing for two tenants with colliding ids, revoke, spoof, replay; exit 0 if all held."""
    from tenantguard.devenv.demo import run_demo
    from tenantguard.devenv.pgdemo import DEFAULT_DSN
    from tenantguard.devenv.ui import make_console

    dsn = None if no_pg else (pg_dsn or DEFAULT_DSN)
    source = ctx.get_parameter_source("pg_dsn")  # by name: typer and click each have their own enum
    chosen = source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")
    raise typer.Exit(run_demo(make_console(), root=directory, keep=keep, pg_dsn=dsn, bundle_dir=bundle,
                              pg_required=chosen and pg_dsn is not None))


app = typer.Typer(help="tenantguard dev and demo (also registered as `tenantguard dev` / `tenantguard demo`).",
                  no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None)
app.command("dev", help=dev_app.info.help)(dev)
app.command("demo", help=demo_app.info.help)(demo)
