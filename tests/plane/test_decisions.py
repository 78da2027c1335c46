"""Decision records on real plane processes over a real JetStream: validation, queries, paging,
restart, two replicas, credentials. Records are published as a sidecar (or an attacker with
NATS access) would: raw JetStream messages on ``tg.decisions.<service>.<tenant>``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tenantguard.feed import topology as topo

from tests.harness.decision_records import publish, record
from tests.harness.nats_raw import publish_js
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import ADMIN_TOKEN, JOIN_SECRET, World

OPERATOR_TOKEN = "operator-token-" + "c3" * 16


def ids(body: dict[str, Any]) -> list[str]:
    return [d["decision_id"] for d in body["decisions"]]


def all_pages(plane: PlaneProcess, **params: Any) -> tuple[list[str], set[str]]:
    """Every record of a query, page by page through the cursor; and the sources used."""
    http = plane.client()
    out: list[str] = []
    sources: set[str] = set()
    cursor = None
    for _ in range(100):
        body = http.get("/v1/decisions", params={**params, **({"cursor": cursor} if cursor else {})}).json()
        out += ids(body)
        sources |= set(body["sources"])
        cursor = body["next_cursor"]
        if cursor is None or (params.get("order") == "asc" and body["complete"] and not body["decisions"]):
            return out, sources
    raise AssertionError("paging did not end")


def test_records_are_validated_and_refused_ones_counted(world: World, plane: PlaneProcess) -> None:
    publish(world, [record(1), record(2, allow=False)])
    publish(world, [record(3, tenant="globex")], tenant="globex")
    publish(world, [record(4, tenant=None)], tenant=None)  # denied before a tenant was known
    publish(world, [record(5, service="orders")])  # billing's subject, claims orders: refused, not relabelled
    publish(world, [record(6, tenant="globex")])  # acme's subject, claims globex
    publish(world, [record(7, time="yesterday"), {"decision_id": 8}, "x", record(9)])
    hostile = [b"not json", b'{"decisions": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
               b'{"decisions": [{"tenant": "acme", "allow": NaN}]}', b'{"decisions": [], "decisions": []}']
    for message in hostile:
        publish_js(world.nats.url, topo.decisions_subject("billing", "acme"), message)
    publish_js(world.nats.url, "tg.decisions.billing.=zz", json.dumps({"decisions": [record(10)]}).encode())
    status = plane.wait_until(lambda s: s["decisions"]["last_seq"] == 11)
    stats = status["decisions"]
    assert stats["received"] == 5, stats  # 1, 2, 3, 4, 9
    assert stats["refused"] == {"malformed": 3, "service_mismatch": 1, "tenant_mismatch": 1}, stats
    assert stats["malformed"] == len(hostile) + 1

    http = plane.client()
    assert ids(http.get("/v1/decisions").json()) == ["d0009", "d0004", "d0003", "d0002", "d0001"]
    assert ids(http.get("/v1/decisions", params={"tenant": "acme"}).json()) == ["d0009", "d0002", "d0001"]
    assert ids(http.get("/v1/decisions", params={"allow": "false"}).json()) == ["d0002"]
    assert ids(http.get("/v1/decisions", params={"reason": "not_project_member"}).json()) == ["d0002"]
    assert ids(http.get("/v1/decisions", params={"resource": "invoice:i3"}).json()) == ["d0003"]
    assert ids(http.get("/v1/decisions", params={"jti": "j9"}).json()) == ["d0009"]
    assert ids(http.get("/v1/decisions", params={"since": 1_700_000_002, "until": 1_700_000_004}).json()) == [
        "d0004", "d0003", "d0002"]
    assert http.get("/v1/decisions/d0003").json()["tenant"] == "globex"
    assert http.get("/v1/decisions/d0005").json()["error"] == "not_found"
    opa = http.get("/v1/decisions", params={"decision_id": "d0001", "format": "opa"}).json()["decisions"][0]
    assert opa["path"] == "tenantguard/decision" and opa["bundles"] == {"tenantguard": {"revision": "r1"}}
    assert opa["result"]["allow"] is True and opa["labels"]["id"] == "billing-a" and opa["timestamp"].endswith("Z")
    bad = http.get("/v1/decisions", params={"cursor": "not-a-cursor"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_request"


def test_paging_through_window_and_stream_survives_restarts_and_replicas_agree(world: World) -> None:
    a = world.start("--decisions-window", "4")
    for i in range(1, 13):  # 12 messages; each replica keeps only the newest 4 records in memory
        publish(world, [record(i, tenant="acme" if i % 3 else "globex")], tenant="acme" if i % 3 else "globex")
    a.wait_until(lambda s: s["decisions"]["last_seq"] == 12)
    newest_first, sources = all_pages(a, limit=5)
    assert newest_first == [f"d{i:04d}" for i in range(12, 0, -1)] and sources == {"window", "stream"}
    oldest_first, _ = all_pages(a, limit=5, order="asc")
    assert oldest_first == newest_first[::-1]
    acme, _ = all_pages(a, tenant="acme", limit=3)
    assert acme == [f"d{i:04d}" for i in range(12, 0, -1) if i % 3]

    b = world.start("--decisions-window", "4")  # a second replica reads the same stream
    b.wait_until(lambda s: s["decisions"]["last_seq"] == 12)
    assert all_pages(b, limit=5)[0] == newest_first and all_pages(b, tenant="acme", limit=3)[0] == acme
    a.stop()
    restarted = world.start()  # after a restart, with the default window
    restarted.wait_until(lambda s: s["decisions"]["last_seq"] == 12)
    assert all_pages(restarted, limit=7)[0] == newest_first


def test_tail_cursor_returns_what_arrives_later(world: World, plane: PlaneProcess) -> None:
    publish(world, [record(1)])
    plane.wait_until(lambda s: s["decisions"]["last_seq"] == 1)
    http = plane.client()
    first = http.get("/v1/decisions", params={"tenant": "acme"}).json()
    assert ids(first) == ["d0001"]
    tail = http.get("/v1/decisions", params={"tenant": "acme", "order": "asc", "cursor": first["tail_cursor"]}).json()
    assert tail["decisions"] == [] and tail["complete"]
    publish(world, [record(2), record(3)])
    publish(world, [record(4, tenant="globex")], tenant="globex")
    plane.wait_until(lambda s: s["decisions"]["last_seq"] == 3)
    later = http.get("/v1/decisions", params={"tenant": "acme", "order": "asc", "cursor": tail["next_cursor"]}).json()
    assert ids(later) == ["d0002", "d0003"]


@pytest.mark.parametrize("path", ["/v1/decisions", "/v1/decisions/d1", "/v1/decisions/d1/explain", "/v1/audit"])
def test_reading_records_needs_the_admin_or_operator_token(world: World, path: str) -> None:
    token_file = world.root / "operator.token"
    token_file.write_text(OPERATOR_TOKEN)
    token_file.chmod(0o600)
    plane = world.start("--operator-token-file", str(token_file))
    for token, status in ((None, 401), ("wrong-token-0123456789abcdef", 403), (JOIN_SECRET, 403)):
        assert plane.client(token).get(path).status_code == status
    for token in (ADMIN_TOKEN, OPERATOR_TOKEN):
        assert plane.client(token).get(path).status_code in (200, 404)
    write = plane.client(OPERATOR_TOKEN).post("/v1/revocations", json={"kind": "tenant", "tenant": "acme"})
    assert write.status_code == 403 and write.json()["error"] == "forbidden"  # read-only
