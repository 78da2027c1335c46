"""Relationship writes at a real plane are checked against the active bundle's schema.

Each test starts its own nats-server and plane replica (subprocess), publishes bundles with a
``schema.fga`` through the API and writes through the API, the hot write door, the CLI and the
SDK's plane client. A tuple the schema forbids is a 422 naming the rule, the change's position
and the tuple; nothing of its batch is applied (the relations stream does not move); deletes are
never refused; the schema follows publish, rollback and a staged rollout's candidate, on every
replica; an idempotent retry of a committed write still gets its first outcome.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from tenantguard.client.plane import PlaneClient
from tenantguard.feed import topology as topo
from tenantguard.relations import RelationChange, Relationship
from tenantguard.schema.admission import TupleNotAllowed

from tests.harness.nats_raw import get_object, put_object, read_stream
from tests.harness.paths import TENANTGUARD
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import ADMIN_TOKEN, World

from .schemabundles import (
    SCHEMA_V1,
    SCHEMA_V2,
    active_revision,
    publish,
    rel,
    schema_bundle,
    stored,
    write,
)

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

# (the tuple, the rule it breaks, words of the message): each refused by SCHEMA_V1
FORBIDDEN = [
    (rel("folder:f1", "viewer", "user:anne"), "unknown_type", "type 'folder' is not in the schema"),
    (rel("doc:d1", "viewer", "group:eng#owner"), "subject_not_allowed", "not group#owner"),
    (rel("doc:d1", "owner", "user:*"), "subject_not_allowed", "doc#owner allows user; not user:*"),
    (rel("doc:d1", "owner", "user:anne", condition="in_office"), "subject_not_allowed", "not user with in_office"),
    (rel("doc:d1", "guest", "user:anne"), "subject_not_allowed", "allows user with in_office; not user"),
    (rel("doc:d1", "viewer", "user:anne", condition="nowhere"), "unknown_condition", "'nowhere'"),
    (rel("doc:d1", "can_view", "user:anne"), "not_assignable", "tuples cannot be written"),
    (rel("doc:d1", "editor", "user:anne"), "unknown_relation", "no relation 'editor'"),
]
ADMITTED = [
    rel("doc:d1", "viewer", "user:anne"),
    rel("doc:d1", "viewer", "group:eng#member"),
    rel("doc:d1", "viewer", "user:bob", condition="in_office"),
    rel("doc:d1", "public", "user:*"),
    rel("doc:d1", "guest", "user:carl", condition="in_office"),
    rel("doc:d1", "owner", "user:dana", expires_at="2030-01-01T00:00:00Z"),  # OpenFGA: expiry on any tuple
]


def relations_last_seq(world: World) -> int:
    messages = read_stream(world.nats.url, topo.STREAM_RELATIONS)
    return messages[-1].seq if messages else 0


def refused_body(response: Any, rule: str, index: int) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    body: dict[str, Any] = response.json()
    assert body["error"] == "tuple_not_allowed" and body["detail"]["rule"] == rule, body
    assert body["detail"]["index"] == index and body["message"].startswith(f"changes[{index}] ("), body
    return body


def test_each_forbidden_tuple_is_a_422_naming_its_rule_and_nothing_is_applied(
        world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    http = plane.client()
    publish(http, schema_bundle(tmp_path / "v1", "v1", 1, SCHEMA_V1))
    for bad, rule, words in FORBIDDEN:
        body = refused_body(write(http, bad), rule, 0)
        assert words in body["message"] and body["message"].endswith(f"(rule {rule})"), body
        assert body["detail"]["tuple"] == bad and body["detail"]["revision"] == "v1"
    assert stored(http) == [] and relations_last_seq(world) == 0

    # one bad change in a batch of good ones: the refusal names it, and none of the batch is applied
    bad, rule, _ = FORBIDDEN[2]
    batch = [ADMITTED[0], ADMITTED[1], bad, ADMITTED[2]]
    body = refused_body(write(http, *batch), rule, 2)
    assert body["detail"]["tuple"] == bad
    assert stored(http) == [] and relations_last_seq(world) == 0

    good = write(http, *ADMITTED)
    assert good.status_code == 200, good.text
    assert len(stored(http)) == len(ADMITTED) and relations_last_seq(world) == 1

    # the hot write door (this token is known now) answers the same refusal, byte for byte
    first, second = write(http, bad), write(http, bad)
    assert first.content == second.content and first.status_code == second.status_code == 422
    assert plane.status()["fast_writes"]["answered"] >= 1
    assert relations_last_seq(world) == 1

    # every refusal is in the audit ring, as refused, with its rule and position
    entries = http.get("/v1/audit", params={"limit": 100}).json()["entries"]
    refused = [e["detail"] for e in entries if e["action"] == "relations.write_refused"]
    assert len(refused) == len(FORBIDDEN) + 3
    assert {"code": "tuple_not_allowed", "rule": rule, "index": 2, "revision": "v1", "writes": 4, "deletes": 0,
            "tenants": ["acme"]} in refused
    assert [e["action"] for e in entries].count("relations.write") == 1

    # and counted by rule: one batch per FORBIDDEN entry, the mixed batch and the two hot-door ones
    metrics = http.get("/metrics").text
    for rule in {r for _, r, _ in FORBIDDEN}:
        want = sum(1 for _, r, _ in FORBIDDEN if r == rule) + (3 if rule == FORBIDDEN[2][1] else 0)
        assert f'tg_plane_relation_writes_refused_total{{rule="{rule}"}} {float(want)}' in metrics, (rule, want)


def test_without_a_schema_nothing_is_checked(world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    http = plane.client()
    anything = [bad for bad, _, _ in FORBIDDEN if "condition" not in bad]
    assert write(http, *anything).status_code == 200  # no bundle at all
    publish(http, schema_bundle(tmp_path / "plain", "plain", 1, None))
    assert write(http, rel("folder:f2", "owner", "user:*")).status_code == 200  # a bundle without a schema


def test_the_schema_follows_publish_and_rollback_and_deletes_always_work(
        world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    http = plane.client()
    editor = rel("doc:d1", "editor", "user:anne")
    publish(http, schema_bundle(tmp_path / "v1", "v1", 1, SCHEMA_V1))
    refused_body(write(http, editor), "unknown_relation", 0)

    publish(http, schema_bundle(tmp_path / "v2", "v2", 2, SCHEMA_V2))  # newly allows doc#editor
    keyed = write(http, editor, key="editor-once")
    assert keyed.status_code == 200, keyed.text
    assert stored(http) == [("doc:d1", "editor", "user:anne")]

    rolled = http.post("/v1/bundles/rollback", json={"scope": "all"})
    assert rolled.status_code == 200 and rolled.json()["restored"] == "v1", rolled.text
    body = refused_body(write(http, rel("doc:d2", "editor", "user:bob")), "unknown_relation", 0)
    assert body["detail"]["revision"] == rolled.json()["revision"]  # the rollback's revision holds v1's schema

    # a retry of the committed write gets its first outcome, not a refusal by the schema of now
    retried = write(http, editor, key="editor-once")
    assert retried.status_code == 200 and retried.headers.get("Idempotent-Replayed") == "true", retried.text
    assert retried.json()["consistency_token"] == keyed.json()["consistency_token"]

    # deleting the tuple the schema no longer admits works, alone or beside a good write
    before = relations_last_seq(world)
    deleted = write(http, editor, op="delete")
    assert deleted.status_code == 200, deleted.text
    assert stored(http) == [] and relations_last_seq(world) == before + 1
    mixed = http.post("/v1/relations", json={"changes": [{"op": "delete", "rel": rel("doc:d9", "editor", "user:x")},
                                                         {"op": "write", "rel": ADMITTED[0]}]})
    assert mixed.status_code == 200, mixed.text


def test_a_staged_rollouts_candidate_schema_admits_its_new_relations(
        world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    http = plane.client()
    publish(http, schema_bundle(tmp_path / "v1", "v1", 1, SCHEMA_V1))
    started = publish(http, schema_bundle(tmp_path / "v2", "v2", 2, SCHEMA_V2), stages="billing;all")
    rollout = started["rollout"]["id"]
    assert active_revision(plane) == "v1"  # stage 0 reached billing only

    # OpenFGA's migration order: the new relation's tuples are written before the rollout completes
    assert write(http, rel("doc:d1", "editor", "user:anne")).status_code == 200
    body = refused_body(write(http, rel("doc:d1", "owner", "user:*")), "subject_not_allowed", 0)
    assert body["detail"]["candidate"] == {"revision": "v2", "rule": "subject_not_allowed"}

    aborted = http.post(f"/v1/rollouts/{rollout}/abort")
    assert aborted.status_code == 200, aborted.text
    body = refused_body(write(http, rel("doc:d2", "editor", "user:bob")), "unknown_relation", 0)
    assert "candidate" not in body["detail"]  # an aborted rollout's schema admits nothing any more


def test_a_replaced_candidate_archive_admits_nothing(world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    """Someone with write access to tg-bundles swaps the rollout's archive for another one the plane
    signed (a bundle published to the orders service only) whose schema admits what they want: its
    digest is not the signed rollout state's, so it widens nothing (a retryable 503: the candidate
    cannot be read), and the active schema still admits its own."""
    http = plane.client()
    lenient = SCHEMA_V2.replace("define owner: [user]", "define owner: [user, user:*]")
    publish(http, schema_bundle(tmp_path / "orders", "orders1", 1, lenient, services=["orders"]))
    genuine = get_object(world.nats.url, topo.BUCKET_BUNDLES, "bundles/orders/orders1")
    publish(http, schema_bundle(tmp_path / "v1", "v1", 1, SCHEMA_V1))
    started = publish(http, schema_bundle(tmp_path / "v2", "v2", 2, SCHEMA_V2), stages="billing;all")
    put_object(world.nats.url, topo.BUCKET_BUNDLES, started["rollout"]["object"], genuine)
    refused = write(http, rel("doc:d1", "owner", "user:*"))
    assert refused.status_code == 503 and refused.json()["error"] == "unavailable", refused.text
    assert "could not be read" in refused.json()["message"]
    assert write(http, ADMITTED[0]).status_code == 200
    assert stored(http) == [("doc:d1", "viewer", "user:anne")]


def test_a_second_replica_refuses_the_same_and_follows_a_publish(world: World, tmp_path: Path) -> None:
    one, two = world.start(), world.start()
    publish(one.client(), schema_bundle(tmp_path / "v1", "v1", 1, SCHEMA_V1))
    two.wait_until(lambda s: (s["bundles"].get("all") or {}).get("revision") == "v1")
    bad, rule, _ = FORBIDDEN[1]
    at_one, at_two = write(one.client(), ADMITTED[0], bad), write(two.client(), ADMITTED[0], bad)
    assert refused_body(at_one, rule, 1) == refused_body(at_two, rule, 1)
    editor = rel("doc:d1", "editor", "user:anne")
    refused_body(write(two.client(), editor), "unknown_relation", 0)
    publish(one.client(), schema_bundle(tmp_path / "v2", "v2", 2, SCHEMA_V2))
    two.wait_until(lambda s: (s["bundles"].get("all") or {}).get("revision") == "v2")
    assert write(two.client(), editor).status_code == 200
    assert relations_last_seq(world) == 1


def test_the_cli_and_the_sdk_client_say_why(world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    publish(plane.client(), schema_bundle(tmp_path / "v1", "v1", 1, SCHEMA_V1))
    done = subprocess.run([TENANTGUARD, "relation", "write", "acme/doc:d1#viewer@user:anne",
                           "acme/doc:d1#owner@user:*", "--plane", plane.base_url, "--token-file",
                           str(world.token_file)], capture_output=True, text=True, timeout=45)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    said = " ".join(done.stderr.split())  # the console wraps long lines
    assert ("error tuple_not_allowed: changes[1] (acme / doc:d1#owner @ user:*): doc#owner allows user; "
            "not user:* (rule subject_not_allowed)") in said, done.stderr

    changes = [RelationChange("write", Relationship("acme", "doc:d1", "guest", "user:anne"))]
    with PlaneClient(plane.base_url, token=ADMIN_TOKEN, retry_for=0) as client, \
            pytest.raises(TupleNotAllowed) as caught:
        client.write(changes)
    assert caught.value.rule == "subject_not_allowed" and caught.value.http_status == 422
    assert caught.value.detail["index"] == 0 and caught.value.detail["tuple"]["relation"] == "guest"
    assert stored(plane.client()) == []
