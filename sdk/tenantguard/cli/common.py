"""Small helpers shared by the CLI groups: consoles, JSON output, and what an error line says."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperCommand

try:  # typer >= 0.2x carries its own click
    from typer._click.core import Context
    from typer._click.exceptions import MissingParameter, UsageError
except ImportError:  # pragma: no cover - older typer runs on click itself
    from click import Context, MissingParameter, UsageError  # type: ignore[assignment]

from tenantguard.errors import TenantGuardError


def make_console(*, stderr: bool = False, width: int | None = None) -> Console:
    """The one way the CLI (and ``dev``/``demo``) makes a Console.

    Our own ``[red]...[/]`` markup is the only markup: callers escape data they interpolate.
    Emoji codes stay text (Rich would turn ``tenancy_test.rego:100:`` into a 💯 emoji, also
    when piped, and break every ``file:line`` parser), and nothing is highlighted, so what a
    pipe receives is exactly the text that was written.
    """
    return Console(stderr=stderr, width=width, emoji=False, highlight=False)


console = make_console()
console_err = make_console(stderr=True)


def print_json(data: Any) -> None:
    """Machine-readable output on stdout (no colour codes, stable key order)."""
    print(json.dumps(data, indent=2, sort_keys=True))

# Where a new user's second shell gets --plane and --token-file from: shown in their --help and,
# through hint_dev_env, on the error line when one is missing.
DEV_ENV_HINT = "while tenantguard dev runs, `source .tenantguard/dev.env` sets it"

# The variables dev.env exports that the CLI reads; a missing one is almost always a second shell
# that has not sourced dev.env yet.
DEV_ENV_VARS = frozenset({"TG_PLANE_URL", "TG_PLANE_TOKEN_FILE", "TG_SIDECAR_URL"})


def _dev_env_missing_message(ctx: object = None) -> str:
    """What Typer appends to "Missing option '--plane'" for an option :data:`DEV_ENV_VARS` sets."""
    return f"{DEV_ENV_HINT[0].upper()}{DEV_ENV_HINT[1:]} in this shell"


def hint_dev_env(command: Any) -> Any:
    """Make a missing ``--plane``, ``--token-file`` or ``--sidecar`` say how to get it on the error
    line itself (a second shell that has not sourced ``dev.env`` is the common case), not only in
    ``--help``: every option of ``command`` and below it read from a :data:`DEV_ENV_VARS` variable
    answers Typer's ``get_missing_message`` with the hint. Returns ``command``."""
    for param in getattr(command, "params", ()):
        envvar = getattr(param, "envvar", None)
        envvars = {envvar} if isinstance(envvar, str) else set(envvar or ())
        if getattr(param, "param_type_name", None) == "option" and DEV_ENV_VARS & envvars:
            param.get_missing_message = _dev_env_missing_message
    for sub in getattr(command, "commands", {}).values():
        hint_dev_env(sub)
    return command


def hint_word_order(root: Any) -> Any:
    """Make ``tenantguard serve plane`` (a sub-command's name first) say where that name lives:
    "No such command 'serve'" left the newcomer to find ``plane serve`` and ``sidecar serve`` in
    ``--help``. Only names that are a sub-command of a root group get the hint. Returns ``root``."""
    from typer._click.exceptions import UsageError

    resolve = root.resolve_command

    def resolve_with_hint(ctx: Any, args: list[str]) -> Any:
        try:
            return resolve(ctx, args)
        except UsageError as exc:
            word = args[0] if args else ""
            homes = sorted(name for name, group in root.commands.items() if word in getattr(group, "commands", {}))
            if homes:
                exc.message = (f"No such command {word!r}. Did you mean "
                               + " or ".join(f"`tenantguard {home} {word}`" for home in homes) + "?")
            raise

    root.resolve_command = resolve_with_hint
    _hint_early_options(root)
    for command in _below(root):
        _plain_bad_values(command)
    return root


def _plain_bad_values(command: Any) -> None:
    """typer 0.29 converts values through pydantic, whose message leads with "Value error, "
    (``Invalid value for 'ACTION': Value error, 'advanse' is not one of ...``): said without it."""
    from typer._click.exceptions import BadParameter

    parse = command.parse_args

    def parse_plainly(ctx: Any, args: list[str]) -> Any:
        try:
            return parse(ctx, args)
        except BadParameter as exc:
            exc.message = exc.message.removeprefix("Value error, ")
            raise

    command.parse_args = parse_plainly


def _hint_early_options(group: Any) -> None:
    """``tenantguard relation --plane URL write ...`` got "No such option: --plane": the option is the
    sub-command's, so the error now says to put it after the sub-command."""
    from typer._click.exceptions import NoSuchOption

    below = {opt for command in _below(group) for param in command.params for opt in getattr(param, "opts", ())}
    parse = group.parse_args

    def parse_with_hint(ctx: Any, args: list[str]) -> Any:
        try:
            return parse(ctx, args)
        except NoSuchOption as exc:
            if exc.option_name in below:
                exc.message = (f"{exc.option_name} belongs to a sub-command: put it after the sub-command's name "
                               f"(`{ctx.command_path} COMMAND ... {exc.option_name} ...`)")
            raise

    group.parse_args = parse_with_hint
    for sub in getattr(group, "commands", {}).values():
        if getattr(sub, "commands", None):
            _hint_early_options(sub)


def _below(group: Any) -> Iterator[Any]:
    """Every command under ``group``, at any depth."""
    for sub in getattr(group, "commands", {}).values():
        yield sub
        yield from _below(sub)


def shown_message(exc: TenantGuardError) -> str:
    """The message, led by the file at fault when the error names one the message does not
    (``bundle test`` said "invalid JSON: ..." without saying which of a bundle's data.json)."""
    message = exc.message
    file = getattr(exc, "file", None)
    if isinstance(file, str) and file and file not in message:
        message = f"{file}: {message}"
    if exc.code == "plane_refused" or (exc.code == "unavailable" and " unreachable: Connect" in message):
        message += UNREACHABLE_HINT
    if exc.code == "forbidden" and message.startswith("the credential is"):  # the plane's word on a bearer token
        message += WRONG_TOKEN_HINT
    if exc.code == "bundle_rollback" and " is already active in scope " in message:  # a changed bundle, same name
        message += (": give another --revision, or leave --revision out and the build names the bundle after "
                    "its content")
    return message + CODE_HINTS.get(exc.code, "")


# What to do next, for refusals whose message states only the fact (the library's errors are
# also read by programs and the plane's API, so the CLI adds the advice).
CODE_HINTS = {
    "bundle_unknown_key": ("; no key that verifies it here signed it (--bundle-key, --key or --trust; for `bundle "
                           "push`, the plane's bundle key, or leave the archive unsigned for the plane to sign): "
                           "`tenantguard bundle inspect FILE` shows the signer's kid and `tenantguard keys show KEY` "
                           "a key's"),
    "bundle_signature_invalid": ("; the archive changed after it was signed, or another key than the one given signed "
                                 "it: `tenantguard bundle inspect FILE` shows the signer's kid and `tenantguard keys "
                                 "show KEY` a key's"),
}


# After an unreachable plane or sidecar: the usual cause on a first day is a stopped or restarted
# `tenantguard dev` whose old addresses are still exported in this shell.
UNREACHABLE_HINT = ("; is it running there? A restarted `tenantguard dev` listens on new ports: "
                    "`source .tenantguard/dev.env` again in this shell")


# The plane's address and the admin token, taken by every command that talks to the plane (one
# definition, so every command's --help says the same thing and a missing one gets the dev.env hint).
PlaneOpt = Annotated[str, typer.Option("--plane", envvar="TG_PLANE_URL",
                                       help="Policy plane base URL (http:// or https://), or several replicas' "
                                            "comma-separated (a write refused or unanswered is retried at the "
                                            f"next) ({DEV_ENV_HINT})")]
TokenFileOpt = Annotated[Path, typer.Option("--token-file", envvar="TG_PLANE_TOKEN_FILE", dir_okay=False,
                                            help=f"File holding the admin bearer token ({DEV_ENV_HINT})")]
# Reads of decision records take the read-only operator token too (plane serve --operator-token-file).
ReadTokenFileOpt = Annotated[Path, typer.Option("--token-file", envvar="TG_PLANE_TOKEN_FILE", dir_okay=False,
                                                help="File holding the admin or the read-only operator bearer "
                                                     f"token ({DEV_ENV_HINT})")]


# After the plane refused the token: on a first day, a token file of another plane or another dev folder.
WRONG_TOKEN_HINT = ("; --token-file (TG_PLANE_TOKEN_FILE) must name the file the plane was started with "
                    "(--admin-token-file, or --operator-token-file for reads); for `tenantguard dev` that is "
                    ".tenantguard/plane/admin.token, which `source .tenantguard/dev.env` sets")


class ReportsEveryMissing(TyperCommand):
    """A command that names every missing required option at once, not one per attempt.

    click stops at the first required option it finds unset, so a newcomer to ``plane serve``
    (four required options) learnt them in four failed runs. This one, on the first missing
    option, looks at every required one (given as a flag or its environment variable).
    """

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        given = list(args)  # click's parser consumes the list it is handed
        try:
            return super().parse_args(ctx, args)
        except MissingParameter:
            missing = self._missing(ctx, given)
            if len(missing) < 2:
                raise
            raise UsageError("Missing options: " + ", ".join(missing), ctx) from None

    def _missing(self, ctx: Context, args: list[str]) -> list[str]:
        parser = self.make_parser(ctx)
        try:
            values, _, _ = parser.parse_args(args=list(args))
        except UsageError:
            return []
        out = []
        for param in self.get_params(ctx):
            if not param.required or values.get(param.name) is not None:
                continue
            if param.resolve_envvar_value(ctx) is not None:
                continue
            name = param.opts[0] if param.opts else str(param.name)
            envvar = param.envvar if isinstance(param.envvar, str) else None
            out.append(f"{name} (env var {envvar})" if envvar else name)
        return out
