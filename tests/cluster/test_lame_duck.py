"""A node leaving in lame-duck mode (``nats-server --signal ldm=PID``, what a rolling update or a
drained Kubernetes node does before the SIGTERM) moves every client without an error reaching
a caller: no write refused, no check failed.

The node hands its JetStream leaderships away, tells its clients (INFO ``ldm``) and closes
them within ``lame_duck_duration``. Found by these tests: each such exit cost the callers of the
plane a 503: a write in flight when the node closed its replica's connection (``publish ...:
NATS unavailable (TimeoutError)``), and one published while the relations stream's leader
handed over (``NoStreamResponseError``). Now the plane moves on the lame-duck notice and sends a
publish whose outcome is unknown again, unchanged, with its ``Nats-Msg-Id`` (policy_plane/writer.py);
the sidecars move on the notice too. Timings are printed (``-s``), never asserted.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from tenantguard.feed import topology as topo

from tests.harness.r3_cluster import Deployment
from tests.harness.r3_workload import Checker, WriteLoad, converge, no_error_surfaced
from tests.harness.waiting import eventually

pytestmark = [pytest.mark.nats, pytest.mark.timeout(300)]


def _meta_leader(dep: Deployment) -> int:
    return dep.nats.index_of(dep.nats.wait_healthy(streams=[topo.STREAM_RELATIONS]))


TARGETS: dict[str, Callable[[Deployment], int | None]] = {
    "a_replicas_node": lambda dep: dep.plane_node(0),
    "the_meta_leader": _meta_leader,
    "the_relations_stream_leader": lambda dep: dep.nats.stream_leader(topo.STREAM_RELATIONS),
}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_node_leaving_in_lame_duck_mode_surfaces_no_error(dep: Deployment, target: str) -> None:
    dep.nats.wait_healthy(streams=[topo.STREAM_RELATIONS, topo.STREAM_REVOCATIONS])
    converge(dep)
    (node,) = eventually(lambda: None if (n := TARGETS[target](dep)) is None else (n,), f"the node ({target})")
    sidecars_there = [s for s in dep.sidecars
                      if dep.nats.index_of(dep.sidecar_status(s)["feed_detail"]["server"]) == node]
    planes_there = [i for i in range(len(dep.planes)) if dep.plane_node(i) == node]
    load = WriteLoad(dep, threads=4, prefix=f"ldm-{target}").start()
    checkers = [Checker(dep, s).start() for s in dep.sidecars]
    try:
        load.wait_acked(10)
        started = time.monotonic()
        dep.nats.lame_duck(node)
        dep.nats.wait_exited(node, timeout=90)  # lame_duck_duration is 30 s in the harness
        exited = time.monotonic() - started
        load.wait_acked(load.acked() + 10, timeout=60)  # writes go on without the node
        for i in planes_there:
            assert dep.plane_node(i) not in (None, node), f"plane {i} still on n{node}"
        for service in sidecars_there:
            eventually(lambda s=service: dep.sidecar_status(s)["feed_detail"]["server"] is not None,
                       f"{service} attached again", timeout=60)
        dep.nats.start_node(node, timeout=60)
        dep.nats.wait_healthy(timeout=60, streams=[topo.STREAM_RELATIONS])
        load.wait_acked(load.acked() + 5, timeout=60)
    finally:
        load.stop()
        for checker in checkers:
            checker.stop()
    counts, convergence, republished = no_error_surfaced(dep, load, checkers, started)
    print(f"\nlame duck n{node} ({target}): exited {exited:.1f} s after the signal; {len(load.writes)} writes, "
          f"none refused; planes there {planes_there}, sidecars there {sidecars_there}; {republished} publishes "
          f"sent again so far; stream {counts}; converged in {convergence:.1f} s")
