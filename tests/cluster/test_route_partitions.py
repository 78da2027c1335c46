"""A partition between NATS nodes (issue 33): one node cut from the other two, its clients with it.

Every route runs through its own proxy (tests/harness/client_links.RouteLinks) and every client
link too; the test pins plane replica 1 and sidecar ``billing`` to one node and the others to the
rest, then isolates that node. The two sides must behave as a partition demands: the majority
keeps writing; the minority's writes are never acknowledged (refused with a retryable error, and
after the heal a retry with the same key lands once); its replica says it is cut off (not ready,
heartbeats withheld) instead of telling its sidecar that the sidecar's stale state is current; and
that sidecar answers from memory but refuses high-risk actions. Found here: the minority replica
kept sending signed heartbeats, and the sidecar beside it kept confirming high-risk actions on
relations the majority had moved past (policy_plane/runtime.py, ``_watch_jetstream``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.harness.r3_cluster import Deployment
from tests.harness.r3_workload import Checker, WriteLoad, converge, stream_is_exact
from tests.harness.waiting import eventually

pytestmark = [pytest.mark.nats, pytest.mark.timeout(400)]

SERVICES = ("orders", "billing")
HOLD = 20.0  # seconds the partition is held: past the heartbeat validity (10 s) a sidecar relies on


@pytest.fixture(scope="module")
def rdep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    deployment = Deployment(tmp_path_factory.mktemp("routes"), proxied=True, routes_proxied=True,
                            services=SERVICES)
    try:
        deployment.start()
        r = deployment.write(0, "acme/project:p1#member@user:alice", "acme/project:p1#owner@user:alice")
        assert r.status_code == 200, r.text
        converge(deployment)
        yield deployment
    finally:
        left = deployment.close()
        assert not left, f"processes left running: {left}"




def _allowed(r: httpx.Response) -> bool:
    return r.status_code == 200 and bool(r.json()["allow"])


def test_a_minority_node_refuses_writes_and_its_sidecar_refuses_high_risk(rdep: Deployment) -> None:
    dep = rdep
    assert dep.links is not None and dep.routes is not None
    eventually(lambda: dep.plane_node_or_none(1) is not None, "plane 1 attached")
    minority = dep.plane_node_or_none(1)
    assert minority is not None
    majority = [n for n in range(3) if n != minority]
    dep.links.cut_off("plane1", *majority)  # the minority's clients reach only the minority node
    dep.links.cut_off("billing", *majority)
    dep.links.cut_off("plane0", minority)  # the majority's only the majority
    dep.links.cut_off("orders", minority)
    eventually(lambda: dep.sidecar_node("billing") == minority, "billing on the minority node", timeout=60)
    eventually(lambda: dep.sidecar_node("orders") in majority, "orders on the majority", timeout=60)
    eventually(lambda: dep.plane_node_or_none(0) in majority, "plane 0 on the majority", timeout=60)
    for service in SERVICES:
        eventually(lambda: _allowed(dep.high_risk(service)), f"high risk allowed at {service}", timeout=60)  # noqa: B023

    loads = {"majority": WriteLoad(dep, threads=1, prefix="maj", planes=[0], pause=0.05).start(),
             "minority": WriteLoad(dep, threads=1, prefix="min", planes=[1], pause=0.05).start()}
    checker = Checker(dep, "billing").start()
    seen: dict[str, float] = {}
    try:
        for load in loads.values():
            load.wait_acked(3)
        majority_acked = loads["majority"].acked()
        cut_at = time.monotonic()
        dep.routes.isolate(minority)
        while time.monotonic() - cut_at < HOLD:
            t = time.monotonic() - cut_at
            if "plane1_not_ready" not in seen and not dep.plane_ready(1):
                seen["plane1_not_ready"] = t
            if "billing_high_risk_refused" not in seen and not _allowed(dep.high_risk("billing")):
                seen["billing_high_risk_refused"] = t
            if "billing_high_risk_allowed_after" not in seen and "billing_high_risk_refused" in seen \
                    and _allowed(dep.high_risk("billing")):
                seen["billing_high_risk_allowed_after"] = t
            time.sleep(0.2)
        status = dep.plane_status(1)
        majority_during = loads["majority"].acked() - majority_acked
        heal_at = time.monotonic()
        dep.routes.heal()
        dep.links.heal()
        for load in loads.values():  # each writer finishes its write in hand: retried with its key until stored
            load.stop()
    finally:
        checker.stop()
        for load in loads.values():
            load.stop()
    eventually(lambda: all(dep.plane_ready(i) for i in range(2)), "both replicas ready", timeout=120)
    converge(dep)
    converged = time.monotonic() - heal_at
    # answers given while the node was isolated (the one in flight at the cut included)
    minority_attempts = [a for w in loads["minority"].writes for a in w.attempts if cut_at + 0.5 < a.end < heal_at]
    acked_on_minority = [a for a in minority_attempts if a.status == 200]
    exact = {side: stream_is_exact(dep, load) for side, load in loads.items()}
    codes = sorted({(a.status, a.error) for a in minority_attempts})
    print(f"\nnode n{minority} isolated {HOLD:g} s: plane 1 (on it) not ready after "
          f"{seen.get('plane1_not_ready', float('nan')):.1f} s (cut_off {status['cut_off']}); billing (on it) refused "
          f"high risk after {seen.get('billing_high_risk_refused', float('nan')):.1f} s; {majority_during} writes "
          f"acknowledged by the majority meanwhile, {len(minority_attempts)} attempts at the minority, "
          f"{len(acked_on_minority)} acknowledged ({codes}); {checker.answers} checks answered at billing, "
          f"{len(checker.failures)} failed; converged {converged:.1f} s after the heal; stream {exact}")
    assert minority_attempts, "no write was answered at the minority while it was isolated"
    assert not acked_on_minority, "the minority acknowledged a write"
    assert all(a.retryable for a in minority_attempts), sorted({(a.status, a.error) for a in minority_attempts})
    assert majority_during > 0, "the majority stopped taking writes"
    assert not checker.failures, checker.failures[:5]
    assert "billing_high_risk_refused" in seen, "a sidecar on the minority side kept confirming high-risk actions"
    assert "billing_high_risk_allowed_after" not in seen, "high risk allowed again before the heal"
    assert "plane1_not_ready" in seen and status["cut_off"], status
