"""AuthZEN 1.0 as the spec words it: response shape, boxcar defaults and semantics, and
the PDP metadata listing exactly what is served. Real sidecar (``--tenant acme``), real HTTP.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx
import pytest

from tests.harness.sidecar_process import SidecarProcess, drain, start_sidecar

from .conftest import TodoWorld

MORTY = "CiRmZDE2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"
OWN = {"type": "todo", "id": "t-own", "properties": {"ownerID": "morty@the-citadel.com"}}
RICKS = {"type": "todo", "id": "t-rick", "properties": {"ownerID": "rick@the-citadel.com"}}
# Morty (editor) may update his own todo, not Rick's.
PERMIT, DENY = {"resource": OWN}, {"resource": RICKS}
BATCH: dict[str, Any] = {"subject": {"type": "user", "id": MORTY}, "action": {"name": "can_update_todo"}}


def evaluations(proc: SidecarProcess, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(f"{proc.base_url}/access/v1/evaluations", json=body, headers=headers)


def decisions(response: httpx.Response) -> list[bool]:
    assert response.status_code == 200, response.text
    return [e["decision"] for e in response.json()["evaluations"]]


def test_a_decision_is_a_boolean_and_a_context_object(single_tenant: SidecarProcess) -> None:
    body = httpx.post(f"{single_tenant.base_url}/access/v1/evaluation", json={**BATCH, **DENY}).json()
    assert set(body) == {"decision", "context"} and body["decision"] is False
    assert body["context"]["reasons"] == ["not_permitted"] and isinstance(body["context"]["decision_id"], str)


@pytest.mark.parametrize(("options", "expected"), [
    (None, [True, False, True, False]),  # execute_all is the default
    ({"evaluations_semantic": "execute_all"}, [True, False, True, False]),
    ({"evaluations_semantic": "deny_on_first_deny"}, [True, False]),  # the deny is the last answer
    ({"evaluations_semantic": "permit_on_first_permit"}, [True]),
    ({"evaluations_semantic": "permit_on_first_permit", "another_option": "value"}, [True]),  # extensions ignored
])
def test_evaluations_semantics(single_tenant: SidecarProcess, options: dict[str, Any] | None,
                               expected: list[bool]) -> None:
    body = {**BATCH, "evaluations": [PERMIT, DENY, PERMIT, DENY]}
    if options is not None:
        body["options"] = options
    assert decisions(evaluations(single_tenant, body)) == expected


def test_permit_on_first_permit_runs_past_denies(single_tenant: SidecarProcess) -> None:
    body = {**BATCH, "evaluations": [DENY, DENY, PERMIT, DENY], "options": {"evaluations_semantic":
                                                                            "permit_on_first_permit"}}
    assert decisions(evaluations(single_tenant, body)) == [False, False, True]


def test_an_unknown_semantic_is_a_400(single_tenant: SidecarProcess) -> None:
    response = evaluations(single_tenant, {**BATCH, "evaluations": [PERMIT], "options": {"evaluations_semantic": "x"}})
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


def test_defaults_apply_to_each_entry_and_an_entry_replaces_them_whole(single_tenant: SidecarProcess) -> None:
    """Top-level subject/action/resource/context are defaults; an entry's member replaces
    the default member entirely (it is not merged into it)."""
    body = {**BATCH, "resource": OWN, "context": {"k": "v"}, "evaluations": [
        {},  # everything from the defaults: Morty updates his own todo
        {"resource": {"type": "todo", "id": "t-own"}},  # no ownerID: the default's properties do not leak in
        {"action": {"name": "can_delete_todo"}},  # default resource, own action
        {"subject": {"type": "user", "id": "CiRmZDM2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"}},  # Beth
    ]}
    assert decisions(evaluations(single_tenant, body)) == [True, False, True, False]


@pytest.mark.parametrize(("semantic", "expected"), [
    ("execute_all", [True, False, True]), ("deny_on_first_deny", [True, False]),
    ("permit_on_first_permit", [True])])
def test_a_member_missing_everywhere_is_that_entrys_deny(single_tenant: SidecarProcess, semantic: str,
                                                          expected: list[bool]) -> None:
    """The certification scenario's c-3-4-1 (certification/authorization-api-1_0-scenario.md): inside an
    otherwise valid batch, an entry missing a required member is a 200 with that entry ``false`` (an
    error in its context), in order and cardinality; it was a 400 for the whole batch, which the
    working group's harness fails. Under ``deny_on_first_deny`` the failed entry is the denial."""
    read = {"action": {"name": "can_read_todos"}, **PERMIT}
    body = {"subject": BATCH["subject"], "evaluations": [read, {"resource": OWN}, read],
            "options": {"evaluations_semantic": semantic}}
    response = evaluations(single_tenant, body)
    assert decisions(response) == expected
    if len(expected) > 1:
        failed = response.json()["evaluations"][1]
        assert failed["context"]["error"]["status"] == 400 and "evaluations[1]" in failed["context"]["error"]["message"]


def test_a_batch_invalid_at_the_top_level_is_still_a_400(single_tenant: SidecarProcess) -> None:
    """Whole-payload failures stay HTTP errors (c-3-4-1's note): malformed JSON, a member of the wrong type."""
    for content in (b"{", b'{"evaluations": "x"}', b'{"subject": "alice", "evaluations": [{}]}'):
        response = httpx.post(f"{single_tenant.base_url}/access/v1/evaluations", content=content,
                              headers={"content-type": "application/json"})
        assert response.status_code == 400, (content, response.text)


def test_every_member_may_come_from_the_entries(single_tenant: SidecarProcess) -> None:
    entry = {**BATCH, **PERMIT}
    assert decisions(evaluations(single_tenant, {"evaluations": [entry, {**entry, **DENY}]})) == [True, False]


def test_one_bad_entry_is_that_entrys_deny_with_an_error(single_tenant: SidecarProcess) -> None:
    body = {**BATCH, "evaluations": [PERMIT, {"subject": {"type": "user"}, **PERMIT}, PERMIT]}  # no subject id
    results = evaluations(single_tenant, body).json()["evaluations"]
    assert [r["decision"] for r in results] == [True, False, True]
    assert results[1]["context"]["error"]["status"] == 400


def test_no_or_empty_evaluations_behave_as_one_evaluation(single_tenant: SidecarProcess) -> None:
    for body in ({**BATCH, **PERMIT}, {**BATCH, **PERMIT, "evaluations": []}):
        answer = evaluations(single_tenant, body).json()
        assert answer["decision"] is True and "evaluations" not in answer


def test_request_id_is_echoed(single_tenant: SidecarProcess) -> None:
    response = evaluations(single_tenant, {**BATCH, "evaluations": [PERMIT]}, **{"X-Request-ID": "req-42"})
    assert response.headers["x-request-id"] == "req-42"


def test_too_many_evaluations_is_a_400(single_tenant: SidecarProcess) -> None:
    response = evaluations(single_tenant, {**BATCH, "evaluations": [PERMIT] * 65})
    assert response.status_code == 400


# -- PDP metadata ---------------------------------------------------------------------------


def served_access_paths(proc: SidecarProcess) -> set[str]:
    """The AuthZEN API paths the sidecar serves, from the OpenAPI document it serves."""
    paths = httpx.get(f"{proc.base_url}/openapi.json").json()["paths"]
    return {path for path in paths if path.startswith("/access/")}


def test_metadata_lists_exactly_what_is_served(single_tenant: SidecarProcess) -> None:
    response = httpx.get(f"{single_tenant.base_url}/.well-known/authzen-configuration")
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    meta = response.json()
    assert set(meta) == {"policy_decision_point", "access_evaluation_endpoint", "access_evaluations_endpoint",
                         "search_subject_endpoint", "search_resource_endpoint", "search_action_endpoint"}
    assert meta["policy_decision_point"] == single_tenant.base_url  # the bound address, real port
    endpoints = {name: url for name, url in meta.items() if name.endswith("_endpoint")}
    assert {url.removeprefix(single_tenant.base_url) for url in endpoints.values()} == served_access_paths(
        single_tenant)
    question = {**BATCH, **PERMIT}
    for name, url in endpoints.items():  # each listed endpoint answers a question
        if name.startswith("search_"):
            kind = name.split("_")[1]
            search = {k: v for k, v in question.items() if k in ("subject", "resource", "context")
                      or (k == "action" and kind != "action")}
            answer = httpx.post(url, json=search)
            assert answer.status_code == 200 and isinstance(answer.json()["results"], list), name
            assert answer.json()["page"]["next_token"] == "", name
            continue
        answer = httpx.post(url, json=question)
        assert answer.status_code == 200 and answer.json()["decision"] is True, name


def test_metadata_ignores_the_host_header(single_tenant: SidecarProcess) -> None:
    meta = httpx.get(f"{single_tenant.base_url}/.well-known/authzen-configuration",
                     headers={"Host": "evil.example"}).json()
    assert meta["policy_decision_point"] == single_tenant.base_url


def test_public_url_names_the_pdp(todo_world: TodoWorld) -> None:
    proc = start_sidecar(todo_world.args("--tenant", "acme", "--public-url", "https://pdp.example.com/todo/"))
    drain(proc)
    try:
        meta = httpx.get(f"{proc.base_url}/.well-known/authzen-configuration").json()
        oauth = httpx.get(f"{proc.base_url}/.well-known/oauth-authorization-server").json()
    finally:
        proc.stop()
    assert meta == {"policy_decision_point": "https://pdp.example.com/todo",
                    "access_evaluation_endpoint": "https://pdp.example.com/todo/access/v1/evaluation",
                    "access_evaluations_endpoint": "https://pdp.example.com/todo/access/v1/evaluations",
                    "search_subject_endpoint": "https://pdp.example.com/todo/access/v1/search/subject",
                    "search_resource_endpoint": "https://pdp.example.com/todo/access/v1/search/resource",
                    "search_action_endpoint": "https://pdp.example.com/todo/access/v1/search/action"}
    assert oauth["issuer"] == "https://pdp.example.com/todo"
    assert oauth["token_endpoint"] == "https://pdp.example.com/todo/oauth2/token"


# -- refusals as AuthZEN words them -----------------------------------------------------------

AUTHZEN_DOORS = {
    "/access/v1/evaluation": {**BATCH, **PERMIT},
    "/access/v1/evaluations": {**BATCH, "evaluations": [PERMIT]},
    "/access/v1/search/subject": {"subject": {"type": "user"}, "action": BATCH["action"], "resource": OWN},
    "/access/v1/search/resource": {"subject": BATCH["subject"], "action": BATCH["action"],
                                   "resource": {"type": "todo"}},
    "/access/v1/search/action": {"subject": BATCH["subject"], "resource": OWN},
}


@pytest.mark.parametrize("path", sorted(AUTHZEN_DOORS))
@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "application/json; charset=latin-1"])
def test_a_body_not_announced_as_json_is_a_400(single_tenant: SidecarProcess, path: str,
                                               content_type: str | None) -> None:
    """AuthZEN 1.0 "Error Responses" lists 400/401/403/500 only; the certification scenario's c-2-4-3
    expects 400 for a Content-Type other than application/json (the sidecar answered 415)."""
    headers = {"content-type": content_type} if content_type is not None else {}
    response = httpx.post(single_tenant.base_url + path, content=json.dumps(AUTHZEN_DOORS[path]).encode(),
                          headers=headers)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "unsupported_media_type"


@pytest.mark.parametrize("path", sorted(AUTHZEN_DOORS))
def test_a_gzip_body_is_answered_like_the_plain_one(single_tenant: SidecarProcess, path: str) -> None:
    plain = httpx.post(single_tenant.base_url + path, json=AUTHZEN_DOORS[path])
    zipped = httpx.post(single_tenant.base_url + path, content=gzip.compress(json.dumps(AUTHZEN_DOORS[path]).encode()),
                        headers={"content-type": "application/json", "content-encoding": "gzip"})
    assert plain.status_code == zipped.status_code == 200, zipped.text
    strip = ("decision_id",)
    assert _without(plain.json(), strip) == _without(zipped.json(), strip)


def _without(body: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(body, dict):
        return {k: _without(v, keys) for k, v in body.items() if k not in keys}
    if isinstance(body, list):
        return [_without(v, keys) for v in body]
    return body


@pytest.mark.parametrize("body", [
    {"resource": OWN},  # no subject at all (the sidecar answered 500: KeyError in the core)
    {"subject": {"type": "user"}, "resource": OWN},  # the input subject without its id (c-4-7-2)
    {"subject": BATCH["subject"], "resource": {"type": "todo"}},  # the input resource without its id
    {"subject": BATCH["subject"]},  # no resource
])
def test_an_action_search_missing_an_input_is_a_400(single_tenant: SidecarProcess, body: dict[str, Any]) -> None:
    response = httpx.post(f"{single_tenant.base_url}/access/v1/search/action", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_request"


def test_metadata_is_found_where_a_pep_derives_it_for_a_pdp_with_a_path(todo_world: TodoWorld) -> None:
    """AuthZEN 1.0 "PDP Metadata" (and RFC 8414 3.1 for the token endpoint's): the well-known string is
    inserted between host and path, so for ``https://pdp.example.com/todo`` a PEP asks
    ``/.well-known/authzen-configuration/todo`` (authlib ``get_well_known_url(..., external=True)``:
    ``/.well-known/oauth-authorization-server/todo``). Both were 404; other suffixes still are."""
    from authlib.oauth2.rfc8414 import get_well_known_url

    public = "https://pdp.example.com/todo"
    proc = start_sidecar(todo_world.args("--tenant", "acme", "--public-url", public + "/"))
    drain(proc)
    try:
        authzen = httpx.get(f"{proc.base_url}/.well-known/authzen-configuration/todo")
        oauth_path = get_well_known_url(public, external=True).removeprefix("https://pdp.example.com")
        oauth = httpx.get(proc.base_url + oauth_path)
        others = [httpx.get(f"{proc.base_url}/.well-known/{name}/{suffix}").status_code
                  for name in ("authzen-configuration", "oauth-authorization-server")
                  for suffix in ("other", "todo/x", "tod")]
        plain = httpx.get(f"{proc.base_url}/.well-known/authzen-configuration").json()
    finally:
        proc.stop()
    assert authzen.status_code == 200 and authzen.json() == plain
    assert authzen.json()["policy_decision_point"] == public  # identical to the identifier it was derived from
    assert oauth.status_code == 200 and oauth.json()["issuer"] == public
    assert others == [404] * 6


def test_without_a_public_path_no_suffix_is_served(single_tenant: SidecarProcess) -> None:
    for name in ("authzen-configuration", "oauth-authorization-server"):
        response = httpx.get(f"{single_tenant.base_url}/.well-known/{name}/tenant1")
        assert response.status_code == 404 and response.json()["error"] == "not_found"
