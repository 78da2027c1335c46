"""The ``tenantguard`` command line: parses flags, calls the library, renders output.

Groups that start a service live in that service's package and are found through the
``tenantguard.cli`` entry-point group, so this library never imports the services.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from typing import Annotated, Any

import typer
import typer.main
from rich.markup import escape

from tenantguard import __version__
from tenantguard.cli import bundle, decisions, keys, model, relation, revoke, token
from tenantguard.cli.common import console_err, hint_dev_env, hint_word_order, shown_message
from tenantguard.errors import TenantGuardError

# rich_markup_mode=None: help texts are plain text, never Rich markup, so "[default: ...]"
# and "[env var: ...]" stay visible and a docstring's line breaks do not split a command's
# one-line summary. The top-level setting applies to every group and command below it.
app = typer.Typer(
    name="tenantguard",
    help="Tenant-safe authorization: context tokens, signed policy bundles, local decisions.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"max_content_width": 120},  # a wide terminal shows whole one-line summaries
)


def _print_version(value: bool) -> None:
    if value:
        print(f"tenantguard {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                          help="Print the version and exit")] = False,
) -> None:
    """Tenant-safe authorization: context tokens, signed policy bundles, local decisions."""

app.add_typer(keys.app, name="keys")
app.add_typer(token.app, name="token")
app.add_typer(bundle.app, name="bundle")
app.add_typer(relation.app, name="relation")
app.add_typer(revoke.app, name="revoke")
app.add_typer(decisions.app, name="decisions")
app.add_typer(model.app, name="model")
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
            _register(ep.name, ep.load())


def _register(name: str, contributed: Any) -> None:
    """A Typer with sub-commands becomes a group; one whose callback *is* the command (``dev``,
    ``demo``) becomes a plain command, so its usage line does not promise ``COMMAND [ARGS]...``."""
    if isinstance(contributed, typer.Typer):
        info = contributed.registered_callback
        command = info.callback if info is not None else None
        if command is not None and not contributed.registered_commands and not contributed.registered_groups:
            app.command(name, help=_SERVICE_HELP.get(name) or contributed.info.help)(command)
            return
        app.add_typer(contributed, name=name, help=_SERVICE_HELP.get(name))
        return
    app.command(name, help=_SERVICE_HELP.get(name))(contributed)  # a plain function: a command


def _group_exists(name: str) -> bool:
    return any(g.name == name for g in app.registered_groups) or any(
        c.name == name for c in app.registered_commands
    )


def main() -> None:
    """Entry point: typed errors become one red line and exit code 1, never a traceback."""
    _register_service_groups()
    try:
        hint_word_order(hint_dev_env(typer.main.get_command(app)))()
    except TenantGuardError as exc:
        console_err.print(f"[red]error[/] {exc.code}: {escape(shown_message(exc))}", soft_wrap=True)
        sys.exit(1)

