"""A bundle with a relationship schema answers at a running sidecar, through every door.

The example bundle, copied, with a ``schema.fga`` (invoices in folders in folders, folder
viewers through groups) and one rule: an invoice needs the schema's ``read`` permission.
The relations file holds acme's folder tuples and none for globex, so the same question is
allowed for acme's alice (a viewer of the top folder through her group) and denied for
globex's mallory (a project member, allowed by the unchanged bundle) through the native check,
AuthZEN evaluation and evaluations and the OPA Data API. The Envoy doors ask about the
request's route (``{"type": "route", "id": <path>}``), not an invoice: the schema has nothing
to say there and they answer as the unchanged bundle does (the last test pins that).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest
from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc
from tenantguard.bundle import build_bundle

from tests.harness.paths import REPO
from tests.harness.sidecar_doors import authzen, envoy_request, invoice, native, opa
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import RELATIONSHIPS, World, token

SCHEMA = """\
model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define parent: [folder]
    define viewer: [user, group#member] or viewer from parent
type invoice
  relations
    define parent: [folder]
    define read: viewer from parent
"""

RULE = """package tenantguard

import rego.v1

# An invoice needs the schema's read permission (the schema ships in this bundle).
deny contains "no_schema_permission" if {
	input.resource.type == "invoice"
	not "read" in input.permissions
}
"""

FOLDERS = [
    "acme/invoice:inv-1#parent@folder:q4",
    "acme/folder:q4#parent@folder:finance",
    "acme/folder:finance#viewer@group:fin#member",
    "acme/group:fin#member@group:ap#member",
    "acme/group:ap#member@user:alice",
]


@pytest.fixture(scope="module")
def with_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, SidecarProcess]]:
    world = World(tmp_path_factory.mktemp("schema"))
    bundle = world.root / "bundle-src"
    shutil.copytree(REPO / "bundles" / "tenantguard", bundle)
    (bundle / "schema.fga").write_text(SCHEMA)
    (bundle / "invoices.rego").write_text(RULE)
    world.bundle_file.write_bytes(build_bundle(bundle, "2", signing_key=world.plane))
    world.relations_file.write_text(json.dumps({"seq": 8, "relationships": [*RELATIONSHIPS, *FOLDERS]}))
    running = start_sidecar(world.args())
    yield world, running
    running.stop()


def http_doors(sc: SidecarProcess, tok: str, tenant: str) -> dict[str, Any]:
    question = invoice(tenant)
    answers: dict[str, Any] = {door.__name__: door(sc, tok, question) for door in (native, authzen, opa)}
    r = httpx.post(f"{sc.base_url}/access/v1/evaluations", headers={"Authorization": f"Bearer {tok}"},
                   json={"action": question["action"], "evaluations": [{"resource": question["resource"]}]})
    assert r.status_code == 200, r.text
    answers["evaluations"] = r.json()["evaluations"][0]["decision"]
    return answers


def envoy_doors(sc: SidecarProcess, tok: str, tenant: str) -> tuple[bool, bool]:
    with grpc.insecure_channel(sc.grpc) as channel:
        stub: Any = pb_grpc.AuthorizationStub(channel)
        response = stub.Check(envoy_request("GET", f"/tenants/{tenant}/invoices/inv-1",
                                            {"authorization": f"Bearer {tok}"}), timeout=5)
    http = httpx.get(f"{sc.base_url}/envoy/ext_authz/tenants/{tenant}/invoices/inv-1",
                     headers={"Authorization": f"Bearer {tok}"})
    return response.status.code == 0, http.status_code == 200


def test_a_viewer_through_folders_and_nested_groups_is_allowed_at_every_door(
        with_schema: tuple[World, SidecarProcess]) -> None:
    world, sc = with_schema
    tok = token(world)
    assert http_doors(sc, tok, "acme") == {"native": (True, []), "authzen": (True, []), "opa": (True, []),
                                           "evaluations": True}


def test_without_the_schema_permission_every_door_denies(with_schema: tuple[World, SidecarProcess]) -> None:
    world, sc = with_schema
    tok = token(world, sub="mallory", tenant="globex")
    denied = (False, ["no_schema_permission"])
    assert http_doors(sc, tok, "globex") == {"native": denied, "authzen": denied, "opa": denied,
                                             "evaluations": False}


def test_the_envoy_doors_ask_about_routes_which_the_schema_does_not_type(
        with_schema: tuple[World, SidecarProcess]) -> None:
    world, sc = with_schema
    assert envoy_doors(sc, token(world), "acme") == (True, True)
    assert envoy_doors(sc, token(world, sub="mallory", tenant="globex"), "globex") == (True, True)
