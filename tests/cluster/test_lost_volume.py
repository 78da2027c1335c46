"""A lost volume (issue 33): a NATS node back with an empty store, a sidecar with a wiped state dir.

The node rejoins and JetStream copies every stream back to it from its peers; it is then a
full replica again (proved by stopping another node: the cluster keeps its quorum with it and
still holds every acknowledged write). A sidecar whose ``--state-dir`` is gone starts as a new
one: the snapshot and the stream give it every relation and the kill switch written before.
docs/operations.md ("Lost volumes") says what an operator must keep and what is safe to lose.
"""

from __future__ import annotations

import shutil
import time

import pytest
from tenantguard.feed import topology as topo

from tests.harness.r3_cluster import Deployment
from tests.harness.r3_workload import converge
from tests.harness.waiting import eventually

pytestmark = [pytest.mark.nats, pytest.mark.timeout(300)]

STREAMS = [*topo.STREAMS, *topo.PLANE_STREAMS]


def _allowed(dep: Deployment, service: str, sub: str, tenant: str, project: str) -> bool:
    answer = dep.check(service, sub, tenant=tenant, project=project)
    return answer.status_code == 200 and bool(answer.json()["allow"])


def test_a_node_back_with_an_empty_store_is_a_full_replica_again(dep: Deployment) -> None:
    dep.nats.wait_healthy(timeout=60, streams=STREAMS)
    before = dep.write(0, "vandelay/project:lv1#member@user:lena")
    assert before.status_code == 200, before.text

    lost = 1
    store = dep.nats.nodes[lost].store_dir / "jetstream"
    assert store.is_dir(), store
    dep.nats.stop(lost)
    shutil.rmtree(store)
    started = time.monotonic()
    dep.nats.start_node(lost, timeout=60)
    dep.nats.wait_healthy(timeout=120, streams=STREAMS)  # every replica current, the empty one included
    print(f"\nnode n{lost} back with an empty store: every stream caught up in {time.monotonic() - started:.1f} s")
    assert store.is_dir()

    # Its copies count now: with another node down, a write needs the rebuilt node for its quorum.
    other = 2
    dep.nats.stop(other)
    try:
        after = eventually(lambda: (r := dep.write(1, "vandelay/project:lv2#member@user:lena")).status_code == 200
                           and r, "a write with n2 down", timeout=60)
        assert after.json()["consistency_token"] > before.json()["consistency_token"]
    finally:
        dep.nats.start_node(other, timeout=60)
    dep.nats.wait_healthy(timeout=120, streams=STREAMS)
    batches = [b for _, b in dep.stored_batches()]
    assert [b.seq for b in batches] == list(range(1, len(batches) + 1))  # gap-free, nothing lost
    written = {c.rel.object for b in batches for c in b.changes}
    assert {"project:lv1", "project:lv2"} <= written
    converge(dep)


def test_a_sidecar_with_a_wiped_state_dir_bootstraps_from_the_snapshot_and_the_stream(dep: Deployment) -> None:
    service = "billing"
    r = dep.write(0, "vandelay/project:lv3#member@user:lena", "hooli/project:h1#member@user:hank")
    assert r.status_code == 200, r.text
    eventually(lambda: _allowed(dep, service, "hank", "hooli", "h1"), "hank allowed before the kill switch")
    r = dep.revoke(1, "kill-hooli", kind="tenant", tenant="hooli")
    assert r.status_code == 200, r.text
    eventually(lambda: dep.check(service, "hank", tenant="hooli", project="h1").status_code == 401,
               "the kill switch reached the sidecar")

    dep.sidecars[service].stop()
    state = dep.root / "state" / service
    assert any(state.iterdir()), "the sidecar kept nothing to lose"
    shutil.rmtree(state)
    dep.start_sidecar(service)
    eventually(lambda: dep.sidecar_ready(service), "the wiped sidecar is ready", timeout=90)

    def caught_up() -> bool:
        # from its first answer on, the revoked tenant is never allowed while the relations arrive
        assert not _allowed(dep, service, "hank", "hooli", "h1"), "a revoked tenant allowed during bootstrap"
        return _allowed(dep, service, "lena", "vandelay", "lv3")

    eventually(caught_up, "relations from the snapshot and the stream", timeout=90)
    assert dep.check(service, "hank", tenant="hooli", project="h1").status_code == 401  # the kill switch
    converge(dep)
