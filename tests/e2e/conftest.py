"""One real deployment per test module: nats-server, the plane, three sidecars (see cluster.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from tenantguard.dev.natsserver import NatsServer

from tests.harness.cluster import SERVICES, Cluster
from tests.harness.waiting import eventually

PLANE_SERVICES = (*SERVICES, "exports")  # exports: a join secret exists, but a sidecar may present a wrong one


def _ready(cluster: Cluster, service: str) -> bool:
    status = cluster.status(service)
    issuers = status["trust"]["issuers"]
    return bool(status["ready"]) and status["trust"]["source"] == "plane" and "edge" in issuers and all(
        f"sidecar:{s}" in issuers for s in SERVICES)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("e2e")
    running = Cluster(root, NatsServer(root / "nats").start())
    try:
        running.init_plane_material(PLANE_SERVICES)
        running.start_plane(PLANE_SERVICES)
        running.trust_edge_issuer()
        running.publish_bundle_cli()
        with ThreadPoolExecutor(len(SERVICES)) as pool:
            list(pool.map(running.start_sidecar, SERVICES))
        for service in SERVICES:  # each has the bundle, and the trust set with every sidecar's registered key
            eventually(lambda s=service: _ready(running, s), f"{service} ready with the plane's trust set")
        yield running
    finally:
        pids = running.pids()
        running.close()
        alive = [pid for pid in pids if _alive(pid)]
        assert not alive, f"processes left running after the module: {alive}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
