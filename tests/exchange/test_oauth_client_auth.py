"""Client authentication at ``/oauth2/token`` as real OAuth clients send it, against a real sidecar
whose client secret holds the characters form-urlencoding changes (``+``, ``%``, ``:``, space, ``/``).

RFC 6749 2.3.1 has the client form-urlencode id and secret before HTTP Basic; authlib (and
requests, httpx, ``curl -u``) send them as they are. The sidecar accepted only the encoded
spelling, so authlib's ``client_secret_basic`` failed with ``invalid_client`` for such a secret.
"""

from __future__ import annotations

import base64
import gzip
import os
from collections.abc import Iterator
from urllib.parse import quote_plus

import httpx
import pytest
from authlib.integrations.httpx_client import OAuth2Client, OAuthError
from tenantguard.identity.tokens import mint

from tests.harness.sidecar_process import SidecarProcess, drain, start_sidecar
from tests.harness.sidecar_world import World

from .mesh import GRANT, JWT

SECRET = "s3cret+with:odd%2Bchars and/slash"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("oauth-auth"))


@pytest.fixture(scope="module")
def orders(world: World) -> Iterator[SidecarProcess]:
    secret_file = world.root / "client-secret"
    secret_file.write_text(SECRET)
    os.chmod(secret_file, 0o600)
    proc = start_sidecar(world.args("orders", "--grpc-port", "-1", "--exchange-client-secret-file", str(secret_file)))
    drain(proc)
    yield proc
    proc.stop()


def form(world: World) -> dict[str, str]:
    subject = mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders", roles=["editor"],
                   scope="invoices:read")
    return {"grant_type": GRANT, "subject_token": subject, "subject_token_type": JWT, "audience": "billing"}


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_authlib_client_secret_basic_with_an_unencoded_secret(orders: SidecarProcess, world: World) -> None:
    with OAuth2Client(client_id="orders", client_secret=SECRET, token_endpoint_auth_method="client_secret_basic") as c:
        token = c.fetch_token(f"{orders.base_url}/oauth2/token", **form(world))
    assert token["token_type"].lower() == "bearer" and token["access_token"]


@pytest.mark.parametrize("spelling", ["as-is", "form-urlencoded"])
def test_either_spelling_of_the_secret_authenticates(orders: SidecarProcess, world: World, spelling: str) -> None:
    user, password = ("orders", SECRET) if spelling == "as-is" else (quote_plus("orders"), quote_plus(SECRET))
    response = httpx.post(f"{orders.base_url}/oauth2/token", data=form(world), headers=basic(user, password))
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("password", [
    SECRET.replace("+", " "),  # what decoding the as-is secret would give: not the secret
    SECRET.replace("%2B", "+"),  # the secret decoded once: not the secret either
    SECRET[:-1], SECRET + "x", "",
])
def test_near_misses_are_invalid_client(orders: SidecarProcess, world: World, password: str) -> None:
    response = httpx.post(f"{orders.base_url}/oauth2/token", data=form(world), headers=basic("orders", password))
    assert response.status_code == 401 and response.json()["error"] == "invalid_client", response.text
    assert response.headers["www-authenticate"].startswith("Basic")


def test_authlib_client_secret_post_is_invalid_client(orders: SidecarProcess, world: World) -> None:
    """The metadata names client_secret_basic only; the form method is refused, not silently taken."""
    with OAuth2Client(client_id="orders", client_secret=SECRET, token_endpoint_auth_method="client_secret_post") as c, \
            pytest.raises(OAuthError) as refused:
        c.fetch_token(f"{orders.base_url}/oauth2/token", **form(world))
    assert refused.value.error == "invalid_client"


def test_two_authentication_methods_are_invalid_request(orders: SidecarProcess, world: World) -> None:
    """RFC 6749 2.3: one method per request; Basic plus client_secret in the form was accepted."""
    response = httpx.post(f"{orders.base_url}/oauth2/token", headers=basic("orders", SECRET),
                          data={**form(world), "client_id": "orders", "client_secret": SECRET})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_request" and "two_authentication_methods" in \
        response.json()["error_description"]
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(("encoding", "status"), [("gzip", 200), ("br", 400)])
def test_a_content_encoding_is_decoded_or_named(orders: SidecarProcess, world: World, encoding: str,
                                                status: int) -> None:
    """A gzip form is read as the plain one; another coding is an OAuth invalid_request naming it
    (both were "form body must be ASCII")."""
    body = str(httpx.QueryParams(form(world))).encode()
    content = gzip.compress(body) if encoding == "gzip" else body
    response = httpx.post(f"{orders.base_url}/oauth2/token", content=content, headers={
        **basic("orders", SECRET), "content-type": "application/x-www-form-urlencoded", "content-encoding": encoding})
    assert response.status_code == status, response.text
    if status != 200:
        assert response.json()["error"] == "invalid_request" and encoding in response.json()["error_description"]


def test_authlib_fetch_token_by_get_is_an_oauth_error(orders: SidecarProcess, world: World) -> None:
    """authlib offers ``fetch_token(method="GET")``; RFC 6749 3.2 has the client POST. The refusal is an
    RFC 6749 error authlib reads (was: the sidecar's own 405 body, whose ``error`` no OAuth client knows)."""
    client = OAuth2Client(client_id="orders", client_secret=SECRET, token_endpoint_auth_method="client_secret_basic")
    with client, pytest.raises(OAuthError) as refused:
        client.fetch_token(f"{orders.base_url}/oauth2/token", method="GET", **form(world))
    assert refused.value.error == "invalid_request"
    assert refused.value.description is not None and "POST" in refused.value.description
