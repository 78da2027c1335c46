"""RFC 8693 token exchange driven by requests-oauthlib (``OAuth2Session.fetch_token``), the other
widely used Python OAuth client besides authlib, against a real sidecar with a client secret that
holds the characters form-urlencoding changes.

oauthlib has no token-exchange client, so the test does what its users do: a
``BackendApplicationClient`` whose ``grant_type`` is RFC 8693's. ``fetch_token`` sends
HTTP Basic by default (client_secret_basic, the method the metadata names), parses the JSON
answer (``token_type``, ``expires_in``, ``scope`` as a list) and maps RFC 6749 5.2 error codes
to its exception classes, so every refusal below must carry the right ``error``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from oauthlib.oauth2 import BackendApplicationClient, InvalidClientError, OAuth2Error
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error
from requests_oauthlib import OAuth2Session
from tenantguard.identity.tokens import mint

from tests.harness.sidecar_process import SidecarProcess, drain, start_sidecar
from tests.harness.sidecar_world import World

from .mesh import ACCESS_TOKEN, GRANT, JWT

SECRET = "s3cret+with:odd%2Bchars and/slash"


class TokenExchangeClient(BackendApplicationClient):
    """oauthlib's client-credentials client, asking for RFC 8693's grant instead."""

    grant_type = GRANT


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("oauthlib"))


@pytest.fixture(scope="module")
def orders(world: World) -> Iterator[SidecarProcess]:
    secret_file = world.root / "client-secret"
    secret_file.write_text(SECRET)
    os.chmod(secret_file, 0o600)
    proc = start_sidecar(world.args("orders", "--grpc-port", "-1", "--exchange-client-secret-file", str(secret_file)))
    drain(proc)
    yield proc
    proc.stop()


@pytest.fixture(autouse=True)
def loopback_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """oauthlib refuses http:// token endpoints unless told; the sidecar is on loopback."""
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")


def fetch(orders: SidecarProcess, world: World, **kwargs: Any) -> dict[str, Any]:
    subject = mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders", roles=["editor"],
                   scope="invoices:read invoices:write")
    session = OAuth2Session(client=TokenExchangeClient(client_id="orders"))
    try:
        token: dict[str, Any] = session.fetch_token(f"{orders.base_url}/oauth2/token", subject_token=subject,
                                                    subject_token_type=JWT, **kwargs)
    finally:
        session.close()
    return token


def test_fetch_token_with_basic_client_authentication(orders: SidecarProcess, world: World) -> None:
    token = fetch(orders, world, audience="billing", client_secret=SECRET)
    assert token["token_type"] == "Bearer" and token["issued_token_type"] == ACCESS_TOKEN
    assert token["scope"] == ["invoices:read", "invoices:write"] and 0 < token["expires_in"] <= 300
    assert token["access_token"].count(".") == 2


def test_a_narrower_scope_is_granted_as_asked(orders: SidecarProcess, world: World) -> None:
    token = fetch(orders, world, audience="billing", client_secret=SECRET, scope=["invoices:read"])
    assert token["scope"] == ["invoices:read"]


def test_the_requested_token_type_is_named_back(orders: SidecarProcess, world: World) -> None:
    token = fetch(orders, world, resource="svc:billing", client_secret=SECRET, requested_token_type=JWT)
    assert token["issued_token_type"] == JWT


@pytest.mark.parametrize(("kwargs", "error", "raised"), [
    ({"client_secret": SECRET[:-1]}, "invalid_client", InvalidClientError),
    # the secret in the form (client_secret_post): the metadata names client_secret_basic only
    ({"client_secret": SECRET, "include_client_id": True}, "invalid_client", InvalidClientError),
    ({"client_secret": SECRET, "requested_token_type": "urn:ietf:params:oauth:token-type:id_token"},
     "invalid_request", OAuth2Error),  # oauthlib picks one of its invalid_request classes
    ({"client_secret": SECRET, "resource": "svc:orders"}, "invalid_target", CustomOAuth2Error),  # two services
])
def test_refusals_reach_oauthlib_as_their_rfc_6749_errors(orders: SidecarProcess, world: World,
                                                          kwargs: dict[str, Any], error: str,
                                                          raised: type[Exception]) -> None:
    with pytest.raises(raised) as refused:
        fetch(orders, world, audience="billing", **kwargs)
    assert refused.value.error == error  # type: ignore[attr-defined]
