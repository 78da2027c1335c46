"""Small helpers shared by the CLI groups: consoles and JSON output."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console


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

# Where a new user's second shell gets --plane and --token-file from (the error for a missing
# option points at --help, which shows this).
DEV_ENV_HINT = "while tenantguard dev runs, `source .tenantguard/dev.env` sets it"
