"""Waiting for something to become true, bounded, never with a bare sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

DEADLINE = 20.0

T = TypeVar("T")


def eventually(probe: Callable[[], T | None], what: str, timeout: float = DEADLINE) -> T:
    """Poll ``probe`` until it returns something truthy (returned); fail with ``what`` at the deadline.

    The deadline only bounds a hang: no assertion depends on how fast anything happened.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = probe()
        except (httpx.HTTPError, OSError) as exc:  # a process restarting: try again
            last = exc
        if last:
            return last  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for: {what} (last: {last!r:.300})")
        time.sleep(0.05)
