"""An off-the-shelf OAuth client finds the token endpoint through RFC 8414 metadata, exchanges
a token there (RFC 8693) and verifies the result with the keys from ``jwks_uri``.

Real sidecar (orders, example bundle, HTTP Basic client secret), real authlib client.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from authlib.integrations.httpx_client import OAuth2Client, OAuthError
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from joserfc import jwt
from joserfc.jwk import KeySet
from tenantguard.identity.tokens import mint

from tests.harness.sidecar_process import SidecarProcess, drain, start_sidecar
from tests.harness.sidecar_world import World

from .mesh import ACCESS_TOKEN, GRANT, ID_TOKEN, JWT

SECRET = "s3cret-for-orders-0123456789"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("oauth"))


@pytest.fixture(scope="module")
def orders(world: World) -> Iterator[SidecarProcess]:
    secret_file = world.root / "client-secret"
    secret_file.write_text(SECRET)
    os.chmod(secret_file, 0o600)
    proc = start_sidecar(world.args("orders", "--grpc-port", "-1", "--exchange-client-secret-file", str(secret_file)))
    drain(proc)
    yield proc
    proc.stop()


def metadata(proc: SidecarProcess) -> dict[str, Any]:
    response = httpx.get(f"{proc.base_url}/.well-known/oauth-authorization-server")
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


def test_metadata_says_what_the_token_endpoint_does(orders: SidecarProcess) -> None:
    meta = metadata(orders)
    assert meta["issuer"] == orders.base_url  # the bound address and real port (no --public-url)
    assert meta["token_endpoint"] == f"{orders.base_url}/oauth2/token"
    assert meta["jwks_uri"] == f"{orders.base_url}/.well-known/jwks.json"
    assert meta["grant_types_supported"] == [GRANT]
    assert meta["token_endpoint_auth_methods_supported"] == ["client_secret_basic"]  # the secret file is set
    assert set(meta["token_exchange_subject_token_types_supported"]) == {JWT, ACCESS_TOKEN}  # id_token: edge only
    assert set(meta["token_exchange_issued_token_types_supported"]) == {JWT, ACCESS_TOKEN}
    assert "authorization_endpoint" not in meta and "response_types_supported" not in meta
    checked = AuthorizationServerMetadata(meta)  # authlib's own RFC 8414 checks (those not about https)
    checked.validate_grant_types_supported()
    checked.validate_token_endpoint_auth_methods_supported()
    checked.validate_authorization_endpoint()  # allowed absent: no grant here uses it
    checked.validate_issuer()


def test_without_a_client_secret_the_method_is_none(world: World) -> None:
    proc = start_sidecar(world.args("orders", "--grpc-port", "-1"))
    drain(proc)
    try:
        meta = metadata(proc)
        unauthenticated = httpx.post(meta["token_endpoint"], data={"grant_type": GRANT})
    finally:
        proc.stop()
    assert meta["token_endpoint_auth_methods_supported"] == ["none"]
    assert unauthenticated.json()["error"] == "invalid_request"  # got past client auth: none was needed


def test_jwks_is_the_same_key_set_as_v1_keys(orders: SidecarProcess) -> None:
    jwks = httpx.get(metadata(orders)["jwks_uri"]).json()
    assert jwks == httpx.get(f"{orders.base_url}/v1/keys").json()
    assert [k["kty"] for k in jwks["keys"]] == ["OKP"] and all("d" not in k for k in jwks["keys"])


def test_authlib_discovers_exchanges_and_verifies(orders: SidecarProcess, world: World) -> None:
    subject_token = mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders",
                         roles=["editor"], scope="invoices:read invoices:write")
    with OAuth2Client(client_id="orders", client_secret=SECRET,
                      token_endpoint_auth_method="client_secret_basic") as client:
        meta = client.request("GET", f"{orders.base_url}/.well-known/oauth-authorization-server",
                              withhold_token=True).json()
        assert "client_secret_basic" in meta["token_endpoint_auth_methods_supported"]
        token = client.fetch_token(meta["token_endpoint"], grant_type=GRANT, subject_token=subject_token,
                                   subject_token_type=JWT, audience="billing", scope="invoices:read")
    key_set = KeySet.import_key_set(httpx.get(meta["jwks_uri"]).json())
    assert token["issued_token_type"] == ACCESS_TOKEN and token["token_type"].lower() == "bearer"
    verified = jwt.decode(token["access_token"], key_set, algorithms=["EdDSA"])  # raises unless it verifies
    jwt.JWTClaimsRegistry(exp={"essential": True}).validate(verified.claims)
    claims = verified.claims
    assert claims["aud"] == "billing" and claims["sub"] == "alice" and claims["tenant_id"] == "acme"
    assert claims["iss"] == "sidecar:orders" and claims["act"] == {"sub": "svc:orders"}
    assert claims["scope"] == "invoices:read"


def test_a_wrong_client_secret_is_invalid_client(orders: SidecarProcess, world: World) -> None:
    subject_token = mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders")
    with OAuth2Client(client_id="orders", client_secret="wrong-secret-0123456789",
                      token_endpoint_auth_method="client_secret_basic") as client, pytest.raises(OAuthError) as refused:
        client.fetch_token(f"{orders.base_url}/oauth2/token", grant_type=GRANT, subject_token=subject_token,
                           subject_token_type=JWT, audience="billing")
    assert refused.value.error == "invalid_client"


def test_id_token_subjects_are_refused_outside_edge_mode(orders: SidecarProcess, world: World) -> None:
    """What the metadata leaves out is indeed refused."""
    subject_token = mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders")
    response = httpx.post(f"{orders.base_url}/oauth2/token", auth=("orders", SECRET), data={
        "grant_type": GRANT, "subject_token": subject_token, "subject_token_type": ID_TOKEN, "audience": "billing"})
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"
