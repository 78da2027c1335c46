"""A stream leader stepping down (``nats stream cluster step-down``, what an operator does before
maintenance and what nats-server does when it rebalances) surfaces no error to a caller.

While the relations stream elects a new leader, a publish meets no responder and a read may meet
a 503 for a moment: the writer sends a publish whose outcome is unknown again (policy_plane/writer.py),
and every read of the plane is asked again through the handover (``Publisher._read``). This held
before the read retries were added too (runs with them removed passed: the handover rarely meets a
writer's catch-up read, which tests/plane/test_handover_reads.py provokes directly); it guards the
fault as such. An attempt answered anything but 200 is a failure here, and so is a failed check.
"""

from __future__ import annotations

import asyncio
import json
import time

import nats
import pytest
from tenantguard.feed import topology as topo

from tests.harness.r3_cluster import Deployment
from tests.harness.r3_workload import Checker, WriteLoad, converge, no_error_surfaced
from tests.harness.waiting import eventually

pytestmark = [pytest.mark.nats, pytest.mark.timeout(300)]

STEP_DOWNS = 3


def _step_down(dep: Deployment, stream: str) -> str:
    """Ask the stream's leader to hand over (the JetStream API a ``nats`` CLI calls); its answer."""
    async def ask() -> str:
        nc = await nats.connect(dep.nats.urls.split(","), connect_timeout=5)
        try:
            reply = await nc.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}", b"", timeout=10)
            return reply.data.decode()
        finally:
            await nc.close()

    return asyncio.run(ask())


def _leader(dep: Deployment, other_than: int | None) -> tuple[int] | None:
    """The relations stream's leader, as a 1-tuple (node 0 is falsy), once it is not ``other_than``."""
    node = dep.nats.stream_leader(topo.STREAM_RELATIONS)
    return None if node is None or node == other_than else (node,)


def test_the_relations_stream_leader_stepping_down_surfaces_no_error(dep: Deployment) -> None:
    dep.nats.wait_healthy(streams=[topo.STREAM_RELATIONS, topo.STREAM_REVOCATIONS])
    converge(dep)
    load = WriteLoad(dep, threads=4, prefix="stepdown").start()
    checkers = [Checker(dep, s).start() for s in dep.sidecars]
    leaders = []
    try:
        load.wait_acked(10)
        started = time.monotonic()
        for _ in range(STEP_DOWNS):
            (before,) = eventually(lambda: _leader(dep, None), "a relations leader")
            answer = json.loads(_step_down(dep, topo.STREAM_RELATIONS))
            assert answer.get("success") is True, answer
            (after,) = eventually(lambda b=before: _leader(dep, b), "another relations leader")
            leaders.append((before, after))
            load.wait_acked(load.acked() + 10, timeout=60)  # writes go on under the new leader
    finally:
        load.stop()
        for checker in checkers:
            checker.stop()
    counts, convergence, republished = no_error_surfaced(dep, load, checkers, started)
    print(f"\nstep-downs {leaders}: {len(load.writes)} writes, none refused; {republished} publishes sent again so "
          f"far; stream {counts}; converged in {convergence:.1f} s")
