"""Both Envoy doors of a real sidecar decide on the normal path, or refuse; never on a raw trick.

With alice's acme token, each of these once reached globex through the gRPC door. They go
to the real process here: as Envoy-shaped CheckRequests over gRPC (headers map and
``encode_raw_headers`` header_map), and as raw bytes on a socket to the HTTP door
(``http_service`` mode), so no client library tidies the target on the way.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import grpc
import pytest
from envoy.service.auth.v3 import attribute_context_pb2 as ac
from envoy.service.auth.v3 import external_auth_pb2 as pb
from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc

from authz_sidecar.app import SidecarApp
from authz_sidecar.config import SidecarConfig
from authz_sidecar.runtime import Sidecar
from tests.harness.sidecar_doors import ask, check
from tests.harness.sidecar_process import SidecarProcess
from tests.harness.sidecar_world import World, token

# (target, expected HTTP status, expected rule or reason)
ATTACKS: list[tuple[str, int, str]] = [
    ("/tenants/acme/../globex/orders", 400, "not_normal"),
    ("/%74enants/globex/orders", 400, "not_normal"),
    ("//tenants/globex/orders", 400, "not_normal"),
    ("/tenants%2Fglobex/orders", 400, "encoded_slash"),
    ("/./tenants/globex/orders", 400, "not_normal"),
    ("/tenants%2fglobex/orders", 400, "encoded_slash"),
    ("/tenants/acme/%2e%2e/globex/orders", 400, "not_normal"),
    ("/tenants/acme/%2E%2E/globex/orders", 400, "not_normal"),
    ("/tenants/acme/.%2e/globex/orders", 400, "not_normal"),
    ("/tenants\\globex\\orders", 400, "backslash"),
    ("/tenants%5Cglobex/orders", 400, "encoded_slash"),
    ("/tenants/acme/..\\..\\tenants\\globex", 400, "backslash"),
    ("/tenants/globex%00/orders", 400, "control"),
    ("/%C0%AE%C0%AE/tenants/globex/orders", 400, "invalid_utf8"),
    ("/tenants/acme/%C0%AE%C0%AE/%C0%AE%C0%AE/tenants/globex", 400, "invalid_utf8"),
    ("/tenants;x=1/globex/orders", 400, "path_parameter"),
    ("/tenants/acme/..;/..;/tenants/globex/orders", 400, "path_parameter"),
    ("/tenants/acme/orders/.", 400, "not_normal"),
    ("tenants/globex/orders", 400, "not_origin_form"),
    ("/tenants/globex/orders", 403, "tenant_mismatch"),
    ("/TENANTS/globex/orders", 403, "tenant_mismatch"),  # an app routing without regard to case
    ("/tenants/globex/orders?tenant=acme", 403, "tenant_mismatch"),
]
RAW_ONLY: list[tuple[str, int, str]] = [  # a NUL on the wire (a proto string can carry one too)
    ("/tenants/globex\x00/orders", 400, "control"),
]
ALLOWED = ["/tenants/acme/orders", "/tenants/acme/orders?page=2&sort=%2Fdate", "/tenants/acme/caf%c3%a9/",
           "/orders"]


def _why(body: dict[str, Any]) -> str:
    return str(body.get("detail", {}).get("rule") or ",".join(body.get("reasons", [])) or body["error"])


# ------------------------------------------------------------------------------- gRPC door


@pytest.fixture(scope="module")
def stub(sidecar: SidecarProcess) -> Any:
    assert sidecar.grpc is not None
    channel = grpc.insecure_channel(sidecar.grpc)
    yield pb_grpc.AuthorizationStub(channel)
    channel.close()


@pytest.mark.parametrize(("path", "status", "why"), ATTACKS + RAW_ONLY, ids=[a[0] for a in ATTACKS + RAW_ONLY])
def test_grpc_door_refuses_or_denies_every_path_trick(stub: Any, world: World, path: str, status: int,
                                                      why: str) -> None:
    response = check(stub, path, {"authorization": f"Bearer {token(world)}"})
    assert response.status.code != 0, "allowed"
    assert response.denied_response.status.code == status
    assert _why(json.loads(response.denied_response.body)) == why


@pytest.mark.parametrize("path", ALLOWED)
def test_grpc_door_allows_normal_paths_of_the_own_tenant(stub: Any, world: World, path: str) -> None:
    response = check(stub, path, {"authorization": f"Bearer {token(world)}"})
    assert response.status.code == 0, response.denied_response.body
    headers = {h.header.key: h.header.value for h in response.ok_response.headers}
    assert headers["x-tenant-id"] == "acme"


def test_grpc_door_reads_raw_header_map(stub: Any, world: World) -> None:
    """``encode_raw_headers: true``: headers only in header_map, values as raw_value bytes."""
    bearer = f"Bearer {token(world)}".encode()
    allowed = check(stub, "/tenants/acme/orders", raw_headers=[("authorization", bearer)])
    assert allowed.status.code == 0, allowed.denied_response.body
    claimed = check(stub, "/orders", raw_headers=[("authorization", bearer), ("x-tenant-id", b"globex")])
    assert _why(json.loads(claimed.denied_response.body)) == "tenant_mismatch"
    missing = check(stub, "/tenants/acme/orders", raw_headers=[("x-other", b"1")])
    assert missing.denied_response.status.code == 401


def test_grpc_door_refuses_two_different_authorization_headers(stub: Any, world: World) -> None:
    acme, globex = token(world), token(world, tenant="globex")
    response = check(stub, "/orders", {"authorization": f"Bearer {acme}"},
                     raw_headers=[("authorization", f"Bearer {globex}".encode())])
    assert response.denied_response.status.code == 400
    assert json.loads(response.denied_response.body)["error"] == "duplicate_header"


def test_grpc_door_rejects_a_fragment(stub: Any, world: World) -> None:
    http = ac.AttributeContext.HttpRequest(method="GET", path="/tenants/acme/orders", fragment="x",
                                           headers={"authorization": f"Bearer {token(world)}"})
    request = pb.CheckRequest(attributes=ac.AttributeContext(request=ac.AttributeContext.Request(http=http)))
    assert stub.Check(request, timeout=5).denied_response.status.code == 400


# ------------------------------------------------------------------------------- HTTP door


def raw_http(address: str, method: str, target: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request with ``target`` exactly as given; the status, headers and body."""
    host, port = address.rsplit(":", 1)
    lines = [method.encode() + b" " + target + b" HTTP/1.1", b"host: billing.internal", b"connection: close",
             *(f"{k}: {v}".encode() for k, v in headers.items())]
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(b"\r\n".join(lines) + b"\r\n\r\n")
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    return int(status_line.split()[1]), parsed, body


def envoy_http(sidecar: SidecarProcess, target: str, headers: dict[str, str],
               method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    return raw_http(sidecar.http, method, b"/envoy/ext_authz" + target.encode("latin-1"), headers)


@pytest.mark.parametrize(("path", "status", "why"), [a for a in ATTACKS if a[0].startswith("/")],
                         ids=[a[0] for a in ATTACKS if a[0].startswith("/")])
def test_http_door_refuses_or_denies_every_path_trick(sidecar: SidecarProcess, world: World, path: str,
                                                      status: int, why: str) -> None:
    got, _, body = envoy_http(sidecar, path, {"authorization": f"Bearer {token(world)}"})
    assert got == status, body
    assert _why(json.loads(body)) == why


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE", "PUT"])
@pytest.mark.parametrize("path", ALLOWED)
def test_http_door_allows_with_tenant_headers(sidecar: SidecarProcess, world: World, path: str, method: str) -> None:
    status, headers, body = envoy_http(sidecar, path, {"authorization": f"Bearer {token(world)}",
                                                       "x-tenant-subject": "mallory", "content-length": "0"},
                                       method=method)
    assert status == 200, body
    assert (headers["x-tenant-id"], headers["x-tenant-subject"]) == ("acme", "alice")
    assert headers["x-tenantguard-decision-id"]


def test_http_door_agrees_with_the_grpc_door(sidecar: SidecarProcess, world: World, stub: Any) -> None:
    viewer = token(world, roles=("viewer",))
    for method, allow in (("GET", True), ("POST", False)):
        status, _, _ = envoy_http(sidecar, "/tenants/acme/orders", {"authorization": f"Bearer {viewer}"}, method)
        response = check(stub, "/tenants/acme/orders", {"authorization": f"Bearer {viewer}"}, method=method)
        assert (status == 200) is allow and (response.status.code == 0) is allow


def test_http_door_token_problems_get_401_with_a_challenge(sidecar: SidecarProcess) -> None:
    for headers in ({}, {"authorization": "Bearer not-a-token"}):
        status, got, body = envoy_http(sidecar, "/tenants/acme/orders", headers)
        assert status == 401, body
        assert got["www-authenticate"].startswith("Bearer")
        assert json.loads(body)["error"].startswith("token_")


def test_http_door_header_claim_is_checked(sidecar: SidecarProcess, world: World) -> None:
    status, _, body = envoy_http(sidecar, "/orders", {"authorization": f"Bearer {token(world)}",
                                                      "x-tenant-id": "globex"})
    assert status == 403 and _why(json.loads(body)) == "tenant_mismatch"


def test_http_door_is_for_loopback_callers_only(world: World) -> None:
    config = SidecarConfig(service="billing", bundle_file=world.bundle_file, bundle_keys=(world.plane_pub,),
                           trust_file=world.trust_file, relations_file=world.relations_file)
    app = SidecarApp(Sidecar.from_config(config))
    headers = {"authorization": f"Bearer {token(world)}"}
    assert ask(app, "/envoy/ext_authz/tenants/acme/orders", b"", headers, method="GET").status_code == 200
    remote = ask(app, "/envoy/ext_authz/tenants/acme/orders", b"", headers, method="GET",
                 client=("203.0.113.9", 5000))
    assert remote.status_code == 403 and remote.json()["error"] == "caller_not_local"
    # the prefix is judged on the raw target: an encoded slash in it is no way in
    encoded = ask(app, "/envoy%2Fext_authz/tenants/acme/orders", b"", headers, method="GET")
    assert encoded.status_code == 400 and encoded.json()["detail"]["rule"] == "prefix_encoded"
