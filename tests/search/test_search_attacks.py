"""An outsider's attacks on the search and lookup doors of a real sidecar process.

Cross-tenant questions, page tokens replayed, altered, forged or carried to another
question, caller, door or sidecar, existence oracles, and the work one search may cause.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.harness.search_world import SearchWorld, post
from tests.harness.sidecar_process import SidecarProcess, start_sidecar

RESOURCE, SUBJECT, ACTION = "/access/v1/search/resource", "/access/v1/search/subject", "/access/v1/search/action"
LOOKUP_RESOURCES, LOOKUP_SUBJECTS, FILTER = "/v1/lookup/resources", "/v1/lookup/subjects", "/v1/lookup/filter"
DOCS = {"action": {"name": "read"}, "resource": {"type": "doc"}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> SearchWorld:
    return SearchWorld(tmp_path_factory.mktemp("search-attacks"))


@pytest.fixture(scope="module")
def sidecar(world: SearchWorld) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args())
    yield running
    running.stop()


def first_token(sc: SidecarProcess, path: str, body: dict[str, Any], token: str | None) -> str:
    answer = post(sc, path, {**body, "page": {"limit": 1}}, token)
    assert answer.status_code == 200, answer.text
    found = answer.json()["page"]["next_token"] if "page" in answer.json() else answer.json()["next_token"]
    assert found, "the question has more than one result: a page token is issued"
    return str(found)


def ids(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return sorted(r["id"] if isinstance(r, dict) else r for r in body["results"])


# -- cross-tenant questions ------------------------------------------------------------------------

GLOBEX_STATED = {"properties": {"tenant_id": "globex"}}
CROSS_TENANT = [  # (path, body) asked with an acme token: each names globex somewhere
    (RESOURCE, {**DOCS, "subject": {"type": "user", "id": "alice", **GLOBEX_STATED}}),
    (RESOURCE, {**DOCS, "resource": {"type": "doc", **GLOBEX_STATED}}),
    (RESOURCE, {**DOCS, "resource": {"type": "doc", "properties": {"tenant_id": "globex", "owner": "x"}}}),
    (RESOURCE, {**DOCS, "context": {"tenant_id": "globex"}, "resource": {"type": "doc", **GLOBEX_STATED}}),
    (SUBJECT, {"subject": {"type": "user", **GLOBEX_STATED}, **DOCS, "resource": {"type": "doc", "id": "g1"}}),
    (SUBJECT, {"subject": {"type": "user"}, **DOCS, "resource": {"type": "doc", "id": "g1", **GLOBEX_STATED}}),
    (SUBJECT, {"subject": {"type": "user"}, **DOCS, "resource": {"type": "doc", "id": "g1"}}),
    (SUBJECT, {"subject": {"type": "user", "properties": {"tenant_id": "globex", "roles": ["admin"]}}, **DOCS,
               "resource": {"type": "doc", "id": "g1"}}),
    (ACTION, {"resource": {"type": "doc", "id": "g1"}}),
    (ACTION, {"resource": {"type": "doc", "id": "g1", **GLOBEX_STATED}}),
    (LOOKUP_RESOURCES, {**DOCS, "resource": {"type": "doc", **GLOBEX_STATED}}),
    (LOOKUP_SUBJECTS, {"subject": {"type": "user", **GLOBEX_STATED}, **DOCS, "resource": {"type": "doc", "id": "g1"}}),
    (FILTER, {**DOCS, "resource": {"type": "document", **GLOBEX_STATED}, "attribute": "project"}),
]


@pytest.mark.parametrize(("path", "body"), CROSS_TENANT, ids=[f"{p.rsplit('/', 1)[1]}-{i}"
                                                               for i, (p, _) in enumerate(CROSS_TENANT)])
def test_an_acme_token_learns_nothing_of_globex(sidecar: SidecarProcess, world: SearchWorld, path: str,
                                                body: dict[str, Any]) -> None:
    """globex holds doc:g1 (and a doc:d1 of its own): no shape of question shows either to acme."""
    answer = post(sidecar, path, body, world.token())
    if answer.status_code != 200:  # a body disagreeing with the token, or stating candidates' properties
        assert answer.status_code == 400 and answer.json()["error"] in (  # (invalid_request), shows nothing
            "tenant_mismatch", "subject_mismatch", "invalid_request")
        return
    text = json.dumps(answer.json()["results"] if "results" in answer.json() else answer.json()["values"])
    assert "g1" not in text and "globex" not in text
    if path in (RESOURCE, LOOKUP_RESOURCES):
        assert answer.json()["results"] == []


def test_an_unknown_resource_and_another_tenants_resource_get_the_same_answer(sidecar: SidecarProcess,
                                                                              world: SearchWorld) -> None:
    """No existence oracle: globex's doc:g1 and a doc no tenant has are answered alike for acme."""
    token = world.token()
    for path, body in ((SUBJECT, {"subject": {"type": "user"}, **DOCS}), (ACTION, {}),
                       (LOOKUP_SUBJECTS, {"subject": {"type": "user"}, **DOCS})):
        answers = [post(sidecar, path, {**body, "resource": {"type": "doc", "id": rid}}, token) for rid in
                   ("g1", "never-written")]
        assert [a.status_code for a in answers] == [200, 200]
        assert answers[0].json() == answers[1].json()


# -- page tokens ----------------------------------------------------------------------------------


def _tamper(token: str) -> list[str]:
    """Altered versions of a genuine token: each byte class of its body and MAC changed, parts
    swapped, padded, truncated, and the body re-encoded with another offset under the old MAC."""
    body, _, mac = token.partition(".")
    raw = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    shifted = base64.urlsafe_b64encode(json.dumps({**raw, "o": 0}, separators=(",", ":")).encode()).decode()
    flip = {"A": "B", "B": "A"}
    return [
        body[:-1] + flip.get(body[-1], "A") + "." + mac,
        body + "." + mac[:-1] + flip.get(mac[-1], "A"),
        body + "." + mac + "AA",
        body + "=." + mac,
        body,
        "." + mac,
        body + ".",
        mac + "." + body,
        shifted.rstrip("=") + "." + mac,
        body + "." + base64.urlsafe_b64encode(b"\0" * 16).decode().rstrip("="),
        body[:4] + "!!!!" + body[4:] + "." + mac,  # characters outside the alphabet, once skipped
        body + "." + mac[:8] + "\n\n\n\n" + mac[8:],
        "x" * 5000,
        token + "." + mac,
        "é" + token,
        token.replace(".", "\u2024"),
    ]


def test_page_tokens_bind_the_question_the_caller_and_the_process(sidecar: SidecarProcess,
                                                                  world: SearchWorld) -> None:
    """Every replay of a genuine token outside what it was minted for, and every alteration,
    is 400 page_token_invalid; nothing is answered from it."""
    alice = world.token()
    issued = first_token(sidecar, RESOURCE, DOCS, alice)
    replays: list[tuple[str, dict[str, Any], str | None]] = [
        (RESOURCE, DOCS, world.token(tenant="globex")),  # another tenant's alice
        (RESOURCE, DOCS, world.token("bob")),  # another user of acme
        (RESOURCE, DOCS, world.token()),  # the same user, another token (jti)
        (RESOURCE, {**DOCS, "action": {"name": "write"}}, alice),
        (RESOURCE, {**DOCS, "resource": {"type": "group"}}, alice),
        (RESOURCE, {**DOCS, "context": {"x": 1}}, alice),
        (RESOURCE, {**DOCS, "subject": {"type": "user", "id": "alice", "properties": {"roles": ["admin"]}}}, alice),
        (LOOKUP_RESOURCES, {**DOCS, "subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme"}}},
         None),  # the local PEP stating alice
        (SUBJECT, {"subject": {"type": "user"}, **DOCS, "resource": {"type": "doc", "id": "d6"}}, alice),
        (ACTION, {"resource": {"type": "doc", "id": "d6"}}, alice),
    ]
    for path, body, token in replays:
        answer = post(sidecar, path, {**body, "page": {"token": issued}}, token)
        assert (answer.status_code, answer.json().get("error")) == (400, "page_token_invalid"), (path, body)
    for forged in _tamper(issued):
        answer = post(sidecar, RESOURCE, {**DOCS, "page": {"token": forged}}, alice)
        assert answer.status_code == 400 and answer.json()["error"] in ("page_token_invalid", "invalid_request"), \
            forged
    # a subject search token minted through the local PEP for acme, replayed for globex
    pep_q = {"subject": {"type": "user", "properties": {"tenant_id": "acme"}}, **DOCS,
             "resource": {"type": "doc", "id": "d6"}}
    pep_token = first_token(sidecar, LOOKUP_SUBJECTS, pep_q, None)
    globex_q = {**pep_q, "subject": {"type": "user", "properties": {"tenant_id": "globex"}},
                "page": {"token": pep_token}}
    assert post(sidecar, LOOKUP_SUBJECTS, globex_q).json()["error"] == "page_token_invalid"
    assert post(sidecar, SUBJECT, {**globex_q}, world.token(tenant="globex")).json()["error"] == "page_token_invalid"


def test_a_page_token_from_another_sidecar_process_is_refused(sidecar: SidecarProcess, world: SearchWorld) -> None:
    """Same files, same bundle, same relations: another process's key, so its tokens are not ours."""
    other = start_sidecar(world.args())
    try:
        alice = world.token()
        foreign = first_token(other, RESOURCE, DOCS, alice)
        answer = post(sidecar, RESOURCE, {**DOCS, "page": {"token": foreign}}, alice)
        assert (answer.status_code, answer.json()["error"]) == (400, "page_token_invalid")
    finally:
        other.stop()


# -- work one search may cause -------------------------------------------------------------------


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SidecarProcess, SearchWorld]]:
    """A sidecar where alice holds 3,000 relations: every decision's input carries them all,
    so a search page that decides many candidates is slow by construction."""
    world = SearchWorld(tmp_path_factory.mktemp("crowded"))
    relationships = [f"acme/doc:x{i}#editor@user:alice" for i in range(3000)]
    world.relations_file.write_text(json.dumps({"seq": 7, "relationships": relationships}))
    running = start_sidecar(world.args())
    yield running, world
    running.stop()


IN_FLIGHT = re.compile(r"^tg_search_in_flight ([0-9.]+)$", re.M)


def test_a_long_search_page_never_holds_the_other_doors(crowded: tuple[SidecarProcess, SearchWorld]) -> None:
    """A page that decides thousands of candidates runs on a search worker: while it runs, the
    sidecar keeps answering (here /metrics, which reports the page in flight). On the serving
    loop, no request was answered until the page was done, so no reading could show it."""
    sidecar, world = crowded
    token = world.token()
    nobody = {"action": {"name": "delete"}, "resource": {"type": "doc"}, "page": {"limit": 1000}}  # every one denied
    answers: list[httpx.Response] = []
    search = threading.Thread(target=lambda: answers.append(
        httpx.post(sidecar.base_url + RESOURCE, json=nobody, headers={"Authorization": f"Bearer {token}"},
                   timeout=600)))
    search.start()
    readings: list[float] = []
    with httpx.Client(base_url=sidecar.base_url, timeout=600) as client:
        while search.is_alive():
            found = IN_FLIGHT.search(client.get("/metrics").text)
            assert found is not None, "the sidecar reports its search pages in flight"
            readings.append(float(found.group(1)))
            if readings[-1] >= 1:
                break
    search.join()
    assert max(readings, default=0) >= 1, ("no request was answered while the search page ran", readings)
    assert answers[0].status_code == 200 and answers[0].json()["results"] == []



# -- PEP keys guard the AuthZEN search doors -------------------------------------------------------


def test_pep_keys_guard_the_search_doors_and_bind_their_tenant(world: SearchWorld, tmp_path_factory:
                                                               pytest.TempPathFactory) -> None:
    from authz_sidecar.pep import secret_digest

    acme_key, globex_key = "acme-pep-" + "e5" * 20, "globex-pep-" + "f6" * 20
    keys_file = tmp_path_factory.mktemp("pep") / "pep-keys.json"
    keys_file.write_text(json.dumps({"keys": [
        {"name": "acme-gw", "tenant": "acme", "secret_sha256": secret_digest(acme_key)},
        {"name": "globex-gw", "tenant": "globex", "secret_sha256": secret_digest(globex_key)}]}))
    running = start_sidecar(world.args("--pep-keys", str(keys_file)))
    try:
        alice = {"type": "user", "id": "alice"}
        question = {**DOCS, "subject": alice}
        for path in (RESOURCE, SUBJECT, ACTION):
            for credential in (None, "not-a-key", acme_key[:-1], acme_key + "x"):
                answer = post(running, path, question, credential)
                assert answer.status_code == 401 and answer.json()["error"].startswith("token_"), (path, credential)
        assert ids(post(running, RESOURCE, question, acme_key)) == ["d1", "d2", "d3", "d4", "d5", "d6"]
        assert ids(post(running, RESOURCE, question, globex_key)) == ["d1", "g1"]
        stated_globex = {**question, "subject": {**alice, "properties": {"tenant_id": "globex"}}}
        assert post(running, RESOURCE, stated_globex, acme_key).json()["results"] == []
        subject_q = {"subject": {"type": "user", "properties": {"tenant_id": "globex"}}, **DOCS,
                     "resource": {"type": "doc", "id": "g1"}}
        assert post(running, SUBJECT, subject_q, acme_key).json()["results"] == []
        issued = first_token(running, RESOURCE, question, acme_key)
        replayed = post(running, RESOURCE, {**question, "page": {"token": issued}}, globex_key)
        assert (replayed.status_code, replayed.json()["error"]) == (400, "page_token_invalid")
        # the native lookups stay the local service's: a PEP key is no credential there
        native = post(running, LOOKUP_RESOURCES, {**DOCS, "subject": alice}, acme_key)
        assert native.status_code == 401
    finally:
        running.stop()


@pytest.mark.parametrize("limit", ["true", "false", '"2"', "2.0", "1e1", "-1", "2.5", "[2]"])
def test_a_page_limit_is_a_json_integer(sidecar: SidecarProcess, world: SearchWorld, limit: str) -> None:
    """``"limit": true`` was read as 1 and ``"2"`` or ``2.0`` as 2 (as ``at_least: true`` once was):
    a PEP, a proxy and the sidecar could each read another page size. Refused, typed."""
    for path, token in ((RESOURCE, world.token()), (LOOKUP_RESOURCES, world.token())):
        body = '{"action":{"name":"read"},"resource":{"type":"doc"},"page":{"limit":' + limit + "}}"
        answer = httpx.post(sidecar.base_url + path, content=body, timeout=10,
                            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_request", (path, answer.text)
