"""A deny rule a policy author adds in a new file denies at a running sidecar, through every door.

The example bundle, copied, with one more file (``frozen.rego``) and no other edit: the
sidecar process serves it, and the native check, AuthZEN evaluation and evaluations, the
OPA Data API, and both Envoy doors (gRPC ext_authz, HTTP ``/envoy/ext_authz/``) deny the
frozen tenant's requests that the unchanged bundle allows (issue 30: the former fast
branches answered them without reading ``deny``). Another tenant is still allowed.
"""

from __future__ import annotations

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
from tests.harness.sidecar_world import World, token

FROZEN = """package tenantguard

import rego.v1

# A tenant frozen while its contract is renewed: nothing else in the bundle changes.
deny contains "frozen" if input.subject.properties.tenant_id == "acme"
"""


@pytest.fixture(scope="module")
def extended(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, SidecarProcess]]:
    world = World(tmp_path_factory.mktemp("extended"))
    bundle = world.root / "bundle-src"
    shutil.copytree(REPO / "bundles" / "tenantguard", bundle)
    (bundle / "frozen.rego").write_text(FROZEN)
    world.bundle_file.write_bytes(build_bundle(bundle, "2", signing_key=world.plane))
    running = start_sidecar(world.args())
    yield world, running
    running.stop()


def http_doors(world: World, sc: SidecarProcess, tok: str) -> dict[str, Any]:
    question = invoice("acme")
    answers = {door.__name__: door(sc, tok, question) for door in (native, authzen, opa)}
    r = httpx.post(f"{sc.base_url}/access/v1/evaluations", headers={"Authorization": f"Bearer {tok}"},
                   json={"action": question["action"], "evaluations": [{"resource": question["resource"]}]})
    assert r.status_code == 200, r.text
    [evaluation] = r.json()["evaluations"]
    answers["evaluations"] = evaluation["decision"]  # an entry of a batch carries no reasons
    return answers


def test_the_new_rule_denies_through_every_http_door(extended: tuple[World, SidecarProcess]) -> None:
    world, sc = extended
    answers = http_doors(world, sc, token(world))
    assert answers == {"native": (False, ["frozen"]), "authzen": (False, ["frozen"]), "opa": (False, ["frozen"]),
                       "evaluations": False}


def test_the_new_rule_denies_through_both_envoy_doors(extended: tuple[World, SidecarProcess]) -> None:
    world, sc = extended
    tok = token(world)
    with grpc.insecure_channel(sc.grpc) as channel:
        stub: Any = pb_grpc.AuthorizationStub(channel)
        response = stub.Check(envoy_request("GET", "/tenants/acme/invoices/inv-1",
                                            {"authorization": f"Bearer {tok}"}), timeout=5)
    assert response.status.code != 0 and response.denied_response.status.code == 403
    http = httpx.get(f"{sc.base_url}/envoy/ext_authz/tenants/acme/invoices/inv-1",
                     headers={"Authorization": f"Bearer {tok}"})
    assert http.status_code == 403, http.text


def test_another_tenant_is_still_allowed(extended: tuple[World, SidecarProcess]) -> None:
    world, sc = extended
    mallory = token(world, sub="mallory", tenant="globex")
    assert native(sc, mallory, invoice("globex")) == (True, [])
    with grpc.insecure_channel(sc.grpc) as channel:
        stub: Any = pb_grpc.AuthorizationStub(channel)
        response = stub.Check(envoy_request("GET", "/tenants/globex/invoices/inv-1",
                                            {"authorization": f"Bearer {mallory}"}), timeout=5)
    assert response.status.code == 0


def test_the_unchanged_bundle_allows_the_same_requests(sidecar: SidecarProcess, world: World) -> None:
    """The control: the sidecar serving the example bundle as it is allows what the new rule denies."""
    answers = http_doors(world, sidecar, token(world))
    assert answers == {"native": (True, []), "authzen": (True, []), "opa": (True, []), "evaluations": True}
    http = httpx.get(f"{sidecar.base_url}/envoy/ext_authz/tenants/acme/invoices/inv-1",
                     headers={"Authorization": f"Bearer {token(world)}"})
    assert http.status_code == 200, http.text
