"""The short chaos run (see chaos.py): one fault of each kind on the shared deployment.

The long run is ``python -m tests.cluster.chaos --duration 120``; figures in docs/operations.md.
The partition kinds need a proxied deployment: their short run is test_chaos_partitions.py.
"""

from __future__ import annotations

import json

import pytest

from tests.harness.r3_cluster import Deployment

from .chaos import SHORT, run_on

pytestmark = [pytest.mark.nats, pytest.mark.timeout(400)]


def test_short_chaos(dep: Deployment) -> None:
    report = run_on(dep, duration=0, kinds=SHORT, seed=7, hold=1.0, gap=0.5, writers=2, write_pause=0.02)
    print("\n" + json.dumps({k: v for k, v in report.items() if k != "relations"}, indent=1, default=str))
    assert report["violations"] == []
