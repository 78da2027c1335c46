"""Console output shared by ``dev`` and ``demo``: progress while starting, PIDs on disk.

Progress is a spinner per step on a terminal and one ``✓ step (ms)`` line per finished
step everywhere (``✗`` when it failed, ``-`` with the reason when it was skipped), so a
slow start shows *where* it is slow, and piped output (tests, CI) still reads as a log.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from tenantguard.cli.common import make_console as cli_console


def make_console() -> Console:
    """The CLI's console (no emoji codes, no highlighting), wide enough that tables and commands
    do not wrap when stdout is not a terminal."""
    probe = Console()
    return cli_console(width=None if probe.is_terminal else 120)


class StepSkipped(Exception):
    """Raised inside ``steps.step(...)``: the step did not run, for ``reason``; marked ``-``, never ✓."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Steps:
    """``with steps.step("starting the plane"):`` shows a spinner, then a ✓ (✗ when it raised, ``-``
    when it raised :class:`StepSkipped`) with its duration."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @contextmanager
    def step(self, text: str) -> Iterator[None]:
        start = time.monotonic()
        # Started and stopped by hand, not ``with``: a Ctrl-C that lands while the spinner starts
        # (inside ``__enter__``) skipped ``__exit__``, and its thread kept drawing the step over
        # "stopping…" and "stopped every process".
        status = self.console.status(f"{text}…", spinner="dots")
        try:
            try:
                status.start()
                yield
            finally:
                _stop(status)
        except StepSkipped as skipped:
            self.console.print(f"[yellow]-[/] {text}: [yellow]skipped[/] ({escape(skipped.reason)}) "
                               f"[dim]({_ms(start)})[/]", soft_wrap=True)
            return
        except BaseException:
            self.console.print(f"[red]✗[/] {text} [dim]({_ms(start)})[/]")
            raise
        self.console.print(f"[green]✓[/] {text} [dim]({_ms(start)})[/]")

    def note(self, text: str) -> None:
        self.console.print(f"  [dim]{text}[/]")


def _stop(status: Status) -> None:
    """Stop a spinner, also one whose start a Ctrl-C cut short. Rich marks a Live started before it
    registers it with the console (and its render hook after that), so stopping one interrupted in
    between pops an empty stack: IndexError, which then replaced "interrupted" as the run's result.
    Nothing else was set up by then (the drawing thread starts last), so there is nothing to undo."""
    with suppress(IndexError):
        status.stop()


def _ms(start: float) -> str:
    return f"{(time.monotonic() - start) * 1000:.0f} ms"


def write_pids(path: Path, pids: Mapping[str, int]) -> None:
    """Every child's PID, for scripts and tests that check nothing is left behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(pids), indent=2, sort_keys=True) + "\n")
