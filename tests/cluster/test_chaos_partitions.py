"""The short partition chaos run (see chaos.py): one fault of each partition kind, on its own
proxied deployment (every client link and every NATS route through its own loopback proxy).

Not part of ``test_chaos.py``: the shared deployment is not proxied, and a proxied one costs a
start of its own. The long run is ``python -m tests.cluster.chaos --partitions --duration 120``;
figures in BENCHMARKS.md ("Failures").
"""

from __future__ import annotations

import json

import pytest

from tests.harness.r3_cluster import Deployment

from .chaos import PARTITIONS, run_on

pytestmark = [pytest.mark.nats, pytest.mark.timeout(400)]


def test_short_partition_chaos(tmp_path_factory: pytest.TempPathFactory) -> None:
    dep = Deployment(tmp_path_factory.mktemp("chaos-partitions"), proxied=True, routes_proxied=True)
    try:
        dep.start()
        report = run_on(dep, duration=0, kinds=PARTITIONS, seed=7, hold=2.0, gap=0.5, writers=2, write_pause=0.02)
    finally:
        left = dep.close()
        assert not left, f"processes left running: {left}"
    print("\n" + json.dumps({k: v for k, v in report.items() if k != "relations"}, indent=1, default=str))
    assert report["violations"] == []
    assert set(report["by_kind"]) == set(PARTITIONS)
    for kind, figures in report["by_kind"].items():
        assert figures["checks_during"]["answered"] > 0, kind
