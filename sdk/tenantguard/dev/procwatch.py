"""Waiting for a child process's JSON announcement line without losing any output.

The services announce readiness with one JSON line on stdout (``{"event": "listening",
...}``). Waiting for it with ``select()`` plus a buffered ``readline()`` is a trap: one
``readline`` can pull several lines into Python's buffer, ``select`` then sees nothing
new on the pipe, and the announcement sits unread until the deadline. Here a thread
reads the pipe line by line for the whole life of the child (so the pipe never fills
and blocks it either), hands every line to an optional sink, and wakes the waiter.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import IO, Any

TAIL_LINES = 200


class LineWatcher:
    """Reads ``stream`` in a daemon thread; :meth:`wait_for_event` finds a JSON event line."""

    def __init__(self, stream: IO[str], *, sink: Callable[[str], None] | None = None) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._sink = sink
        self._thread = threading.Thread(target=self._pump, args=(stream,), name="line-watcher", daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self.tail.append(line)
                if self._sink is not None:
                    self._sink(line)
                self._lines.put(line)
        except (ValueError, OSError):  # the pipe was closed under us at shutdown
            pass
        finally:
            self._lines.put(None)

    def wait_for_event(self, event: str, timeout: float) -> dict[str, Any] | None:
        """The first JSON object line whose ``event`` equals ``event``; None on EOF or timeout."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                return None
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(parsed, dict) and parsed.get("event") == event:
                return parsed
        return None

    def text(self) -> str:
        return "".join(self.tail)

    def join(self, timeout: float) -> None:
        """Wait until the stream hit EOF (the child closed stdout, e.g. it exited)."""
        self._thread.join(timeout)


def wait_for_announcement(proc: subprocess.Popen[str], event: str, timeout: float,
                          *, sink: Callable[[str], None] | None = None) -> tuple[dict[str, Any] | None, LineWatcher]:
    """Watch ``proc.stdout`` and wait for its ``event`` line; the watcher keeps draining after."""
    assert proc.stdout is not None, "start the process with stdout=subprocess.PIPE, text=True"
    watcher = LineWatcher(proc.stdout, sink=sink)
    return watcher.wait_for_event(event, timeout), watcher
