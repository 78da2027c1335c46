"""Search at a real sidecar whose bundle carries a relationship schema (the CLI, real uvicorn).

The bundle's policy decides documents by the schema's permissions; acme's alice and mallory
reach documents only through a folder hierarchy three deep and nested groups, and mallory
is blocked on one. The AuthZEN resource and subject searches, the native lookups and
``tenantguard relation lookup`` list exactly what the AuthZEN evaluation allows.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.bundle import build_bundle
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import mint

from tests.harness.paths import TENANTGUARD
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.search.schema_world import POLICY, RELATIONSHIPS, SCHEMA, UNDER_ROOT


class SchemaWorld:
    """Keys, trust, a signed bundle with ``schema.fga``, and the relations file."""

    def __init__(self, root: Path) -> None:
        self.plane, self.edge = SigningKey.generate(), SigningKey.generate()
        self.plane_pub = self.plane.save(root / "plane.pem")
        trust = TrustSet()
        trust.add_public_key(self.edge.public_key, "edge")
        self.trust_file = root / "trust.json"
        trust.save(self.trust_file)
        source = root / "bundle"
        source.mkdir()
        (source / "policy.rego").write_text(POLICY)
        (source / "schema.fga").write_text(SCHEMA)
        (source / "data.json").write_text("{}")
        self.bundle_file = root / "bundle.tar.gz"
        self.bundle_file.write_bytes(build_bundle(source, "s1", signing_key=self.plane))
        self.relations_file = root / "relations.json"
        self.relations_file.write_text(json.dumps({"seq": 5, "relationships": RELATIONSHIPS}))

    def args(self) -> list[str]:
        return ["--service", "docs", "--bundle", str(self.bundle_file), "--bundle-key", str(self.plane_pub),
                "--trust", str(self.trust_file), "--relations", str(self.relations_file), "--port", "0",
                "--grpc-port", "0"]

    def token(self, sub: str, tenant: str = "acme") -> str:
        return mint(self.edge, issuer="edge", sub=sub, tenant_id=tenant, audience="docs", roles=[])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> SchemaWorld:
    return SchemaWorld(tmp_path_factory.mktemp("schema-search"))


@pytest.fixture(scope="module")
def sidecar(world: SchemaWorld) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args())
    yield running
    running.stop()


def post(sc: SidecarProcess, path: str, body: dict[str, Any], token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(sc.base_url + path, json=body, headers=headers, timeout=10)


def every_page(sc: SidecarProcess, path: str, body: dict[str, Any], token: str | None, limit: int) -> list[Any]:
    """All pages of an AuthZEN search, concatenated."""
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


def evaluation(sc: SidecarProcess, token: str, doc: str) -> bool:
    answer = post(sc, "/access/v1/evaluation", {"action": {"name": "read"}, "resource": {"type": "doc", "id": doc}},
                  token)
    assert answer.status_code == 200, answer.text
    return bool(answer.json()["decision"])


DOCS = {"action": {"name": "read"}, "resource": {"type": "doc"}}


def test_authzen_resource_search_finds_documents_reached_only_through_the_hierarchy(
        sidecar: SidecarProcess, world: SchemaWorld) -> None:
    alice = world.token("alice")
    whole = every_page(sidecar, "/access/v1/search/resource", DOCS, alice, limit=100)
    assert sorted(f"doc:{r['id']}" for r in whole) == UNDER_ROOT
    assert all(evaluation(sidecar, alice, r["id"]) for r in whole)
    assert every_page(sidecar, "/access/v1/search/resource", DOCS, alice, limit=1) == whole  # pages of one


def test_the_blocked_user_is_not_listed_and_the_evaluation_agrees(sidecar: SidecarProcess, world: SchemaWorld) -> None:
    mallory = world.token("mallory")
    found = every_page(sidecar, "/access/v1/search/resource", DOCS, mallory, limit=2)
    assert sorted(r["id"] for r in found) == ["d1", "d2", "d4", "d5"]
    assert not evaluation(sidecar, mallory, "d3")
    readers = every_page(sidecar, "/access/v1/search/subject", {
        "subject": {"type": "user"}, "action": {"name": "read"}, "resource": {"type": "doc", "id": "d3"}},
        world.token("alice"), limit=1)
    assert readers == [{"type": "user", "id": "alice"}]


def test_another_tenants_alice_finds_only_her_tenants_document(sidecar: SidecarProcess, world: SchemaWorld) -> None:
    found = every_page(sidecar, "/access/v1/search/resource", DOCS, world.token("alice", "globex"), limit=10)
    assert found == [{"type": "doc", "id": "g1"}]


def test_native_lookups_answer_the_same(sidecar: SidecarProcess) -> None:
    pep = {"type": "user", "id": "mallory", "properties": {"tenant_id": "acme"}}
    found = post(sidecar, "/v1/lookup/resources", {"subject": pep, **DOCS, "at_least": 5})
    assert found.status_code == 200, found.text
    assert sorted(found.json()["results"]) == ["doc:d1", "doc:d2", "doc:d4", "doc:d5"]
    assert found.json()["partial"] is False and found.json()["broadened"] is False
    who = post(sidecar, "/v1/lookup/subjects", {"subject": {"type": "user", "properties": {"tenant_id": "acme"}},
                                                "action": {"name": "read"}, "resource": {"type": "doc", "id": "d1"}})
    assert sorted(who.json()["results"]) == ["user:alice", "user:mallory"]


def test_cli_relation_lookup_follows_every_page(sidecar: SidecarProcess) -> None:
    out = subprocess.run([TENANTGUARD, "relation", "lookup", "resources", "--sidecar", sidecar.base_url,
                          "--subject", "user:alice", "--tenant", "acme", "--action", "read", "--type", "doc",
                          "--limit", "2", "--all"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)["results"]
    assert sorted(results) == UNDER_ROOT and len(results) == len(set(results))
