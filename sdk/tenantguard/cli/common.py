"""Small helpers shared by the CLI groups: consoles and JSON output."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console

console = Console()
console_err = Console(stderr=True)


def print_json(data: Any) -> None:
    """Machine-readable output on stdout (no colour codes, stable key order)."""
    print(json.dumps(data, indent=2, sort_keys=True))
