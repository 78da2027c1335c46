"""Timing helpers shared by the bench scripts (run as ``python bench/<script>.py``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def measure(fn: Callable[[], object], iterations: int, warmup: int = 200) -> tuple[float, float]:
    """Median and p99 in microseconds over single timed calls (after ``warmup`` untimed ones)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    samples.sort()
    return statistics.median(samples) / 1000, samples[max(0, int(len(samples) * 0.99) - 1)] / 1000


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    """Seconds each of ``runs`` single calls took, after one untimed call (warm caches, engines)."""
    fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples
