"""Relationship API against a real plane and a real nats-server."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from tenantguard.feed import topology as topo
from tenantguard.feed.events import verify_batch
from tenantguard.relations import ChangeBatch, RelationChange, Relationship
from tenantguard.relations.index import RelationIndex

from policy_plane.api.relations import expand_rows, list_page
from tests.harness.nats_raw import read_stream
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]


def rel(obj: str, subject: str, relation: str = "member", tenant: str = "acme") -> dict[str, str]:
    return {"tenant": tenant, "object": obj, "relation": relation, "subject": subject}


def test_write_check_list_delete_and_tokens_increase_by_one(world: World, plane: PlaneProcess) -> None:
    http = plane.client()
    first = http.post("/v1/relations", json={"changes": [{"op": "write", "rel": rel("project:p1", "user:alice")}]})
    assert first.status_code == 200, first.text
    assert first.json() == {"consistency_token": 1, "cell": "c0"}
    second = http.post("/v1/relations", json={"changes": [
        {"op": "write", "rel": rel("group:eng", "user:bob")},
        {"op": "write", "rel": rel("project:p2", "group:eng#member")},
    ]})
    assert second.json() == {"consistency_token": 2, "cell": "c0"}

    check = http.get("/v1/relations/check", params=rel("project:p2", "user:bob"))
    assert check.json() == {"allowed": True, "consistency_token": 2}
    other_tenant = http.get("/v1/relations/check", params=rel("project:p2", "user:bob", tenant="globex"))
    assert other_tenant.json()["allowed"] is False

    page = http.get("/v1/relations", params={"tenant": "acme", "limit": 2}).json()
    assert [r["object"] for r in page["relations"]] == ["group:eng", "project:p1"]
    rest = http.get("/v1/relations", params={"tenant": "acme", "limit": 2, "cursor": page["next_cursor"]}).json()
    assert [r["object"] for r in rest["relations"]] == ["project:p2"] and rest["next_cursor"] is None

    deleted = http.post("/v1/relations", json={"changes": [{"op": "delete", "rel": rel("group:eng", "user:bob")}]})
    assert deleted.json() == {"consistency_token": 3, "cell": "c0"}
    assert http.get("/v1/relations/check", params=rel("project:p2", "user:bob")).json() == {
        "allowed": False, "consistency_token": 3}

    stored = read_stream(world.nats.url, topo.STREAM_RELATIONS)
    batches = [verify_batch(m.data, world.event_trust()) for m in stored]
    assert [b.seq for b in batches] == [1, 2, 3]
    assert [len(b.changes) for b in batches] == [1, 2, 1]


def test_batch_with_one_invalid_tuple_is_refused_whole(world: World, plane: PlaneProcess) -> None:
    http = plane.client()
    bad = http.post("/v1/relations", json={"changes": [
        {"op": "write", "rel": rel("project:p1", "user:alice")},
        {"op": "write", "rel": rel("project:p1", "user:")},
    ]})
    assert bad.status_code == 400
    body = bad.json()
    assert body["error"] == "relationship_invalid" and body["detail"]["index"] == 1
    assert "changes[1]" in body["message"]
    bad_op = http.post("/v1/relations", json={"changes": [{"op": "grant", "rel": rel("project:p1", "user:a")}]})
    assert bad_op.status_code == 400 and bad_op.json()["error"] == "invalid_request"
    too_many = http.post("/v1/relations", json={"changes": [
        {"op": "write", "rel": rel(f"doc:d{i}", "user:a")} for i in range(1001)]})
    assert too_many.status_code == 413 and too_many.json()["error"] == "change_batch_too_large"
    assert read_stream(world.nats.url, topo.STREAM_RELATIONS) == []  # nothing was published
    assert http.get("/v1/relations/check", params=rel("project:p1", "user:alice")).json()["allowed"] is False


def test_a_full_batch_of_1000_is_one_event(world: World, plane: PlaneProcess) -> None:
    http = plane.client()
    changes = [{"op": "write", "rel": rel(f"doc:d{i}", f"user:u{i}")} for i in range(1000)]
    assert http.post("/v1/relations", json={"changes": changes}).json() == {"consistency_token": 1, "cell": "c0"}
    stored = read_stream(world.nats.url, topo.STREAM_RELATIONS)
    assert len(stored) == 1 and len(verify_batch(stored[0].data, world.event_trust()).changes) == 1000


def test_check_waits_for_a_consistency_token_and_validates_input(plane: PlaneProcess) -> None:
    http = plane.client()
    token = http.post("/v1/relations", json={"changes": [{"op": "write", "rel": rel("project:p1", "user:a")}]})
    seq = token.json()["consistency_token"]
    ok = http.get("/v1/relations/check", params={**rel("project:p1", "user:a"), "at_least": seq})
    assert ok.json() == {"allowed": True, "consistency_token": seq}
    future = http.get("/v1/relations/check", params={**rel("project:p1", "user:a"), "at_least": seq + 5})
    assert future.status_code == 503 and future.json()["error"] == "unavailable"
    invalid = http.get("/v1/relations/check", params=rel("project:p1", "user a"))
    assert invalid.status_code == 400 and invalid.json()["error"] == "relationship_invalid"
    bad_cursor = http.get("/v1/relations", params={"tenant": "acme", "cursor": "nope"})
    assert bad_cursor.status_code == 400


def test_listing_with_expand_shows_what_usersets_expand_to(world: World, plane: PlaneProcess) -> None:
    """`relation list --expand`: a userset subject lists the direct subjects a check would find
    through it, nested groups included; other tenants' members never appear."""
    def write(*tuples: tuple[str, str, str, str]) -> None:
        changes = [{"op": "write", "rel": {"tenant": t, "object": o, "relation": r, "subject": s}}
                   for t, o, r, s in tuples]
        plane.client().post("/v1/relations", json={"changes": changes}).raise_for_status()

    write(("acme", "project:p1", "viewer", "group:eng#member"),
          ("acme", "group:eng", "member", "user:alice"),
          ("acme", "group:eng", "member", "group:sre#member"),
          ("acme", "group:sre", "member", "user:bob"),
          ("acme", "group:eng", "admin", "user:carol"),  # another relation on the group: not a member
          ("globex", "group:eng", "member", "user:mallory"))
    http = plane.client()
    plain = http.get("/v1/relations", params={"tenant": "acme", "object": "project:p1"}).json()
    assert "expands_to" not in plain["relations"][0]
    page = http.get("/v1/relations", params={"tenant": "acme", "object": "project:p1", "expand": "true"}).json()
    [row] = page["relations"]
    assert row["subject"] == "group:eng#member"
    assert row["expands_to"] == ["user:alice", "user:bob"] and row["expansion_truncated"] is False
    for member in row["expands_to"]:  # each is what the authoritative check says
        check = http.get("/v1/relations/check", params={"tenant": "acme", "object": "project:p1",
                                                         "relation": "viewer", "subject": member})
        assert check.json()["allowed"] is True
    direct = http.get("/v1/relations", params={"tenant": "acme", "object": "group:sre", "expand": "true"}).json()
    assert "expands_to" not in direct["relations"][0]  # a direct subject has nothing to expand


class _CountingWalks:
    """A real tenant view that counts the userset walks asked of it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.walks: list[str] = []

    def members(self, userset: str, budget: int) -> Any:
        self.walks.append(userset)
        return self.inner.members(userset, budget=budget)


def test_a_page_walks_each_userset_once_however_many_rows_name_it() -> None:
    """1,000 rows naming one userset over 10,000 nested groups took 70 s of the event loop when
    each row walked it again; now each distinct userset is walked once per page, off the loop."""
    index = RelationIndex()
    changes = [RelationChange("write", Relationship("acme", "group:root", "member", f"group:g{i}#member"))
               for i in range(50)]
    changes += [RelationChange("write", Relationship("acme", f"group:g{i}", "member", f"user:u{i}"))
                for i in range(50)]
    changes += [RelationChange("write", Relationship("acme", f"doc:d{i}", "member", "group:root#member"))
                for i in range(300)]
    changes += [RelationChange("write", Relationship("acme", "doc:z", "member", "group:g7#member"))]
    index.apply(ChangeBatch(1, tuple(changes)))
    rows = [r.to_wire() for r in index.list("acme", None, None, None)]
    view = _CountingWalks(index.tenant("acme"))
    expand_rows(view, rows)
    usersets = {r["subject"] for r in rows if "#" in r["subject"]}
    assert len(usersets) == 51 and sorted(view.walks) == sorted(usersets)  # 351 userset rows, 51 walks
    root = [r for r in rows if r["subject"] == "group:root#member"]
    assert len(root) == 300 and all(r["expands_to"] == root[0]["expands_to"] for r in root)
    assert len(root[0]["expands_to"]) == 50 and root[0]["expansion_truncated"] is False
    assert next(r for r in rows if r["object"] == "doc:z")["expands_to"] == ["user:u7"]
    assert all("expands_to" not in r for r in rows if "#" not in r["subject"])


def test_a_listing_leaves_the_event_loop_free_and_pages_as_before() -> None:
    """A page walks the whole tenant (2 s at 200,000 tuples): it runs in a worker thread, so a
    coroutine scheduled meanwhile runs before the page is done; paging still covers every tuple once."""
    index = RelationIndex()
    index.apply(ChangeBatch(1, tuple(RelationChange("write", Relationship("acme", f"doc:d{i:03d}", "member",
                                                                           "user:alice")) for i in range(250))))
    # the request carries only what list_page reads: the app's state and the plane's index (a real one)
    request: Any = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(
        plane=SimpleNamespace(state=SimpleNamespace(index=index)))))

    async def pages() -> tuple[list[str], int]:
        ticks = 0
        stop = False

        async def ticker() -> None:
            nonlocal ticks
            while not stop:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        before, seen, after, during = ticks, [], None, 0
        while True:
            listed, after, total = await list_page(request, "acme", None, None, None, after, 100)
            during += ticks - before
            before = ticks
            seen += [r["object"] for r in listed]
            assert total == 250
            if after is None:
                break
        stop = True
        await task
        return seen, during

    seen, during = asyncio.run(pages())
    assert seen == [f"doc:d{i:03d}" for i in range(250)]
    assert during >= 3  # the ticker ran while each of the three pages was computed


@pytest.mark.parametrize(("params", "field"), [
    ({"tenant": "ACME"}, "tenant"),
    ({"tenant": "acme", "object": "Project:p1"}, "object type"),
    ({"tenant": "acme", "object": "project"}, "object"),
    ({"tenant": "acme", "relation": "Member"}, "relation"),
    ({"tenant": "acme", "subject": "user alice"}, "subject"),
])
def test_a_listing_filter_no_tuple_can_match_is_refused(plane: PlaneProcess, params: dict[str, str],
                                                        field: str) -> None:
    """``relation list --tenant ACME`` answered an empty page with exit 0, as if nothing were stored."""
    http = plane.client()
    assert http.post("/v1/relations", json={"changes": [{"op": "write", "rel": rel("project:p1", "user:alice")}]}
                     ).status_code == 200
    refused = http.get("/v1/relations", params=params)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "relationship_invalid" and refused.json()["message"].startswith(field)
    fine = http.get("/v1/relations", params={"tenant": "acme", "object": "project:p1", "relation": "member",
                                             "subject": "user:alice"})
    assert fine.status_code == 200 and len(fine.json()["relations"]) == 1, fine.text
