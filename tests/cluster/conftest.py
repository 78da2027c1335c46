"""One deployment for the whole package (3 NATS nodes, 2 plane replicas, 3 sidecars): starting
it costs about 20 s of the CI budget, so the replica tests and the short chaos run share it.
Each test leaves it whole (every process up, every node healthy)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness.r3_cluster import Deployment


@pytest.fixture(scope="package")
def dep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    deployment = Deployment(tmp_path_factory.mktemp("cluster"))
    try:
        deployment.start()
        r = deployment.write(0, "acme/project:p1#member@user:alice", "globex/project:g1#member@user:gina")
        assert r.status_code == 200, r.text
        yield deployment
    finally:
        left = deployment.close()
        assert not left, f"processes left running: {left}"
