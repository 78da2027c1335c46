"""Console output shared by ``dev`` and ``demo``: progress while starting, PIDs on disk.

Progress is a spinner per step on a terminal and one ``✓ step (ms)`` line per finished
step everywhere, so a slow start shows *where* it is slow, and piped output (tests, CI)
still reads as a log.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from tenantguard.cli.common import make_console as cli_console


def make_console() -> Console:
    """The CLI's console (no emoji codes, no highlighting), wide enough that tables and commands
    do not wrap when stdout is not a terminal."""
    probe = Console()
    return cli_console(width=None if probe.is_terminal else 120)


class Steps:
    """``with steps.step("starting the plane"):`` shows a spinner, then a ✓ (or ✗) with its duration."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @contextmanager
    def step(self, text: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            with self.console.status(f"{text}…", spinner="dots"):
                yield
        except BaseException:
            self.console.print(f"[red]✗[/] {text} [dim]({_ms(start)})[/]")
            raise
        self.console.print(f"[green]✓[/] {text} [dim]({_ms(start)})[/]")

    def note(self, text: str) -> None:
        self.console.print(f"  [dim]{text}[/]")


def _ms(start: float) -> str:
    return f"{(time.monotonic() - start) * 1000:.0f} ms"


def write_pids(path: Path, pids: Mapping[str, int]) -> None:
    """Every child's PID, for scripts and tests that check nothing is left behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(pids), indent=2, sort_keys=True) + "\n")
