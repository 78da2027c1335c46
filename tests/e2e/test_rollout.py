"""Safe rollout end to end: impact gate, staged rollout, fleet view, rollback, replayed announces.

One real deployment for the module (conftest): nats-server, ``tenantguard plane serve`` and
the orders, billing and reports sidecars. The candidate used throughout is a bundle that
would lock tenant acme's project members out (``project_relations`` narrowed to owners).
Every wait is a poll with a deadline that only bounds a hang.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import nats
import pytest
from tenantguard.bundle import content_revision
from tenantguard.feed import topology

from tests.harness.cluster import SERVICES, Cluster, metric
from tests.harness.nats_raw import get_object, publish_js
from tests.harness.paths import BUNDLE_DIR, TENANTGUARD
from tests.harness.waiting import eventually

pytestmark = pytest.mark.timeout(300)
ALICE = "acme/project:p1#member@user:alice"
DECLARED = [{"direction": "allow->deny", "tenant": "acme", "action": "invoices:*"}]  # the staged rollout's flips


async def _raw(url: str, action: Any) -> Any:
    nc = await nats.connect(url, connect_timeout=2, allow_reconnect=False)
    try:
        return await action(nc)
    finally:
        await nc.close()


def publish_core(url: str, subject: str, data: bytes) -> None:
    """A core-NATS publish, as a sidecar's decision log does it."""
    async def go(nc: Any) -> None:
        await nc.publish(subject, data)
        await nc.flush()
    asyncio.run(asyncio.wait_for(_raw(url, go), 30))


def get_last_msg(url: str, stream: str, subject: str) -> bytes:
    """The raw bytes of the last message stored on ``subject`` (a genuine signed event)."""
    async def go(nc: Any) -> bytes:
        return bytes((await nc.jetstream(timeout=5).get_last_msg(stream, subject)).data or b"")
    result: bytes = asyncio.run(asyncio.wait_for(_raw(url, go), 30))
    return result


def lockout_candidate(root: Path, revision: str, *, expected: list[dict[str, str]] | None = None) -> Path:
    """bundles/tenantguard with project access narrowed to owners: every member loses it.

    Its Rego tests are replaced by one that passes: the point is what a test suite did not
    catch (the plane runs the tests before anything else)."""
    target = root / revision
    shutil.copytree(BUNDLE_DIR, target, ignore=shutil.ignore_patterns("*_test.rego"))
    (target / "smoke_test.rego").write_text("package tenantguard.smoke_test\n\nimport rego.v1\n\n"
                                            "test_compiles if true\n")
    data = json.loads((target / "data.json").read_text())
    data["tenantguard"]["config"]["project_relations"] = ["owner"]
    (target / "data.json").write_text(json.dumps(data))
    manifest = json.loads((target / ".manifest").read_text())
    manifest["revision"] = revision
    if expected is not None:
        manifest.setdefault("metadata", {})["expected_flips"] = expected
    (target / ".manifest").write_text(json.dumps(manifest))
    return target


def cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    assert cluster.plane is not None
    return subprocess.run([TENANTGUARD, "bundle", *args, "--plane", cluster.plane.url, "--token-file",
                           str(cluster.keys / "admin.token")], capture_output=True, text=True, timeout=120)


def revisions(cluster: Cluster) -> dict[str, str]:
    return {s: cluster.status(s)["bundle_revision"] for s in SERVICES}


def recorded(tenant: str, service: str, subject: str, project: str) -> dict[str, Any]:
    """A decision record with the policy input, as the durable decision log is to send it (records.py)."""
    sub_id = subject.split(":", 1)[1]
    return {"v": 1, "tenant": tenant, "service": service, "action": "invoices:read", "subject": subject,
            "resource": "invoice:inv-1", "allow": True, "reasons": [], "bundle_revision": "1", "relations_seq": 1,
            "input": {"subject": {"type": "user", "id": sub_id, "properties": {"tenant_id": tenant,
                                                                               "roles": ["editor"]}},
                      "action": {"name": "invoices:read"},
                      "resource": {"type": "invoice", "id": "inv-1",
                                   "properties": {"tenant_id": tenant, "project": project}},
                      "context": {"service": service}, "token": None, "actor_chain": [],
                      "relations": {f"project:{project}": ["member"]}}}


@pytest.fixture(scope="module")
def baseline(cluster: Cluster) -> dict[str, str]:
    token = cluster.write(ALICE)
    assert all(cluster.allowed(s, "alice", at_least=token) for s in SERVICES)
    return revisions(cluster)


def test_the_impact_gate_refuses_a_candidate_that_locks_members_out(cluster: Cluster, baseline: dict[str, str],
                                                                    tmp_path: Path) -> None:
    before = cluster.plane_status()["bundles"]
    batch = {"decisions": [recorded("acme", "orders", "user:alice", "p1"), recorded("acme", "billing",
                                                                                   "user:alice", "p1")]}
    publish_core(cluster.nats.url, topology.decisions_subject("orders"), json.dumps(batch).encode())
    eventually(lambda: cluster.plane_status()["decisions"]["received"] >= 2, "the plane holds the recorded sample")

    done = cli(cluster, "publish", str(lockout_candidate(tmp_path, "lockout-1")), "--impact", "enforce")
    assert done.returncode == 1, done.stdout
    assert "impact_undeclared_flips" in done.stderr
    assert cluster.plane_status()["bundles"] == before  # nothing was stored or announced
    assert revisions(cluster) == baseline

    with cluster.plane_http() as client:  # the report names the flips: who, what, why
        archive = subprocess.run([TENANTGUARD, "bundle", "build", str(lockout_candidate(tmp_path, "lockout-2")),
                                  "-o", str(tmp_path / "c.tar.gz")], capture_output=True, timeout=60)
        assert archive.returncode == 0
        r = client.post("/v1/bundles", params={"impact": "enforce"}, content=(tmp_path / "c.tar.gz").read_bytes(),
                        headers={"Content-Type": "application/gzip"})
    assert r.status_code == 409, r.text
    report = r.json()["detail"]["report"]
    assert report["flips"]["allow->deny"] >= 2 and report["undeclared"] >= 2
    group = report["groups"][0]
    assert (group["direction"], group["tenant"], group["action"], group["reason"]) == \
        ("allow->deny", "acme", "invoices:read", "not_project_member")
    assert group["examples"][0]["subject"] == "user:alice"


def test_shadow_evaluation_reports_the_lockout_beside_the_active_bundle(cluster: Cluster, baseline: dict[str, str],
                                                                        tmp_path: Path) -> None:
    candidate = lockout_candidate(tmp_path, "shadow-1")
    shadow_revision = content_revision(candidate)  # as `bundle publish` names it: shadow-1-<12 hex>
    done = cli(cluster, "publish", str(candidate), "--shadow", "--max-per-second", "1000")
    assert done.returncode == 0, done.stderr
    announced = json.loads(done.stdout)
    assert announced["shadow"] is True and [s["scope"] for s in announced["scopes"]] == ["all"]
    assert announced["revision"] == shadow_revision and re.fullmatch(r"shadow-1-[0-9a-f]{12}", shadow_revision)
    eventually(lambda: all((cluster.status(s)["shadow"] or {}).get("revision") == shadow_revision
                           for s in SERVICES), "every sidecar evaluates shadow-1")

    def disagreements() -> bool:  # alice keeps being allowed; the shadow would have denied her
        assert all(cluster.allowed(s, "alice") for s in SERVICES)
        return all(cluster.status(s)["shadow"]["disagreed"]["allow->deny"] >= 1 for s in SERVICES)

    eventually(disagreements, "every sidecar counted the shadow's allow->deny")
    assert revisions(cluster) == baseline  # never activated
    example = cluster.status("orders")["shadow"]["examples"][-1]
    assert (example["subject"], example["active"]["allow"], example["shadow"]["allow"],
            example["shadow"]["reasons"]) == ("user:alice", True, False, ["not_project_member"])

    def plane_view() -> dict[str, Any] | None:
        shadow = json.loads(cli(cluster, "rollout", "status", "--json").stdout)["fleet"]["shadow"].get(
            shadow_revision)
        ok = shadow and all(shadow["services"].get(s, {}).get("allow->deny", 0) >= 1 for s in SERVICES)
        return shadow if ok else None

    shadow = eventually(plane_view, "the plane shows the disagreements of every service")
    assert any(e["subject"] == "user:alice" for e in shadow["examples"])

    # the signed shadow event replayed as an announce: refused by type, nothing activates
    rejected = {s: metric(cluster.metrics(s), "tg_events_rejected_total") for s in SERVICES}
    shadow_event = get_last_msg(cluster.nats.url, topology.STREAM_BUNDLES, topology.shadow_subject("all"))
    publish_js(cluster.nats.url, topology.bundle_subject("all"), shadow_event, topology.STREAM_BUNDLES)
    eventually(lambda: all(metric(cluster.metrics(s), "tg_events_rejected_total") > rejected[s] for s in SERVICES),
               "every sidecar refused the shadow event on the announce subject")
    assert revisions(cluster) == baseline and all(cluster.allowed(s, "alice") for s in SERVICES)

    assert cli(cluster, "shadow-stop", "--scope", "all").returncode == 0
    eventually(lambda: all(cluster.status(s)["shadow"] is None for s in SERVICES), "the shadow ended everywhere")


def test_a_staged_rollout_reaches_one_scope_then_more_and_can_be_halted(cluster: Cluster, baseline: dict[str, str],
                                                                        tmp_path: Path) -> None:
    candidate = lockout_candidate(tmp_path, "staged-1", expected=DECLARED)
    staged = content_revision(candidate)
    done = cli(cluster, "publish", str(candidate), "--stages", "billing;orders;all", "--impact", "enforce")
    assert done.returncode == 0, done.stderr
    started = json.loads(done.stdout)
    assert started["revision"] == started["rollout"]["revision"] == staged, started
    assert re.fullmatch(r"staged-1-[0-9a-f]{12}", staged) and baseline["orders"] == content_revision(BUNDLE_DIR)
    assert started["impact"]["undeclared"] == 0 and started["impact"]["declared"] >= 1
    rollout = started["rollout"]
    assert rollout["status"] == "in_progress" and rollout["reached"] == ["billing"]

    # stage 0: only billing runs the candidate (and locks alice out); the others keep the baseline
    eventually(lambda: cluster.status("billing")["bundle_revision"] == staged, "billing on staged-1")
    assert not cluster.allowed("billing", "alice")
    assert cluster.allowed("orders", "alice") and cluster.allowed("reports", "alice")
    assert revisions(cluster)["orders"] == baseline["orders"]

    def fleet() -> dict[str, Any] | None:
        view = json.loads(cli(cluster, "rollout", "status", "--json").stdout)
        by_service = view["fleet"]["by_service"]
        ok = by_service.get("billing") == {staged: 1} and by_service.get("orders") == {baseline["orders"]: 1}
        return view if ok else None

    view = eventually(fleet, "the plane's fleet view shows billing on staged-1 and orders on the baseline")
    assert view["rollout"]["id"] == rollout["id"]

    # halted: advancing is refused, nothing more is announced
    assert cli(cluster, "rollout", "halt", rollout["id"]).returncode == 0
    refused = cli(cluster, "rollout", "advance", rollout["id"])
    assert refused.returncode == 1 and "rollout_conflict" in refused.stderr
    assert cluster.plane_status()["rollout"]["status"] == "halted"
    assert cluster.status("orders")["bundle_revision"] == baseline["orders"]

    # the state lives in JetStream: a restarted plane still knows the rollout is halted
    assert cluster.plane is not None
    services = ("orders", "billing", "reports", "exports")
    cluster.plane.stop()
    plane = cluster.start_plane(services)
    eventually(lambda: cluster.plane_status()["ready"], "the restarted plane is ready")
    assert plane.alive() and cluster.plane_status()["rollout"]["status"] == "halted"

    assert cli(cluster, "rollout", "resume", rollout["id"]).returncode == 0
    advanced = json.loads(cli(cluster, "rollout", "advance", rollout["id"]).stdout)
    assert advanced["rollout"]["reached"] == ["billing", "orders"]
    eventually(lambda: cluster.status("orders")["bundle_revision"] == staged, "orders on staged-1")
    assert cluster.status("reports")["bundle_revision"] == baseline["reports"]
    last = json.loads(cli(cluster, "rollout", "advance", rollout["id"]).stdout)
    assert last["rollout"]["status"] == "completed"
    eventually(lambda: set(revisions(cluster).values()) == {staged}, "every sidecar on staged-1")
    assert not any(cluster.allowed(s, "alice") for s in SERVICES)


def test_rollback_restores_every_sidecar_and_a_replayed_announce_changes_nothing(
        cluster: Cluster, baseline: dict[str, str], tmp_path: Path) -> None:
    staged = content_revision(lockout_candidate(tmp_path, "staged-1", expected=DECLARED))  # the rollout's revision
    old_announce = get_last_msg(cluster.nats.url, topology.STREAM_BUNDLES, topology.bundle_subject("all"))
    done = cli(cluster, "rollback", "--scope", "all")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["restored"] == baseline["orders"] and result["rolled_back_from"] == staged
    restored = result["revision"]
    assert restored.startswith(f"{baseline['orders']}.rollback.")
    # billing and orders also hold staged-1 on their own scopes; the rollback is newer than both
    eventually(lambda: set(revisions(cluster).values()) == {restored}, "every sidecar on the restored revision")
    assert all(cluster.allowed(s, "alice") for s in SERVICES)

    # an attacker (or a confused operator) re-publishes the genuine, signed staged-1 announce
    duplicates = {s: metric(cluster.metrics(s), "tg_events_duplicate_total", kind="bundle:all") for s in SERVICES}
    publish_js(cluster.nats.url, topology.bundle_subject("all"), old_announce, topology.STREAM_BUNDLES)
    eventually(lambda: all(metric(cluster.metrics(s), "tg_events_duplicate_total", kind="bundle:all")
                           > duplicates[s] for s in SERVICES), "every sidecar saw the replay and ignored it")
    assert set(revisions(cluster).values()) == {restored}
    assert all(cluster.allowed(s, "alice") for s in SERVICES)
    assert cluster.plane_status()["bundles"]["all"]["revision"] == restored

    # a sidecar starting cold now (no state dir) still takes the newest signed announce, not the replay
    cluster.sidecars["reports"].stop()
    shutil.rmtree(cluster.state_dir("reports"))
    cluster.start_sidecar("reports")
    eventually(lambda: cluster.status("reports")["bundle_revision"] == restored, "a cold sidecar on the rollback")
    assert cluster.allowed("reports", "alice")

    # the genuine, plane-signed staged-1 archive pushed again: older serial than the rollback, refused
    signed = get_object(cluster.nats.url, topology.BUCKET_BUNDLES, f"bundles/all/{staged}")
    with cluster.plane_http() as client:
        r = client.post("/v1/bundles", content=signed, headers={"Content-Type": "application/gzip"})
        listed = client.get("/v1/bundles").json()["scopes"]
    assert r.status_code == 409 and r.json()["error"] == "bundle_rollback", r.text
    assert {s["scope"]: s["revision"] for s in listed}["all"] == restored


def test_rollback_without_a_target_is_refused(cluster: Cluster) -> None:
    done = cli(cluster, "rollback", "--scope", "reports")
    assert done.returncode == 1 and "rollback_target_missing" in done.stderr
