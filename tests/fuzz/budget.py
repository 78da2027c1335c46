"""How much fuzzing a run does: a short, reproducible pass by default, a long one on demand.

The short pass (the normal test suite) draws few examples with a derandomized seed, so CI
sees the same cases on every run and stays well inside its time budget. The long pass is
``TG_FUZZ_EXAMPLES=5000 pytest tests/fuzz``: that many examples per property, fresh random
draws each run (failures print a ``@reproduce_failure`` blob to replay them).

No property here asserts anything about time. Hangs are bounded instead: every HTTP call
has a socket timeout and every test a pytest-timeout limit, both generous.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

LONG_EXAMPLES = int(os.environ.get("TG_FUZZ_EXAMPLES", "0") or 0)
LONG = LONG_EXAMPLES > 0
REQUEST_TIMEOUT = 15.0  # seconds one HTTP exchange may take before it counts as a hang
TEST_TIMEOUT = 24 * 3600 if LONG else 180


def budget(short: int) -> settings:
    """Hypothesis settings: ``short`` examples, derandomized, unless the long pass is asked for."""
    return settings(
        max_examples=LONG_EXAMPLES or short,
        derandomize=not LONG,
        database=None,
        deadline=None,  # never a timing assertion; hangs are caught by socket and test timeouts
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                               HealthCheck.function_scoped_fixture],
    )


timeout = pytest.mark.timeout(TEST_TIMEOUT)
