"""Chaos run: a 3-node JetStream cluster (R3), two plane replicas and three sidecars under load,
while NATS nodes, the relations stream leader, the meta leader, plane replicas and sidecars are
killed, stopped (SIGSTOP/SIGCONT), restarted or sent into lame-duck mode, the whole cluster is
restarted, and a tenant kill switch is tripped mid-fault. On a proxied deployment (every client link and
every route through its own loopback proxy, tests/harness/client_links.py) it also partitions: a
sidecar's or a plane replica's link to its node blackholed, or one node's routes blackholed (the
node alone, the other two keeping quorum), each healed after the hold.

    python -m tests.cluster.chaos --duration 120            # the long run; prints JSON
    python -m tests.cluster.chaos --pause-hold 12           # SIGSTOP past JetStream's election timeouts
    python -m tests.cluster.chaos --kinds meta-ldm,cluster-restart --duration 0
    python -m tests.cluster.chaos --partitions --duration 120   # the partition kinds, proxied deployment
    pytest tests/cluster/test_chaos.py                       # the short run (one fault of each kind)
    pytest tests/cluster/test_chaos_partitions.py            # the short partition run (own deployment)

Every kind and option: docs/testing.md ("A NATS cluster under faults").

**Fault window.** Each fault has a window from the instant before the signal is sent
until the deployment is whole again: the faulted process restarted or resumed, every
NATS node's ``/healthz`` 200 with one meta leader and the relations and revocations
streams led with every replica current, every plane replica ``/ready`` 200, lagging on
no stream and having consumed the relations stream up to where it stood once the planes
were ready, and every sidecar ready with its feed ``live``. An HTTP attempt *overlaps* a window when its
[start, end] intersects it. Outside every window no attempt may be answered 5xx;
inside one, every refusal must be retryable (409/503 with ``Retry-After``, or no answer
at all), and retried with the same Idempotency-Key the write is applied exactly once.

**Verdict** (each a list of violations, all must be empty): an acknowledged write
missing from the stream or stored at another sequence than the one answered, a write
stored twice, a gap in the relations batches, digests of planes and sidecars that do
not converge after the last fault, a 5xx outside the windows, a non-retryable refusal,
a sidecar check that failed outside that sidecar's own fault windows, alice (a member)
denied, the revoked tenant allowed at a sidecar after that sidecar first denied it, or
a sidecar that never denied it, or a high-risk action not denied while every node was down.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tenantguard.client.plane import PlaneClient
from tenantguard.errors import TenantGuardError
from tenantguard.feed import topology as topo

from tests.harness.launch import kill_proc, signal_proc
from tests.harness.r3_cluster import Deployment
from tests.harness.r3_workload import Checker, Window, WriteLoad, in_any, summary_ms
from tests.harness.waiting import eventually

SHORT = ("leader-kill", "nats-pause", "plane-kill", "plane-pause", "sidecar-kill", "sidecar-pause")
LONG = ("nats-kill", "leader-kill", "nats-pause", "leader-pause", "nats-restart", "plane-kill", "plane-pause",
        "plane-restart", "sidecar-kill", "sidecar-pause", "sidecar-restart", "nats-ldm", "leader-ldm",
        "cluster-restart")
# partitions (need a proxied deployment): a sidecar's or a replica's link to the node it is attached
# to blackholed, both ways; one node's routes blackholed, both ways (a minority of one)
PARTITIONS = ("sidecar-cut", "plane-cut", "nats-isolate")
KINDS = frozenset(LONG) | {"meta-kill", "meta-pause", "meta-ldm"} | set(PARTITIONS)
REVOKED_TENANT = "globex"


@dataclass
class Chaos:
    dep: Deployment
    rng: random.Random
    hold: float = 2.0  # seconds a fault lasts before the process is restarted or resumed
    pause_hold: float | None = None  # seconds a NATS node stays SIGSTOPped (None: ``hold``)
    partition_hold: float | None = None  # seconds a partition lasts before the heal (None: ``hold``)
    gap: float = 1.0  # quiet seconds between faults (writes go on)
    windows: list[Window] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    revocation: dict[str, Any] = field(default_factory=dict)
    closed_while_gone: list[dict[str, Any]] = field(default_factory=list)  # high-risk probes, cluster down

    # ------------------------------------------------------------------ one fault

    def inject(self, kind: str, during: Callable[[], None] | None = None) -> Window:
        dep = self.dep
        window = Window(kind, "", time.monotonic())
        what, _, how = kind.partition("-")
        stopped = 0.0
        if what == "cluster":  # every node down (SIGTERM) together, then up together
            window.target = "all nodes"
            window.start = time.monotonic()
            for node in range(len(dep.nats.nodes)):
                dep.nats.stop(node)
            self._hold(during, self._probe_high_risk)
            dep.nats.start(timeout=90)
        elif how in ("cut", "isolate"):
            stopped = self._partition(window, what, during)
        elif what in ("nats", "leader", "meta"):
            node = None
            if what == "leader":
                node = dep.nats.stream_leader(topo.STREAM_RELATIONS)
            elif what == "meta":
                node = dep.nats.index_of(dep.nats.wait_healthy(timeout=60))
            if node is None:
                node = self.rng.choice(dep.nats.running())
            window.target = f"n{node}"
            window.start = time.monotonic()
            if how == "ldm":  # lame-duck mode: the node leaves by itself (30 s at most), then comes back
                dep.nats.lame_duck(node)
                dep.nats.wait_exited(node, timeout=90)
                if during is not None:
                    during()
                dep.nats.start_node(node, timeout=60)
            else:
                {"kill": dep.nats.kill, "pause": dep.nats.pause, "restart": dep.nats.stop}[how](node)
                self._hold(during, hold=self.pause_hold if how == "pause" else None)
                if how == "pause":
                    dep.nats.resume(node)
                else:
                    dep.nats.start_node(node, timeout=60)
        elif what == "plane":
            i = self.rng.randrange(len(dep.planes))
            window.target = f"plane{i}"
            window.start = time.monotonic()
            stopped = self._fault_process(dep.planes[i], how, during, window.start, lambda: dep.restart_plane(i))
        else:
            service = self.rng.choice(sorted(dep.sidecars))
            window.target = service
            window.start = time.monotonic()
            stopped = self._fault_process(dep.sidecars[service], how, during, window.start,
                                          lambda: dep.start_sidecar(service))
        self.windows.append(window)  # open-ended until whole again: other threads may look at it
        window.steps = {"signalled": stopped, "restored": round(time.monotonic() - window.start, 2)}
        self.wait_whole(window.steps, window.start)
        window.end = time.monotonic()
        return window

    def _fault_process(self, proc: Any, how: str, during: float, started: float, bring_back: Any) -> float:
        """Kill, pause or stop one plane or sidecar process, hold the fault, then bring it back;
        return how long the signal took to land."""
        {"kill": kill_proc, "pause": lambda p: signal_proc(p, signal.SIGSTOP),
         "restart": lambda p: p.stop()}[how](proc)
        stopped = round(time.monotonic() - started, 2)
        self._hold(during)
        if how == "pause":
            signal_proc(proc, signal.SIGCONT)
        else:
            bring_back()
        return stopped

    def _partition(self, window: Window, what: str, during: Callable[[], None] | None) -> float:
        """Blackhole a client's link to the node it is attached to, or every route of one node, hold
        the cut, heal it; return how long the cut took to set."""
        dep = self.dep
        if what == "nats":
            assert dep.routes is not None, "nats-isolate needs a deployment with proxied routes"
            node = self.rng.choice(dep.nats.running())
            window.target = f"n{node}"
            window.start = time.monotonic()
            dep.routes.isolate(node)
            cut = round(time.monotonic() - window.start, 2)
            self._hold(during, hold=self.partition_hold)
            dep.routes.heal()
            return cut
        assert dep.links is not None, f"{what}-cut needs a deployment with proxied client links"
        if what == "plane":
            i = self.rng.randrange(len(dep.planes))
            client, window.target = f"plane{i}", f"plane{i}"
            attached: Callable[[], int | None] = lambda: dep.plane_node(i)  # noqa: E731
        else:
            service = self.rng.choice(sorted(dep.sidecars))
            client, window.target = service, service

            def attached() -> int | None:
                detail = dep.sidecar_status(service)["feed_detail"]
                return dep.node_of(detail["server"]) if detail["connected"] and detail["server"] else None

        def named() -> list[int] | None:  # node 0 is falsy: eventually() waits for a list
            node = attached()
            return None if node is None else [node]

        node = eventually(named, f"{client} attached to a node", 30)[0]
        self.notes.append(f"{window.kind} #{len(self.windows) + 1}: {client} cut from n{node}")
        window.start = time.monotonic()
        dep.links.cut_off(client, node)
        cut = round(time.monotonic() - window.start, 2)
        self._hold(during, hold=self.partition_hold)
        dep.links.heal(client)
        return cut

    def _hold(self, during: Callable[[], None] | None, then: Callable[[], None] | None = None,
              hold: float | None = None) -> None:
        end = time.monotonic() + (self.hold if hold is None else hold)
        if during is not None:
            during()
        if then is not None:
            then()
        time.sleep(max(0.0, end - time.monotonic()))

    def _probe_high_risk(self) -> None:
        """With every node down, a high-risk action must fail closed at every sidecar (its feed is
        not live), while the plain checks go on from memory (the Checkers)."""
        for service in sorted(self.dep.sidecars):
            started = time.monotonic()
            try:
                r = self.dep.high_risk(service)
                body = r.json()
                outcome = {"status": r.status_code, "allow": body.get("allow"), "reasons": body.get("reasons")}
            except (httpx.HTTPError, ValueError) as exc:
                outcome = {"status": 0, "error": type(exc).__name__}
            self.closed_while_gone.append({"service": service, **outcome,
                                           "took_s": round(time.monotonic() - started, 3)})

    def wait_whole(self, steps: dict[str, float], start: float) -> None:
        dep = self.dep
        dep.nats.wait_healthy(timeout=90, streams=[topo.STREAM_RELATIONS, topo.STREAM_REVOCATIONS])
        steps["nats_healthy"] = round(time.monotonic() - start, 2)
        eventually(lambda: all(dep.plane_ready(i) for i in range(len(dep.planes))), "every plane ready", 90)
        steps["planes_ready"] = round(time.monotonic() - start, 2)
        # Ready is not enough: a replica whose relations follower is still being re-created says
        # ready until it has lagged 5 s. Whole means every replica has consumed what the stream
        # held a moment ago, lags nowhere, and reports ready.
        target = eventually(lambda: dep.nats.stream_last_seq(topo.STREAM_RELATIONS), "relations stream last seq", 90)

        def caught_up(i: int) -> bool:
            status = dep.plane_status(i)
            return bool(status["ready"]) and not status["lagging"] and status["relations"]["stream_seq"] >= target

        eventually(lambda: all(caught_up(i) for i in range(len(dep.planes))), "every plane caught up", 90)
        steps["planes_caught_up"] = round(time.monotonic() - start, 2)

        def sidecars_live() -> bool:
            for service in dep.sidecars:
                status = dep.sidecar_status(service)
                if not status["ready"] or status["feed_detail"]["state"] != "live":
                    return False
            return True

        eventually(sidecars_live, "every sidecar ready and live", 90)
        steps["sidecars_live"] = round(time.monotonic() - start, 2)

    # ------------------------------------------------------------------ the kill switch

    def trip_kill_switch(self) -> Callable[[], None]:
        """Returns the action to run during a fault: revoke the tenant, retrying with one key."""

        def revoke() -> None:  # through the library's client: one key, retried while refused
            started = time.monotonic()
            try:
                with PlaneClient(self.dep.planes[0].url, token=self.dep.admin_token, retry_for=60) as client:
                    seq = client.revoke({"kind": "tenant", "tenant": REVOKED_TENANT})
                    self.revocation = {"seq": seq, "retries": client.retries, "at": time.monotonic(),
                                       "took_s": round(time.monotonic() - started, 3)}
            except TenantGuardError as exc:
                self.revocation = {"failed": True, "error": str(exc)[:200]}

        def during() -> None:
            thread = threading.Thread(target=revoke, name="kill-switch", daemon=True)
            thread.start()
            self._revoker = thread

        return during


def run(root: Path, *, duration: float, kinds: tuple[str, ...], seed: int = 1, hold: float = 2.0,
        gap: float = 1.0, writers: int = 4, pause_hold: float | None = None, partition_hold: float | None = None,
        proxied: bool = False) -> dict[str, Any]:
    """Run the chaos; return the measurements and the verdict (``violations``). The deployment is
    proxied (client links and routes) when asked, or when a partition kind is among ``kinds``."""
    proxied = proxied or bool(set(kinds) & set(PARTITIONS))
    dep = Deployment(root, proxied=proxied, routes_proxied=proxied)
    started = time.monotonic()
    try:
        dep.start()
        report = run_on(dep, duration=duration, kinds=kinds, seed=seed, hold=hold, gap=gap, writers=writers,
                        pause_hold=pause_hold, partition_hold=partition_hold)
        report["proxied"] = proxied
        report["setup_s"] = round(time.monotonic() - started - report["run_s"], 1)
        return report
    finally:
        left = dep.close()
        if left:
            raise AssertionError(f"processes left running: {left}")


def run_on(dep: Deployment, *, duration: float, kinds: tuple[str, ...], seed: int = 1, hold: float = 2.0,
           gap: float = 1.0, writers: int = 4, write_pause: float = 0.01,
           pause_hold: float | None = None, partition_hold: float | None = None) -> dict[str, Any]:
    """The chaos on a running deployment (which it leaves running, whole again)."""
    rng = random.Random(seed)
    started = time.monotonic()
    r = dep.write(0, "acme/project:p1#member@user:alice", f"{REVOKED_TENANT}/project:g1#member@user:gina")
    assert r.status_code == 200, r.text
    for service in dep.sidecars:  # the revoked tenant is allowed everywhere before the switch
        eventually(lambda s=service: dep.check(s, "gina", tenant=REVOKED_TENANT, project="g1").json()["allow"],
                   f"{service} allows gina before the kill switch")
    chaos = Chaos(dep, rng, hold=hold, gap=gap, pause_hold=pause_hold, partition_hold=partition_hold)
    load = WriteLoad(dep, threads=writers, prefix=f"chaos{seed}", pause=write_pause).start()
    checkers = {s: Checker(dep, s).start() for s in dep.sidecars}
    load.wait_acked(5)
    t0 = time.monotonic()
    i = 0
    while i < len(kinds) or time.monotonic() - t0 < duration:
        kind = kinds[i % len(kinds)]
        chaos.inject(kind, chaos.trip_kill_switch() if i == 0 else None)
        i += 1
        time.sleep(gap)
    last_fault_end = chaos.windows[-1].end
    time.sleep(max(gap, 2.0))  # a quiet stretch after the last fault: writes must be plain 200s here
    load.stop()
    writers_stopped = time.monotonic()
    revoker = getattr(chaos, "_revoker", None)
    if revoker is not None:
        revoker.join(60)
    converged = eventually(dep.converged, "planes and sidecars hold the same relations", timeout=120)
    converged_at = time.monotonic()
    for service in dep.sidecars:  # the kill switch has reached every sidecar by now
        eventually(lambda s=service: checkers[s].globex_denied_at is not None, f"{service} denies {REVOKED_TENANT}")
    for checker in checkers.values():
        checker.stop()
    batches = dep.stored_batches()
    report = _verdict(dep, chaos, load, checkers, batches)
    report.update({
        "faults": [{"kind": w.kind, "target": w.target, "window_s": round(w.end - w.start, 2),
                    "steps_s": w.steps}
                   for w in chaos.windows],
        "run_s": round(time.monotonic() - started, 1),
        "chaos_s": round(last_fault_end - t0, 1),
        "convergence_after_last_fault_s": round(converged_at - last_fault_end, 2),
        "convergence_after_writers_stopped_s": round(converged_at - writers_stopped, 2),
        "relations": converged,
        "revocation": {k: v for k, v in chaos.revocation.items() if k != "at"},
        "high_risk_while_cluster_gone": chaos.closed_while_gone,
        "notes": chaos.notes,
    })
    return report


def _verdict(dep: Deployment, chaos: Chaos, load: WriteLoad, checkers: dict[str, Checker],
             batches: list[Any]) -> dict[str, Any]:
    violations: list[str] = []
    seqs = [b.seq for _, b in batches]
    if seqs != list(range(1, len(seqs) + 1)):
        violations.append(f"relations batches not gap-free: {seqs[:5]}...{seqs[-5:]}")
    where: dict[str, list[int]] = {}
    lost: list[Any] = []  # acknowledged, and missing or stored at another sequence
    doubled: list[Any] = []  # stored more than once
    for _, batch in batches:
        for change in batch.changes:
            rel = change.rel
            where.setdefault(f"{rel.tenant}/{rel.object}#{rel.relation}@{rel.subject}", []).append(batch.seq)
    windows = chaos.windows
    attempts = [a for w in load.writes for a in w.attempts]
    acked = [w for w in load.writes if w.token is not None]
    for write in load.writes:
        found = where.get(write.tuple_, [])
        if write.token is not None and found != [write.token]:
            violations.append(f"{write.tuple_}: answered {write.token}, stored at {found}")
            (doubled if len(found) > 1 else lost).append(write)
        elif write.token is None and len(found) > 1:
            violations.append(f"{write.tuple_}: never acknowledged, stored {len(found)} times")
            doubled.append(write)
    for a in attempts:
        if a.status >= 500 and not in_any(windows, a.start, a.end):
            violations.append(f"5xx outside every fault window: {a.status} {a.error} {a.message[:80]}")
        if a.status != 200 and not a.retryable:
            violations.append(f"non-retryable refusal: {a.status} {a.error} {a.message[:80]}")
    unacked = [w for w in load.writes if w.token is None]
    if unacked:
        violations.append(f"{len(unacked)} writes never acknowledged within the retry deadline")
    for service, checker in checkers.items():
        own = [w for w in windows if w.target == service]
        bad = [f for f in checker.failures if not in_any(own, f[0], f[1])]
        if bad:
            violations.append(f"{service}: {len(bad)} failed checks outside its own faults: {bad[:3]}")
        if checker.alice_denied:
            violations.append(f"{service}: alice denied {len(checker.alice_denied)} times")
        if checker.globex_allowed_after_deny:
            violations.append(f"{service}: {REVOKED_TENANT} allowed {len(checker.globex_allowed_after_deny)} times "
                              "after the kill switch had reached it")
        if checker.globex_denied_at is None:
            violations.append(f"{service}: never denied {REVOKED_TENANT}")
    for probe in chaos.closed_while_gone:
        if probe.get("allow") is not False:
            violations.append(f"high-risk action not denied while the cluster was gone: {probe}")
    if chaos.revocation.get("failed"):
        violations.append(f"kill switch never acknowledged: {chaos.revocation}")

    refusals: dict[str, dict[str, int]] = {}
    for a in attempts:
        if a.status == 200:
            continue
        kinds = [w.kind for w in windows if w.overlaps(a.start, a.end)] or ["outside"]
        label = f"{a.status} {a.error or a.message[:40]}".strip()
        for kind in kinds:
            refusals.setdefault(kind, {})
            refusals[kind][label] = refusals[kind].get(label, 0) + 1
    during = [w.end - w.start for w in acked if in_any(windows, w.start, w.end)]
    outside = [w.end - w.start for w in acked if not in_any(windows, w.start, w.end)]
    revoked_at = chaos.revocation.get("at")
    return {
        "violations": violations,
        "by_kind": _by_kind(windows, acked, lost, doubled, checkers),
        "writes": {"acknowledged": len(acked), "attempts": len(attempts), "replayed": sum(w.replayed for w in acked),
                   "retried": sum(1 for w in acked if len(w.attempts) > 1),
                   "answered_before_applied_here": sum(1 for w in acked if not w.applied_here),
                   "batches_in_stream": len(seqs)},
        "refusals_by_fault": refusals,
        "write_latency_during_faults": summary_ms(during),
        "write_latency_outside_faults": summary_ms(outside),
        "checks": {s: {"answered": c.answers, "failed": len(c.failures),
                       "failed_in_own_fault": len(c.failures) - sum(
                           1 for f in c.failures if not in_any([w for w in windows if w.target == s], f[0], f[1])),
                       "kill_switch_seen_after_s": None if revoked_at is None or c.globex_denied_at is None
                       else round(c.globex_denied_at - revoked_at, 3)}
                   for s, c in checkers.items()},
    }


def _by_kind(windows: list[Window], acked: list[Any], lost: list[Any], doubled: list[Any],
             checkers: dict[str, Checker]) -> dict[str, dict[str, Any]]:
    """Per fault kind: faults survived (each ended whole), writes acknowledged, lost and doubled
    among those whose [start, end] overlaps one of its windows, seconds from the restart, resume
    or heal to whole again (converged), and sidecar checks answered and failed inside its windows."""
    out: dict[str, dict[str, Any]] = {}
    for kind in dict.fromkeys(w.kind for w in windows):
        own = [w for w in windows if w.kind == kind]
        converge = [round(w.end - w.start - w.steps.get("restored", 0.0), 2) for w in own]
        out[kind] = {
            "faults_survived": len(own),
            "writes": {"acknowledged": sum(1 for w in acked if in_any(own, w.start, w.end)),
                       "lost": sum(1 for w in lost if in_any(own, w.start, w.end)),
                       "doubled": sum(1 for w in doubled if in_any(own, w.start, w.end))},
            "converged_after_s": {"median": round(statistics.median(converge), 2), "max": max(converge)},
            "window_s_max": round(max(w.end - w.start for w in own), 2),
            "checks_during": {"answered": sum(1 for c in checkers.values() for t in c.answered_at
                                              if in_any(own, t, t)),
                              "failed": sum(1 for c in checkers.values() for f in c.failures
                                            if in_any(own, f[0], f[1]))},
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of faults (at least one of each kind)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hold", type=float, default=3.0, help="seconds each fault lasts")
    parser.add_argument("--gap", type=float, default=2.0, help="quiet seconds between faults")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--root", type=Path, help="where processes keep stores and logs (default: a temp dir)")
    parser.add_argument("--short", action="store_true", help="the short sequence of the test suite")
    parser.add_argument("--kinds", help=f"comma-separated fault kinds, in this order (default: {','.join(LONG)}; "
                        f"also {','.join(sorted(KINDS - set(LONG)))})")
    parser.add_argument("--partitions", action="store_true",
                        help=f"the partition kinds ({','.join(PARTITIONS)}) on a proxied deployment")
    parser.add_argument("--proxied", action="store_true", help="every client link and route through its own "
                        "proxy, for any kinds (implied by a partition kind)")
    parser.add_argument("--partition-hold", type=float, help="seconds a partition lasts (default: --hold)")
    parser.add_argument("--pause-hold", type=float, help="seconds a NATS node stays SIGSTOPped (default: --hold); "
                        "past 10 it outlasts JetStream's election timeouts (4-9 s) and lost-quorum interval")
    args = parser.parse_args(argv)
    root = args.root or Path(tempfile.mkdtemp(prefix="tg-chaos-"))
    kinds = SHORT if args.short else tuple(args.kinds.split(",")) if args.kinds else PARTITIONS \
        if args.partitions else LONG
    unknown = set(kinds) - KINDS - set(SHORT)
    if unknown:
        parser.error(f"unknown fault kinds: {', '.join(sorted(unknown))}")
    report = run(root, duration=0 if args.short else args.duration, kinds=kinds, seed=args.seed, hold=args.hold,
                 gap=args.gap, writers=args.writers, pause_hold=args.pause_hold,
                 partition_hold=args.partition_hold, proxied=args.proxied)
    print(json.dumps(report, indent=2, default=str))
    if not report["violations"] and args.root is None:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"logs kept in {root}", file=sys.stderr)
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
