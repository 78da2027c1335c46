"""Run search work off the event loop, a few at a time, with a bounded queue.

Why: one search page decides up to ``max_decisions`` candidates, each a full policy
evaluation whose input carries the subject's relations. Run on the serving event loop,
a page for a subject holding a few thousand relations held every door of the sidecar
(checks, health, the Envoy doors) for seconds; one holding 30,000 for five minutes.
Here pages run on their own worker threads (each builds its own policy engines once),
at most ``workers`` at a time; past ``waiting`` queued pages a request is refused at
once with 503 ``unavailable`` (retryable) rather than queued without bound.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Final, TypeVar

from tenantguard.errors import Unavailable

T = TypeVar("T")
DEFAULT_WORKERS: Final = 2
DEFAULT_WAITING: Final = 32
SLICE_SECONDS: Final = 0.005  # a worker deciding this long in a row ...
BREATH_SECONDS: Final = 0.0005  # ... sleeps this long, so the serving thread gets the GIL


class SearchRunner:
    """``await runner.run(fn)``: ``fn()`` on a search worker thread; ``in_flight`` counts
    the pages running or queued (what the sidecar's gauge reports)."""

    def __init__(self, *, workers: int = DEFAULT_WORKERS, waiting: int = DEFAULT_WAITING) -> None:
        if workers < 1 or waiting < 0:
            raise ValueError("a search runner needs at least one worker and a non-negative queue")
        self.workers = workers
        self.waiting = waiting
        self.in_flight = 0
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._local = threading.local()

    async def run(self, fn: Callable[[], T]) -> T:
        with self._lock:
            if self.in_flight >= self.workers + self.waiting:
                raise Unavailable(f"{self.in_flight} searches are running or queued on this sidecar; "
                                  "retry shortly", limit=self.workers + self.waiting)
            self.in_flight += 1
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="tg-search")
            try:
                future = self._pool.submit(fn)
            except RuntimeError:  # closed meanwhile (shutting down)
                self.in_flight -= 1
                raise Unavailable("the sidecar is shutting down") from None
        # Counted until the work itself ends: a caller that hangs up does not stop a page
        # already running, so its slot is not given away before the thread is free.
        future.add_done_callback(self._done)
        return await asyncio.wrap_future(future)

    def _done(self, _future: object) -> None:
        with self._lock:
            self.in_flight -= 1

    def breathe(self) -> None:
        """Called by a search worker after each decision: past a slice of work, sleep briefly.

        A thread deciding in a tight loop hands the GIL back mostly to itself: the serving
        thread, which needs it several times per request, was starved for a whole page on some
        runs. A short real sleep releases it for long enough to be taken."""
        now = time.monotonic()
        started = getattr(self._local, "since", None)
        if started is None or now - started < SLICE_SECONDS:
            if started is None:
                self._local.since = now
            return
        time.sleep(BREATH_SECONDS)
        self._local.since = time.monotonic()

    def close(self) -> None:
        """Let the workers end once their current page is done (never waits for them)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


__all__ = ["SearchRunner"]
