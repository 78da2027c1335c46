"""A staged rollout converges by itself after an announce failed behind a committed state.

A rollout step commits its signed ``rollout.state`` first and then announces the stage's
scopes. The failure reproduced here is what a replica killed between the two steps leaves
in JetStream: the state committed through the rollout writer, the archive stored, no
announce. Replicas run in-process (real NATS, real writers, real reconciler tasks) so the
"dead" replica's half-step is the writer's own commit; the sidecars are real ones with
their own feeds; one test drives a plane process over HTTP. Every wait polls a condition
with a deadline that only bounds a hang.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.bundle import build_bundle, verify_bundle
from tenantguard.feed import topology as topo
from tenantguard.feed.events import sign_event
from tenantguard.rollout import ROLLOUT_STATE, RolloutState

from authz_sidecar.config import SidecarConfig
from authz_sidecar.feed import Feed
from authz_sidecar.runtime import Sidecar
from policy_plane.config import PlaneConfig
from policy_plane.runtime import Plane
from policy_plane.secrets import SecretChecker
from tests.harness.fleet import FAST, POLICY, eventually
from tests.harness.plane_bundles import bundle_dir, upload
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World

TENANTGUARD = str(Path(sys.executable).with_name("tenantguard"))

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

FAST_RECONCILE = 0.2
ASLEEP = 3600.0  # a replica whose reconciler ran its first pass at start and then sleeps for the test


def bundle(world: World, serial: int, services: list[str] | None = None) -> bytes:
    """A small signed bundle (revision ``str(serial)``) for ``services`` (absent: scope ``all``)."""
    metadata: dict[str, Any] = {"decision": "data.feedtest.decision"}
    if services:
        metadata["services"] = services
    manifest = {"revision": str(serial), "roots": ["feedtest"], "metadata": metadata}
    files = {".manifest": json.dumps(manifest), "policy.rego": POLICY + f"\n# serial {serial}\n"}
    return build_bundle(files, str(serial), signing_key=world.bundle_key, serial=serial)


def config(world: World, interval: float) -> PlaneConfig:
    return PlaneConfig(nats_url=world.nats.url, event_key=world.event_key, bundle_key=world.bundle_key,
                       admin=SecretChecker.from_file(world.token_file), port=0, heartbeat_seconds=0.5,
                       rollout_reconcile_seconds=interval)


class Replicas:
    """In-process plane replicas and sidecars on the world's NATS, stopped at the end of the test."""

    def __init__(self, world: World, root: Path) -> None:
        self.world, self.root = world, root
        self.planes: list[Plane] = []
        self.feeds: list[Feed] = []

    async def plane(self, interval: float) -> Plane:
        plane = Plane(config(self.world, interval))
        await plane.start()
        self.planes.append(plane)
        return plane

    async def kill(self, plane: Plane) -> None:
        """The replica goes away (its connection closes; what it committed stays in JetStream)."""
        self.planes.remove(plane)
        await plane.stop()

    async def sidecar(self, service: str) -> Sidecar:
        plane_pem, bundle_pem = self.root / "plane.pub", self.root / "bundle.pub"
        plane_pem.write_bytes(self.world.event_key.public_pem())
        bundle_pem.write_bytes(self.world.bundle_key.public_pem())
        sidecar = Sidecar.from_config(SidecarConfig(service=service, nats_url=self.world.nats.url,
                                                    plane_key=plane_pem, bundle_keys=(bundle_pem,),
                                                    state_dir=self.root / f"sc-{service}", grpc_port=None))
        feed = Feed.for_sidecar(sidecar, FAST)
        feed.load_persisted()
        await feed.start()
        self.feeds.append(feed)
        return sidecar

    async def close(self) -> None:
        for feed in self.feeds:
            await feed.stop()
        for plane in self.planes:
            await plane.stop()


@pytest.fixture
async def replicas(world: World, tmp_path: Path) -> AsyncIterator[Replicas]:
    running = Replicas(world, tmp_path)
    yield running
    await running.close()


# ---------------------------------------------------------------------- the half-steps a dead replica leaves


async def commit_state(plane: Plane, state: RolloutState) -> None:
    """The first half of a rollout step: the signed state, committed by the rollout writer; no announce."""
    def build() -> bytes:
        return sign_event(plane.config.event_key, ROLLOUT_STATE, state.to_wire(), plane.state.rollout_seq + 1)

    await plane.writers["rollouts"].commit(build)


async def start_without_announcing(plane: Plane, archive: bytes, stages: tuple[tuple[str, ...], ...]) -> RolloutState:
    """``publish(..., stages=...)`` up to its commit: the archive stored, the state committed, stage 0 not announced."""
    signed = verify_bundle(archive, plane.state.bundle_verifier)
    name = f"rollouts/{signed.revision}.{signed.manifest.metadata['serial']}"
    await plane.publisher.put_object(topo.BUCKET_BUNDLES, name, archive)
    state = RolloutState.start(signed, sha256=hashlib.sha256(archive).hexdigest(), size=len(archive), object=name,
                               stages=stages, actor="ops")
    await commit_state(plane, state)
    return state


async def advance_without_announcing(plane: Plane) -> RolloutState:
    current = plane.state.rollout
    assert current is not None
    state = current.advance("ops")
    await commit_state(plane, state)
    return state


# ---------------------------------------------------------------------- probes


def runs(plane: Plane, scope: str, rollout: RolloutState) -> bool:
    announce = plane.state.announces.get(scope)
    return announce is not None and announce.sha256 == rollout.sha256 and announce.loaded


def runs_all(plane: Plane, scopes: tuple[str, ...], rollout: RolloutState) -> bool:
    return all(runs(plane, scope, rollout) for scope in scopes)


def reconciled(plane: Plane, outcome: str) -> float:
    return plane.metrics.registry.get_sample_value("tg_plane_rollout_reconciled_total", {"outcome": outcome}) or 0.0


async def passes(plane: Plane, count: int) -> None:
    """Wait until the replica's reconciler has started ``count`` more passes (so every pass under way when
    called has ended and been counted in the metrics; each new one looks at the current state)."""
    target = plane.bundles.reconciled.rounds + count
    await eventually(lambda: plane.bundles.reconciled.rounds >= target, f"{count} more reconciler passes")


async def bundles_stored(plane: Plane) -> int:
    """Messages ever stored in TG_BUNDLES: compaction removes older announces, never lowers this."""
    return await plane.publisher.stream_last_seq(topo.STREAM_BUNDLES)


# ---------------------------------------------------------------------- tests


async def test_a_rollout_left_half_done_by_a_dead_replica_is_announced_and_sidecars_activate_it(
        world: World, replicas: Replicas) -> None:
    dead = await replicas.plane(ASLEEP)
    await dead.bundles.publish(bundle(world, 1, ["billing", "orders"]), admin=True)
    orders, billing = await replicas.sidecar("orders"), await replicas.sidecar("billing")
    await eventually(lambda: orders.bundle_revision == "1" and billing.bundle_revision == "1", "sidecars on 1")

    # publish --stages, killed after the state commit: stage 0 (billing) never announced; then
    # advance, killed the same way: stage 1 (orders, reports) never announced either
    rollout = await start_without_announcing(dead, bundle(world, 2), (("billing",), ("orders", "reports"), ("all",)))
    advanced = await advance_without_announcing(dead)
    assert advanced.reached == ("billing", "orders", "reports") and advanced.status == "in_progress"
    assert not any(runs(dead, s, rollout) for s in advanced.reached)  # the failure, as JetStream holds it
    stored = await bundles_stored(dead)
    await replicas.kill(dead)

    survivor = await replicas.plane(FAST_RECONCILE)
    assert survivor.state.rollout == advanced
    await eventually(lambda: runs_all(survivor, advanced.reached, rollout), "reached scopes announced")
    await eventually(lambda: orders.bundle_revision == "2" and billing.bundle_revision == "2",
                     "the sidecars of the reached scopes activate the rollout's revision")
    await passes(survivor, 1)
    assert await bundles_stored(survivor) == stored + 3  # one announce per scope
    assert reconciled(survivor, "announced") == 3 and reconciled(survivor, "failed") == 0
    report = survivor.status()["rollout_reconcile"]
    assert sorted(a["scope"] for a in report["announced"]) == ["billing", "orders", "reports"]
    assert {a["revision"] for a in report["announced"]} == {"2"} and report["pending"] == []
    assert "all" not in survivor.state.announces  # the last stage is not reached: nothing beyond the state

    # the last stage, committed as ``completed`` by a replica that then failed to announce it
    last = await advance_without_announcing(survivor)
    assert last.status == "completed"
    await eventually(lambda: runs(survivor, "all", rollout), "the last stage (all) announced")
    await passes(survivor, 1)
    assert reconciled(survivor, "announced") == 4
    await passes(survivor, 3)  # converged: further passes announce nothing
    assert await bundles_stored(survivor) == stored + 4 and reconciled(survivor, "announced") == 4


async def test_scopes_that_got_a_newer_bundle_meanwhile_are_not_rolled_back(
        world: World, replicas: Replicas, caplog: pytest.LogCaptureFixture) -> None:
    dead = await replicas.plane(ASLEEP)
    await dead.bundles.publish(bundle(world, 1, ["billing", "orders"]), admin=True)
    started = await dead.bundles.publish(bundle(world, 2), admin=True, stages=(("billing",), ("orders",), ("all",)))
    assert [s["scope"] for s in started["scopes"]] == ["billing"] and "error" not in started["scopes"][0]
    rollout = dead.state.rollout
    assert rollout is not None and runs(dead, "billing", rollout)

    # meanwhile billing is rolled back (a newer serial of old content) and orders gets a later publish
    rolled = await dead.bundles.rollback("billing")
    await dead.bundles.publish(bundle(world, 3, ["orders"]), admin=True)
    await advance_without_announcing(dead)  # stage 1 (orders) committed, its announce "failed"
    before = {s: dead.state.announces[s] for s in ("billing", "orders")}
    assert (before["billing"].revision, before["orders"].revision) == (rolled["revision"], "3")
    stored = await bundles_stored(dead)
    await replicas.kill(dead)

    orders = await replicas.sidecar("orders")
    await eventually(lambda: orders.bundle_revision == "3", "orders runs the later publish")
    caplog.set_level(logging.INFO, logger="policy_plane.bundles")
    survivor = await replicas.plane(FAST_RECONCILE)
    await eventually(lambda: set(survivor.bundles.reconciled.left) == {"billing", "orders"},
                     "the reconciler leaves both scopes alone")
    assert {s: v["reason"] for s, v in survivor.bundles.reconciled.left.items()} == \
        {"billing": "superseded", "orders": "superseded"}
    await passes(survivor, 5)  # no retry loop: they are looked at again only if their announce changes
    assert reconciled(survivor, "superseded") == 2
    assert reconciled(survivor, "announced") == 0 and reconciled(survivor, "failed") == 0
    assert {s: survivor.state.announces[s].seq for s in before} == {s: a.seq for s, a in before.items()}
    assert await bundles_stored(survivor) == stored
    assert orders.bundle_revision == "3"
    left = [r for r in caplog.records if "is left at revision" in r.getMessage()]
    assert sorted(r.getMessage().split(" scope ")[1].split()[0] for r in left) == ["billing", "orders"]
    assert all(r.levelno == logging.INFO for r in left)

    # the rollout still reaches the next stage: all gets the rollout's bundle (a sidecar keeps the later one)
    done = await survivor.bundles.rollout_step(rollout.id, "advance", "ops")
    assert [(s["scope"], "error" in s) for s in done["scopes"]] == [("all", False)]
    await passes(survivor, 3)
    assert survivor.state.announces["orders"].revision == "3"
    assert survivor.state.announces["billing"].revision == rolled["revision"]


async def test_an_aborted_rollout_is_not_reconciled(world: World, replicas: Replicas) -> None:
    dead = await replicas.plane(ASLEEP)
    rollout = await start_without_announcing(dead, bundle(world, 2), (("billing",), ("all",)))
    aborted = await dead.bundles.rollout_step(rollout.id, "abort", "ops")
    assert aborted["rollout"]["status"] == "aborted" and aborted["scopes"] == []
    stored = await bundles_stored(dead)
    await replicas.kill(dead)

    survivor = await replicas.plane(FAST_RECONCILE)
    await passes(survivor, 5)
    assert "billing" not in survivor.state.announces
    assert await bundles_stored(survivor) == stored
    assert sum(reconciled(survivor, o) for o in ("announced", "superseded", "failed")) == 0
    assert survivor.status()["rollout_reconcile"]["pending"] == []


async def test_two_replicas_reconciling_at_once_announce_each_scope_once(world: World, replicas: Replicas) -> None:
    first, second = await replicas.plane(ASLEEP), await replicas.plane(ASLEEP)
    stages = (("billing", "orders", "reports"), ("all",))
    rollout = await start_without_announcing(first, bundle(world, 2), stages)
    await eventually(lambda: second.state.rollout == rollout, "both replicas hold the state")
    stored = await bundles_stored(first)

    # the first pass of each notes what lacks the bundle; the second acts: both at once, racing
    noted = await asyncio.gather(first.bundles.reconcile_rollout(), second.bundles.reconcile_rollout())
    assert noted == [[], []]
    assert sorted(first.bundles.reconciled.pending) == sorted(second.bundles.reconciled.pending) == \
        ["billing", "orders", "reports"]
    acted = await asyncio.gather(first.bundles.reconcile_rollout(), second.bundles.reconcile_rollout())
    announced = sorted(scope for outcomes in acted for scope, outcome in outcomes if outcome == "announced")
    assert announced == ["billing", "orders", "reports"], acted
    assert all(outcome == "announced" for outcomes in acted for _, outcome in outcomes)
    assert await bundles_stored(first) == stored + 3
    for plane in (first, second):
        await eventually(functools.partial(runs_all, plane, stages[0], rollout), "both replicas see it")
        assert {s: plane.state.announces[s].seq for s in stages[0]} == {s: 1 for s in stages[0]}


async def test_two_replicas_with_running_reconcilers_announce_each_scope_once(world: World,
                                                                             replicas: Replicas) -> None:
    first, second = await replicas.plane(FAST_RECONCILE), await replicas.plane(FAST_RECONCILE)
    reports = await replicas.sidecar("reports")
    stored = await bundles_stored(first)
    rollout = await start_without_announcing(first, bundle(world, 2), (("billing", "orders", "reports"), ("all",)))
    for plane in (first, second):
        await eventually(functools.partial(runs_all, plane, ("billing", "orders", "reports"), rollout),
                         "every replica sees the three scopes on the rollout's bundle")
    # up to 60 s: two replicas and a sidecar share this process, and on a loaded CI machine (its followers
    # once stalled 2 s and were restarted) activation took past the usual 20 s
    await eventually(lambda: reports.bundle_revision == "2", "the reports sidecar activates revision 2", 60.0)
    for plane in (first, second):
        await passes(plane, 3)
    assert await bundles_stored(first) == stored + 3
    assert {s: first.state.announces[s].seq for s in ("billing", "orders", "reports")} == \
        {"billing": 1, "orders": 1, "reports": 1}
    assert reconciled(first, "announced") + reconciled(second, "announced") == 3


def _scrape(plane: PlaneProcess, name: str, **labels: str) -> float:
    text = httpx.get(f"{plane.base_url}/metrics", timeout=10).text
    want = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else "")
    return next((float(line.split()[-1]) for line in text.splitlines() if line.startswith(want + " ")), 0.0)


def _until(probe: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        time.sleep(0.05)


def test_an_advance_whose_announce_fails_answers_the_scope_error_not_a_5xx(world: World, tmp_path: Path) -> None:
    plane = world.start("--rollout-reconcile-seconds", "0.2")
    http = plane.client()
    assert upload(plane, build_bundle(bundle_dir(tmp_path / "a", services=["billing", "orders"]), "r1",
                                      serial=1))[0] == 200
    started = http.post("/v1/bundles", params={"stages": "billing;orders"},
                        content=build_bundle(bundle_dir(tmp_path / "b"), "r2", serial=2),
                        headers={"Content-Type": "application/gzip"})
    assert started.status_code == 200, started.text
    rollout = started.json()["rollout"]
    assert [s["scope"] for s in started.json()["scopes"]] == ["billing"]
    # a later bundle reaches orders before the rollout does: the advance cannot announce it there
    assert upload(plane, build_bundle(bundle_dir(tmp_path / "c", services=["orders"]), "r3", serial=3))[0] == 200

    # through the CLI, as a scripted rollout drives it: committed, but a scope not announced is exit 3
    advanced = subprocess.run([TENANTGUARD, "bundle", "rollout", "advance", rollout["id"], "--plane",
                               plane.base_url, "--token-file", str(world.token_file)],
                              capture_output=True, text=True, timeout=60)
    assert advanced.returncode == 3, (advanced.returncode, advanced.stderr)
    assert "not announced orders: bundle_rollback" in advanced.stderr
    assert "not retried" in advanced.stderr and "billing" not in advanced.stderr
    body = json.loads(advanced.stdout)
    assert body["rollout"]["status"] == "completed" and body["rollout"]["reached"] == ["billing", "orders"]
    [entry] = body["scopes"]
    assert entry["scope"] == "orders"
    assert (entry["error"]["code"], entry["error"]["will_retry"]) == ("bundle_rollback", False)

    view = _until(lambda: (v := http.get("/v1/rollouts").json())["reconcile"]["left"].get("orders") and v,
                  "the reconciler leaves orders alone")
    assert view["reconcile"]["left"]["orders"]["reason"] == "superseded"
    assert view["scopes"]["orders"]["revision"] == "r3" and view["scopes"]["billing"]["revision"] == "r2"
    rounds = plane.status()["rollout_reconcile"]["rounds"]
    plane.wait_until(lambda s: s["rollout_reconcile"]["rounds"] >= rounds + 5)
    assert _scrape(plane, "tg_plane_rollout_reconciled_total", outcome="superseded") == 1.0
    assert plane.status()["bundles"]["orders"]["revision"] == "r3"
    [step] = [e for e in http.get("/v1/audit").json()["entries"] if e["action"] == "rollouts.advance"]
    assert step["detail"]["unannounced"] == ["orders"]
    _, err = plane.stop()
    assert err.count("is left at revision r3") == 1, err[-3000:]
