"""Decision records end to end: a real sidecar (sampling and masking on) publishes to
TG_DECISIONS, the real plane serves them; export through the CLI, explain re-evaluates, and
the sidecar keeps deciding with NATS gone. One small deployment for the module."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tenantguard.dev.natsserver import NatsServer

from tests.harness.cluster import Cluster
from tests.harness.paths import TENANTGUARD
from tests.harness.waiting import eventually

pytestmark = [pytest.mark.nats, pytest.mark.timeout(240)]

SERVICES = ("billing",)
MASK = "/input/context/note"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("records")
    running = Cluster(root, NatsServer(root / "nats").start())
    try:
        running.init_plane_material(SERVICES)
        running.start_plane(SERVICES)
        running.trust_edge_issuer()
        running.publish_bundle_cli()
        running.start_sidecar("billing", "--decision-log-sample-allow", "0.5", "--decision-log-mask", MASK,
                              "--sidecar-id", "billing-e2e")
        eventually(lambda: running.status("billing")["ready"] and "edge" in running.status("billing")["trust"][
            "issuers"], "billing ready")
        yield running
    finally:
        running.close()


def check(cluster: Cluster, token: str, project: str, tenant: str = "acme") -> bool:
    body = {"action": {"name": "invoices:read"},
            "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": tenant, "project": project}},
            "context": {"note": "card 4111", "forwarded": f"Bearer {token}"}}
    r = httpx.post(f"{cluster.url('billing')}/v1/check", json=body, headers={"Authorization": f"Bearer {token}"},
                   timeout=10)
    assert r.status_code == 200, r.text
    return bool(r.json()["allow"])


def cli(cluster: Cluster, *args: str) -> str:
    assert cluster.plane is not None
    done = subprocess.run([TENANTGUARD, *args, "--plane", cluster.plane.url,
                           "--token-file", str(cluster.keys / "admin.token")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def export(cluster: Cluster, *args: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in cli(cluster, "decisions", "export", *args).splitlines()]


def test_records_sampled_masked_exported_per_tenant_and_explained(cluster: Cluster) -> None:
    seq = cluster.write("acme/project:p1#member@user:alice", "globex/project:g1#member@user:gina")
    eventually(lambda: cluster.status("billing")["relations_seq"] >= seq, "relations at the sidecar")
    alice, bob, gina = (cluster.token("alice", "billing"), cluster.token("bob", "billing"),
                        cluster.token("gina", "billing", tenant="globex"))
    outcomes = [check(cluster, alice, "p1") for _ in range(30)] + [check(cluster, bob, "p1") for _ in range(10)]
    assert outcomes == [True] * 30 + [False] * 10
    assert check(cluster, gina, "g1", tenant="globex")

    def settled() -> dict[str, Any] | None:
        log = cluster.status("billing")["decision_log"]
        done = log["pending"] == 0 and log["stream"]["in_flight"] == 0 and log["submitted"] == log["stream"]["stored"]
        return log if done and log["submitted"] + log["sampled_out"] == 41 else None

    log = eventually(settled, "every kept record acknowledged by JetStream")
    assert log["dropped"] == 0 and log["sampled_out"] > 0  # 0.5 of 31 allows: some out (2**-31 chance of none)
    eventually(lambda: cluster.plane_status()["decisions"]["received"] == log["submitted"], "the plane has them all")

    acme = export(cluster, "--tenant", "acme")
    globex = export(cluster, "--tenant", "globex")  # gina's allow, unless sampled out
    assert {r["tenant"] for r in acme} == {"acme"} and {r["tenant"] for r in globex} <= {"globex"}
    assert len(acme) + len(globex) == log["submitted"]
    denies = [r for r in acme if not r["allow"]]
    assert len(denies) == 10 and all(r["reasons"] == ["not_project_member"] for r in denies)  # every deny kept
    first = acme[0]
    assert first["sidecar"] == "billing-e2e" and first["door"] == "native"
    assert first["path"] and first["bundle_revision"]
    assert first["relations_seq"] == seq and first["latency_us"] >= 0
    assert "note" not in first["input"]["context"] and first["input"]["context"]["forwarded"] == "[redacted]"
    assert set(first["erased"]) == {MASK, "/input/context/forwarded"}
    assert set(first["token"]) == {"jti", "iss", "kid"} and first["token"]["iss"] == "edge"
    text = json.dumps(acme)
    for token in (alice, bob):  # neither the token nor its signature, anywhere
        assert token not in text and token.rsplit(".", 1)[1] not in text

    opa = export(cluster, "--tenant", "acme", "--format", "opa")
    assert [e["decision_id"] for e in opa] == [r["decision_id"] for r in acme]
    assert opa[0]["path"] == "tenantguard/decision" and opa[0]["labels"]["id"] == "billing-e2e"

    # Explain re-evaluates on the same revision and relations state, and agrees.
    for record in (acme[0], denies[0]):
        explained = json.loads(cli(cluster, "explain", record["decision_id"]))
        assert explained["bundle"]["revision_available"] and explained["relations_state"]["relations_available"]
        again = explained["reevaluation"]
        assert again["same_result"] and again["allow"] is record["allow"], explained
        assert again["relations_consulted"]["input.relations"] == ({"project:p1": ["member"]} if record["allow"]
                                                                    else {})
    assert again["rules"]["available"] and "not_project_member" in again["rules"]["reasons"]

    # Relations move on: the old decision is replayed on its own sequence, rebuilt from the stream.
    cluster.write("acme/project:p1#member@user:bob")
    explained = json.loads(cli(cluster, "explain", denies[0]["decision_id"], "--tenant", "acme"))
    assert "rebuilt" in explained["relations_state"]["source"]
    assert explained["reevaluation"]["same_result"] and explained["reevaluation"]["allow"] is False


def test_a_sidecar_keeps_deciding_without_nats_and_counts_what_it_could_not_store(cluster: Cluster) -> None:
    alice = cluster.token("alice", "billing")
    before = cluster.status("billing")["decision_log"]["dropped"]
    cluster.nats.stop()
    assert all(check(cluster, alice, "p1") for _ in range(20))  # decisions from memory
    eventually(lambda: cluster.status("billing")["decision_log"]["dropped"] > before, "lost records counted")
