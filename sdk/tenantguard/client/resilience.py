"""Retry with backoff and a small circuit breaker: the client's answer to a flaky sidecar.

What is retried is decided by what failed, never by what was decided: a transport
error (connect refused, reset, timeout) or a 5xx may be gone on the next attempt; a
deny, a 4xx or a bad token will be the same answer again, so they are returned or
raised at once. Delays use exponential backoff with *full jitter* (a uniform draw in
``[0, min(cap, base * 2**attempt)]``), which spreads the retries of many replicas that
failed together instead of having them return in lockstep.

The breaker counts consecutive transport failures. After ``threshold`` of them it
opens: calls fail immediately with :class:`~tenantguard.client.errors.CircuitOpen`
(fail closed, no waiting on a dead socket on every request). After ``cooldown``
seconds one trial call is let through (half-open); its success closes the breaker,
its failure opens it for another cool-down. Any HTTP answer, including a 4xx, proves
the sidecar is alive and closes it.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tenantguard.client.errors import CircuitOpen
from tenantguard.errors import ConfigError

State = Literal["closed", "open", "half_open"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``attempts`` in total (1 = no retry); delays are full-jitter exponential backoff."""

    attempts: int = 3
    base: float = 0.05
    cap: float = 1.0

    def __post_init__(self) -> None:
        if not 1 <= self.attempts <= 10:
            raise ConfigError("retry attempts must be within 1..10")
        if not 0 <= self.base <= self.cap <= 30:
            raise ConfigError("retry delays need 0 <= base <= cap <= 30 s")

    def delay(self, attempt: int, rng: Callable[[float, float], float] = random.uniform) -> float:
        """Sleep before retry number ``attempt`` (0 = the first retry)."""
        return rng(0.0, min(self.cap, self.base * (2 ** attempt)))


NO_RETRY = RetryPolicy(attempts=1)


def retryable_status(status: int) -> bool:
    """5xx only (503 included): the sidecar may be starting, overloaded or restarting."""
    return 500 <= status <= 599


class CircuitBreaker:
    """Per-process breaker for one sidecar; share one instance between sync and async clients."""

    def __init__(self, threshold: int = 5, cooldown: float = 5.0, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 1 <= threshold <= 1000:
            raise ConfigError("breaker threshold must be within 1..1000")
        if not 0 < cooldown <= 600:
            raise ConfigError("breaker cooldown must be within (0, 600] s")
        self.threshold = threshold
        self.cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False

    @property
    def state(self) -> State:
        with self._lock:
            return self._state()

    def _state(self) -> State:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.cooldown:
            return "half_open"
        return "open"

    def before_call(self) -> None:
        """Raise :class:`CircuitOpen` unless a call may go out now."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return
            if state == "half_open" and not self._trial_in_flight:
                self._trial_in_flight = True  # exactly one trial at a time
                return
            remaining = max(0.0, self.cooldown - (self._clock() - (self._opened_at or 0.0)))
            raise CircuitOpen("sidecar circuit is open after repeated transport failures",
                              retry_after=round(remaining, 3))

    def on_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_in_flight = False

    def on_failure(self) -> None:
        with self._lock:
            self._failures += 1
            if self._trial_in_flight or self._failures >= self.threshold:
                self._opened_at = self._clock()
            self._trial_in_flight = False

    def __repr__(self) -> str:
        return f"CircuitBreaker(state={self.state!r}, failures={self._failures}, threshold={self.threshold})"


__all__ = ["NO_RETRY", "CircuitBreaker", "RetryPolicy", "retryable_status"]
