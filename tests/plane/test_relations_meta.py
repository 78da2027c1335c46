"""Tuples with conditions, expiry and wildcards through a real plane and a real nats-server:
the write API, its refusals (nothing of a failing batch applied), listing and the events."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from tenantguard.feed import topology as topo
from tenantguard.feed.events import verify_batch
from tenantguard.relations.reads import TupleMeta

from tests.harness.nats_raw import read_stream
from tests.harness.paths import TENANTGUARD
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]


def rel(obj: str, subject: str, relation: str = "viewer", **extra: Any) -> dict[str, Any]:
    return {"tenant": "acme", "object": obj, "relation": relation, "subject": subject, **extra}


def test_conditions_expiry_and_wildcards_are_written_listed_and_published(world: World, plane: PlaneProcess) -> None:
    http = plane.client()
    written = http.post("/v1/relations", json={"changes": [
        {"op": "write", "rel": rel("doc:1", "user:anne", condition={"name": "ip_ok", "context": {"cidr": "10/8"}})},
        {"op": "write", "rel": rel("doc:2", "user:anne", expires_at="2030-01-01T01:00:00+01:00")},
        {"op": "write", "rel": rel("doc:3", "user:*")},
    ]})
    assert written.status_code == 200, written.text
    listed = http.get("/v1/relations", params={"tenant": "acme"}).json()["relations"]
    assert listed == [
        rel("doc:1", "user:anne", condition={"name": "ip_ok", "context": {"cidr": "10/8"}}),
        rel("doc:2", "user:anne", expires_at="2030-01-01T00:00:00Z"),  # normalised to UTC
        rel("doc:3", "user:*"),
    ]
    # the authoritative check is group expansion: a conditional or expiring tuple never grants there
    for doc in ("doc:1", "doc:2"):
        assert http.get("/v1/relations/check", params=rel(doc, "user:anne")).json()["allowed"] is False
    # rewriting without meta replaces it; a delete needs no meta
    http.post("/v1/relations", json={"changes": [{"op": "write", "rel": rel("doc:1", "user:anne")}]})
    assert http.get("/v1/relations/check", params=rel("doc:1", "user:anne")).json()["allowed"] is True
    http.post("/v1/relations", json={"changes": [{"op": "delete", "rel": rel("doc:2", "user:anne")}]})
    assert [r["object"] for r in http.get("/v1/relations", params={"tenant": "acme"}).json()["relations"]] == [
        "doc:1", "doc:3"]

    batches = [verify_batch(m.data, world.event_trust()) for m in read_stream(world.nats.url, topo.STREAM_RELATIONS)]
    first = {c.rel.object: c.rel.meta for c in batches[0].changes}
    assert first == {"doc:1": TupleMeta("ip_ok", {"cidr": "10/8"}), "doc:2": TupleMeta(expires_at=1893456000.0),
                     "doc:3": None}
    assert batches[0].changes[2].rel.subject == "user:*"


@pytest.mark.parametrize(("bad", "status", "code"), [
    (rel("doc:1", "user:a", condition={"name": "Bad"}), 400, "relationship_invalid"),
    (rel("doc:1", "user:a", condition={"name": "c", "context": {"r": 0.5}}), 400, "relationship_invalid"),
    (rel("doc:1", "user:a", condition={"name": "c", "context": {"k": "x" * 5000}}), 400, "relationship_invalid"),
    (rel("doc:1", "user:a", expires_at="tomorrow"), 400, "relationship_invalid"),
    (rel("doc:1", "user:a", expires_at="2030-01-01T00:00:00"), 400, "relationship_invalid"),
    (rel("doc:1", "user:*#member"), 400, "relationship_invalid"),
    (rel("doc:*", "user:a"), 400, "relationship_invalid"),
    (rel("doc:1", "user:a", condition="ip_ok"), 400, "invalid_request"),  # the model's shape
    (rel("doc:1", "user:a", expires_at=1893456000), 400, "invalid_request"),
])
def test_a_batch_with_one_bad_meta_is_refused_whole(world: World, plane: PlaneProcess, bad: dict[str, Any],
                                                    status: int, code: str) -> None:
    http = plane.client()
    answer = http.post("/v1/relations", json={"changes": [
        {"op": "write", "rel": rel("doc:ok", "user:alice")}, {"op": "write", "rel": bad}]})
    assert answer.status_code == status, answer.text
    assert answer.json()["error"] == code
    if code == "relationship_invalid":
        assert answer.json()["detail"]["index"] == 1
    assert read_stream(world.nats.url, topo.STREAM_RELATIONS) == []  # nothing was published
    assert http.get("/v1/relations", params={"tenant": "acme"}).json()["relations"] == []


def test_a_delete_carrying_meta_is_refused(world: World, plane: PlaneProcess) -> None:
    http = plane.client()
    answer = http.post("/v1/relations", json={"changes": [
        {"op": "delete", "rel": rel("doc:1", "user:a", condition={"name": "ip_ok"})}]})
    assert answer.status_code == 400 and "a delete removes the tuple" in answer.json()["message"]
    assert read_stream(world.nats.url, topo.STREAM_RELATIONS) == []


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TENANTGUARD, *args], capture_output=True, text=True, timeout=45)


def test_relation_write_cli_takes_meta_as_flags_or_as_zed_brackets(world: World, plane: PlaneProcess) -> None:
    auth = ["--plane", plane.base_url, "--token-file", str(world.token_file)]
    flags = _cli("relation", "write", "acme/doc:1#viewer@user:anne", "acme/doc:2#viewer@user:anne",
                 "--condition", "ip_ok", "--context", '{"cidr":"10/8"}', "--expires-at", "2030-01-01T00:00:00Z", *auth)
    assert flags.returncode == 0, flags.stderr
    brackets = _cli("relation", "write", 'acme/doc:3#viewer@user:anne[weekday:{"d":[1]}]', "acme/doc:4#viewer@user:*",
                    *auth)
    assert brackets.returncode == 0, brackets.stderr
    listed = json.loads(_cli("relation", "list", "--tenant", "acme", *auth).stdout)["relations"]
    both = {"condition": {"name": "ip_ok", "context": {"cidr": "10/8"}}, "expires_at": "2030-01-01T00:00:00Z"}
    assert listed == [rel("doc:1", "user:anne", **both), rel("doc:2", "user:anne", **both),
                      rel("doc:3", "user:anne", condition={"name": "weekday", "context": {"d": [1]}}),
                      rel("doc:4", "user:*")]
    check = _cli("relation", "check", "acme/doc:1#viewer@user:anne", *auth)  # group expansion: not granted
    assert check.returncode == 1 and json.loads(check.stdout)["allowed"] is False

    usage = [
        (["--context", '{"a":1}'], "--context needs --condition"),
        (["--condition", "c", "--context", "{nope"], "not JSON"),
        (["--condition", "c", "--context", "[1]"], "JSON object"),
        (["--expires-at", "tomorrow"], "RFC 3339"),
    ]
    for extra, needle in usage:
        done = _cli("relation", "write", "acme/doc:9#viewer@user:anne", *extra, *auth)
        assert done.returncode in (1, 2) and needle in done.stderr, (extra, done.stderr)
    mixed = _cli("relation", "write", "acme/doc:9#viewer@user:anne[ip_ok]", "--condition", "c", *auth)
    assert mixed.returncode == 2 and "not both" in mixed.stderr
    assert len(json.loads(_cli("relation", "list", "--tenant", "acme", *auth).stdout)["relations"]) == 4
