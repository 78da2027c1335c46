"""Search and lookup doors on a real sidecar process (the CLI, real uvicorn, real files)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.harness.search_world import SearchWorld, post
from tests.harness.sidecar_process import SidecarProcess, start_sidecar


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> SearchWorld:
    return SearchWorld(tmp_path_factory.mktemp("search"))


@pytest.fixture(scope="module")
def sidecar(world: SearchWorld) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args())
    yield running
    running.stop()


def every_page(sc: SidecarProcess, path: str, body: dict[str, Any], token: str | None, limit: int) -> list[Any]:
    results: list[Any] = []
    page_token = ""
    for _ in range(50):
        answer = post(sc, path, {**body, "page": {"limit": limit, "token": page_token}}, token)
        assert answer.status_code == 200, answer.text
        results.extend(answer.json()["results"])
        page_token = answer.json()["page"]["next_token"]
        if not page_token:
            return results
    raise AssertionError("no last page")


def test_resource_search_pages_are_what_evaluation_allows(sidecar: SidecarProcess, world: SearchWorld) -> None:
    token = world.token()
    question = {"action": {"name": "read"}, "resource": {"type": "doc"}}
    results = every_page(sidecar, "/access/v1/search/resource", question, token, limit=2)
    assert sorted(r["id"] for r in results) == ["d1", "d2", "d3", "d4", "d5", "d6"]  # d6 through group:eng
    for resource in results:
        answer = post(sidecar, "/access/v1/evaluation", {"action": {"name": "read"}, "resource": resource}, token)
        assert answer.json()["decision"] is True
    assert post(sidecar, "/access/v1/evaluation", {"action": {"name": "read"}, "resource": {"type": "doc", "id": "d7"}},
                token).json()["decision"] is False  # held by bob only: left out, and denied
    globex = every_page(sidecar, "/access/v1/search/resource", question, world.token(tenant="globex"), limit=10)
    assert sorted(r["id"] for r in globex) == ["d1", "g1"]  # the other tenant's alice sees only her tenant


def test_subject_and_action_search(sidecar: SidecarProcess, world: SearchWorld) -> None:
    subjects = every_page(sidecar, "/access/v1/search/subject", {
        "subject": {"type": "user"}, "action": {"name": "read"}, "resource": {"type": "doc", "id": "d6"}},
        world.token(), limit=1)
    assert sorted(s["id"] for s in subjects) == ["alice", "bob"]
    actions = every_page(sidecar, "/access/v1/search/action", {"resource": {"type": "doc", "id": "d7"}},
                         world.token("bob"), limit=10)
    assert sorted(a["name"] for a in actions) == ["read", "write"]


@pytest.mark.parametrize("path", ["/access/v1/search/subject", "/v1/lookup/subjects"])
def test_a_token_caller_cannot_state_the_candidates_properties(sidecar: SidecarProcess, world: SearchWorld,
                                                               path: str) -> None:
    """Stated by an end user, ``roles: ["admin"]`` made every user look allowed (the policy lets
    admins read anything), and the search listed the tenant's users well past the document's."""
    question = {"subject": {"type": "user", "properties": {"roles": ["admin"], "tenant_id": "acme"}},
                "action": {"name": "read"}, "resource": {"type": "doc", "id": "d7"}}
    refused = post(sidecar, path, question, world.token())
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "invalid_request"
    assert refused.json()["detail"] == {"field": "subject.properties", "names": ["roles"]}
    stating_tenant_only = {**question, "subject": {"type": "user", "properties": {"tenant_id": "acme"}}}
    plain = post(sidecar, path, stating_tenant_only, world.token())
    assert plain.status_code == 200 and _ids(plain) == ["bob"]
    local_pep = post(sidecar, path, question)  # the service itself, on loopback: states what it knows
    assert local_pep.status_code == 200 and {"alice", "bob"} <= set(_ids(local_pep))


def _ids(answer: httpx.Response) -> list[str]:
    """Result ids: AuthZEN answers entities, the native lookups ``type:id`` strings."""
    return sorted(r["id"] if isinstance(r, dict) else r.partition(":")[2] for r in answer.json()["results"])


def test_native_lookups_and_the_filter(sidecar: SidecarProcess, world: SearchWorld) -> None:
    pep = {"type": "user", "id": "bob", "properties": {"tenant_id": "acme"}}
    found = post(sidecar, "/v1/lookup/resources", {"subject": pep, "action": {"name": "write"},
                                                   "resource": {"type": "doc"}, "at_least": 7})
    assert found.status_code == 200
    assert found.json()["results"] == ["doc:d7"] and found.json()["relations_seq"] == 7
    who = post(sidecar, "/v1/lookup/subjects", {"subject": {"type": "user", "properties": {"tenant_id": "acme"}},
                                                "action": {"name": "read"}, "resource": {"type": "doc", "id": "d6"}})
    assert sorted(who.json()["results"]) == ["user:alice", "user:bob"]
    flt = post(sidecar, "/v1/lookup/filter", {"action": {"name": "read"}, "resource": {"type": "document"},
                                              "attribute": "project"}, world.token("bob")).json()
    assert flt["values"] == ["p2"] and flt["include_null"] is False and flt["any_value"] is False
    admin = post(sidecar, "/v1/lookup/filter", {"action": {"name": "read"}, "resource": {"type": "document"},
                                                "attribute": "project"}, world.token(roles=("admin",))).json()
    assert admin["any_value"] is True


async def test_the_sdk_clients_ask_for_a_filter_and_get_typed_answers(sidecar: SidecarProcess,
                                                                       world: SearchWorld) -> None:
    """``AuthzClient.resource_filter`` and its async twin: the same filter the door gives, errors typed."""
    from tenantguard.client import AsyncAuthzClient, AuthzClient
    from tenantguard.search import RelationsStale, ResourceFilter

    with AuthzClient(sidecar.base_url) as client:
        flt = client.resource_filter("read", "document", "project", token=world.token("bob"))
        assert isinstance(flt, ResourceFilter) and flt.values == ("p2",) and not flt.any_value
        assert flt.allows("p2") and not flt.allows("p1")
        with pytest.raises(RelationsStale):
            client.resource_filter("read", "document", "project", token=world.token("bob"), at_least=10_000)
    async with AsyncAuthzClient(sidecar.base_url) as aclient:
        admin = await aclient.resource_filter("read", "document", "project", token=world.token(roles=("admin",)))
        assert admin.any_value is True


def test_errors_are_typed_and_counted(sidecar: SidecarProcess, world: SearchWorld) -> None:
    token = world.token()
    question = {"action": {"name": "read"}, "resource": {"type": "doc"}}
    first = post(sidecar, "/access/v1/search/resource", {**question, "page": {"limit": 1}}, token).json()
    other = post(sidecar, "/access/v1/search/resource",
                 {**question, "action": {"name": "write"}, "page": {"token": first["page"]["next_token"]}}, token)
    assert other.status_code == 400 and other.json()["error"] == "page_token_invalid"
    too_big = post(sidecar, "/access/v1/search/resource", {**question, "page": {"limit": 5000}}, token)
    assert too_big.status_code == 422 and too_big.json()["error"] == "search_limit_exceeded"
    stale = post(sidecar, "/v1/lookup/resources", {**question, "at_least": 10_000}, token)
    assert stale.status_code == 409 and stale.json()["error"] == "relations_stale"
    bad = post(sidecar, "/access/v1/search/resource", {**question, "resource": {"type": "Doc Type"}}, token)
    assert bad.status_code == 400
    assert post(sidecar, "/access/v1/search/resource", question, "not-a-token").status_code == 401
    # the SDK's clients turn each answer back into the same typed error the sidecar raised
    from tenantguard.client.errors import error_from_body
    from tenantguard.search.errors import PageTokenInvalid, RelationsStale, SearchLimitExceeded

    for response, typed in ((other, PageTokenInvalid), (too_big, SearchLimitExceeded), (stale, RelationsStale)):
        assert type(error_from_body(response.status_code, response.json())) is typed
    metrics = httpx.get(sidecar.base_url + "/metrics").text
    assert 'tg_search_requests_total{kind="resource",outcome="page_token_invalid"}' in metrics
    assert 'tg_search_decisions_total{kind="resource"}' in metrics


def test_a_bound_tenant_is_never_crossed(world: SearchWorld) -> None:
    running = start_sidecar(world.args("--tenant", "acme"))
    try:
        question = {"action": {"name": "read"}, "resource": {"type": "doc"}}
        stated = {"type": "user", "id": "alice", "properties": {"tenant_id": "globex"}}
        assert post(running, "/access/v1/search/resource", {**question, "subject": stated}).json()["results"] == []
        plain = {"type": "user", "id": "alice"}
        answer = post(running, "/access/v1/search/resource", {**question, "subject": plain}).json()
        assert len(answer["results"]) == 6  # asked in acme, the bound tenant
        globex_token = world.token(tenant="globex")
        assert post(running, "/access/v1/search/resource", question, globex_token).json()["results"] == []
    finally:
        running.stop()


def test_cli_lookup_asks_the_sidecar(sidecar: SidecarProcess) -> None:
    import subprocess

    from tests.harness.paths import TENANTGUARD

    out = subprocess.run([TENANTGUARD, "relation", "lookup", "resources", "--sidecar", sidecar.base_url,
                          "--subject", "user:alice", "--tenant", "acme", "--action", "read", "--type", "doc",
                          "--limit", "2", "--all"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert sorted(json.loads(out.stdout)["results"]) == [f"doc:d{i}" for i in range(1, 7)]
    who = subprocess.run([TENANTGUARD, "relation", "lookup", "subjects", "--sidecar", sidecar.base_url,
                          "--object", "doc:d7", "--tenant", "acme", "--action", "write"],
                         capture_output=True, text=True, timeout=30)
    assert who.returncode == 0 and json.loads(who.stdout)["results"] == ["user:bob"]
    # --role states the subject's roles, as a token carries them into a check (the policy lets admins write)
    bob = [TENANTGUARD, "relation", "lookup", "resources", "--sidecar", sidecar.base_url, "--subject", "user:bob",
           "--tenant", "acme", "--action", "write", "--type", "doc", "--all"]
    plain = subprocess.run(bob, capture_output=True, text=True, timeout=30)
    admin = subprocess.run([*bob, "--role", "viewer", "--role", "admin"], capture_output=True, text=True, timeout=30)
    assert plain.returncode == admin.returncode == 0, (plain.stderr, admin.stderr)
    assert json.loads(plain.stdout)["results"] == ["doc:d7"]
    assert {"doc:d1", "doc:d6", "doc:d7"} <= set(json.loads(admin.stdout)["results"])
