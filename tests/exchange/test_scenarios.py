"""End to end through real sidecar processes: the seed scenario, the confused deputy,
and authlib performing the exchange as any OAuth client would."""

from __future__ import annotations

import warnings
from typing import Any

import httpx
import jwt
import pytest
from tenantguard.identity.tokens import mint

with warnings.catch_warnings():  # authlib 1.9 announces a move to "httpx2"; httpx is what it ships today
    from authlib.deprecate import AuthlibDeprecationWarning  # sets its own "always" filter on import

    warnings.simplefilter("ignore", AuthlibDeprecationWarning)
    from authlib.integrations.httpx_client import OAuth2Client

from .conftest import ORDERS_AUTH, ORDERS_SECRET
from .idp import LocalIdP
from .mesh import GRANT, ID_TOKEN, JWT, TOKEN_URL, Mesh


def claims(token: str) -> dict[str, Any]:
    return jwt.decode(token, options={"verify_signature": False})


def invoice(tenant: str = "acme") -> dict[str, Any]:
    return {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": tenant, "project": "p1"}}


def edge_login(mesh: Mesh, idp: LocalIdP, audience: str, realm: str = "acme", **kw: Any) -> str:
    """The edge service hands the user's IdP token to its sidecar and gets a context token."""
    r = mesh.exchange("edge", idp.realms[realm].token(**kw), audience, token_type=ID_TOKEN)
    assert r.status_code == 200, r.text
    return str(r.json()["access_token"])


def test_seed_scenario_user_edge_orders_billing(mesh: Mesh, idp: LocalIdP) -> None:
    # 1. edge mode: acme's IdP token becomes a context token for orders, minted by the edge sidecar
    r = mesh.exchange("edge", idp.realms["acme"].token(), "orders", token_type=ID_TOKEN)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "Bearer" and body["issued_token_type"].endswith(":access_token")
    for_orders = body["access_token"]
    c = claims(for_orders)
    assert (c["iss"], c["sub"], c["tenant_id"], c["aud"]) == ("sidecar:edge", "alice", "acme", "orders")
    assert c["act"] == {"sub": "svc:edge"} and c["roles"] == ["editor"]
    assert set(c["scope"].split()) == {"orders:*", "invoices:read"}  # the rule's scopes, nothing more
    # 2. orders verifies and checks
    r = mesh.check("orders", for_orders, "orders:read", {"type": "order", "id": "o-1"})
    assert r.json()["allow"] is True, r.text
    # 3. orders asks how to call billing, then exchanges
    propagation = httpx.get(f"{mesh.url('orders')}/v1/propagation", params={"target": "billing"})
    assert propagation.json()["mode"] == "exchange"
    r = mesh.exchange("orders", for_orders, "billing", scope="invoices:read", auth=ORDERS_AUTH)
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-store" and r.headers["pragma"] == "no-cache"
    for_billing = r.json()["access_token"]
    c2 = claims(for_billing)
    assert (c2["iss"], c2["sub"], c2["tenant_id"], c2["aud"], c2["scope"]) == (
        "sidecar:orders", "alice", "acme", "billing", "invoices:read")
    assert c2["act"] == {"sub": "svc:orders", "act": {"sub": "svc:edge"}}
    assert c2["exp"] <= c["exp"] and c2["jti"] != c["jti"]
    # 4. billing verifies (orders' key, trusted for sidecar:orders) and checks caller=orders
    r = mesh.check("billing", for_billing, "invoices:read", invoice())
    assert r.json() == {**r.json(), "allow": True}, r.text
    r = mesh.check("billing", for_billing, "invoices:write", invoice())
    assert r.json()["allow"] is False and r.json()["reasons"] == ["scope_exceeded"]


def test_billing_never_accepts_reports_as_caller(mesh: Mesh, idp: LocalIdP) -> None:
    """One line of data.json: billing has no call rule for reports, so no exchange and no token."""
    for_reports = edge_login(mesh, idp, "reports")
    r = mesh.exchange("reports", for_reports, "billing")
    assert r.status_code == 400 and r.json()["error"] == "invalid_target"
    assert r.json()["error_description"].startswith("audience_not_allowed")


def test_confused_deputy_reports_cannot_fetch_another_tenants_report(mesh: Mesh, idp: LocalIdP) -> None:
    """alice of acme asks reports for globex's report: reports calls exports on her behalf,
    and exports decides with the tenant in the exchanged token (acme), not with reports'
    identity, so globex's report is refused while acme's is served."""
    # A user token from the edge issuer without scope: an edge-mode token would carry only the
    # reports:* scope of the edge->reports rule and could never be narrowed into exports:read.
    for_reports = mint(mesh.world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="reports",
                       roles=["editor"])
    r = mesh.exchange("reports", for_reports, "exports", scope="exports:read")
    assert r.status_code == 200, r.text
    for_exports = r.json()["access_token"]
    assert claims(for_exports)["tenant_id"] == "acme"
    report = {"type": "report", "id": "r-1"}
    own = mesh.check("exports", for_exports, "exports:read", {**report, "properties": {"tenant_id": "acme"}})
    assert own.json()["allow"] is True, own.text
    other = mesh.check("exports", for_exports, "exports:read", {**report, "properties": {"tenant_id": "globex"}})
    assert other.json()["allow"] is False and other.json()["reasons"] == ["tenant_mismatch"]
    # Saying "I am globex" in the body does not help either: the token is the only source of the tenant.
    spoof = mesh.check("exports", for_exports, "exports:read", {**report, "properties": {"tenant_id": "globex"}},
                       subject={"type": "user", "id": "alice", "properties": {"tenant_id": "globex"}})
    assert spoof.json()["allow"] is False and spoof.json()["reasons"] == ["tenant_mismatch"]


def test_globex_idp_token_becomes_a_globex_context_token(mesh: Mesh, idp: LocalIdP) -> None:
    """The tenant comes from the issuer that verified the token; claims cannot choose it."""
    token = idp.realms["globex"].token(sub="mallory", tenant_id="acme")
    r = mesh.exchange("edge", token, "orders", token_type=ID_TOKEN)
    assert r.status_code == 200, r.text
    assert claims(r.json()["access_token"])["tenant_id"] == "globex"


def test_idp_token_signed_by_another_tenants_key_is_refused(mesh: Mesh, idp: LocalIdP) -> None:
    """globex's key cannot mint for acme's issuer: the key must come from acme's JWKS."""
    acme, globex = idp.realms["acme"], idp.realms["globex"]
    forged = jwt.encode({**claims(acme.token()), "iss": acme.issuer}, globex.keys["globex-k1"][1], algorithm="ES256",
                        headers={"kid": "globex-k1"})
    r = mesh.exchange("edge", forged, "orders", token_type=ID_TOKEN)
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"


def test_authlib_client_performs_the_exchange(mesh: Mesh, idp: LocalIdP) -> None:
    for_orders = edge_login(mesh, idp, "orders")
    with OAuth2Client(client_id="orders", client_secret=ORDERS_SECRET,
                      token_endpoint_auth_method="client_secret_basic") as client:
        token = client.fetch_token(mesh.url("orders") + TOKEN_URL, grant_type=GRANT, subject_token=for_orders,
                                   subject_token_type=JWT, audience="billing", scope="invoices:read")
        assert token["token_type"] == "Bearer" and token["scope"] == "invoices:read"
        assert 0 < token["expires_in"] <= 120  # billing's zone caps the lifetime
        assert mesh.check("billing", token["access_token"], "invoices:read", invoice()).json()["allow"] is True
        with pytest.raises(client.oauth_error_class) as refused:
            client.fetch_token(mesh.url("orders") + TOKEN_URL, grant_type=GRANT, subject_token=for_orders,
                               subject_token_type=JWT, audience="billing", scope="invoices:write")
        assert refused.value.error == "invalid_scope"
