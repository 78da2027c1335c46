"""Each attack on the exchange, tried against real sidecar processes.

The subject tokens are minted by hand with the keys an attacker might hold (a stolen
sidecar key, an untrusted key) or by the real edge issuer, then presented at the door.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import jwt
import pytest
from tenantguard.identity.keys import SigningKey
from tenantguard.identity.tokens import mint

from tests.harness.exchangers import refused
from tests.harness.forged_tokens import b64, signed_text, split, with_payload

from .conftest import ORDERS_AUTH
from .idp import LocalIdP
from .mesh import GRANT, ID_TOKEN, JWT, TOKEN_URL, Mesh


def user_token(mesh: Mesh, aud: str = "orders", **kw: Any) -> str:
    args: dict[str, Any] = {"issuer": "edge", "sub": "alice", "tenant_id": "acme", "audience": aud,
                            "roles": ["editor"], "scope": "invoices:read orders:*"}
    args.update(kw)
    return mint(mesh.world.edge, **args)


def claims(r: httpx.Response) -> dict[str, Any]:
    assert r.status_code == 200, r.text
    return jwt.decode(r.json()["access_token"], options={"verify_signature": False})


# -- scope and audience ---------------------------------------------------------------


@pytest.mark.parametrize("scope", ["invoices:write", "invoices:read invoices:write", "invoices:*", "*"])
def test_scope_cannot_be_widened_beyond_the_subject_token(mesh: Mesh, scope: str) -> None:
    r = mesh.exchange("orders", user_token(mesh), "billing", scope=scope, auth=ORDERS_AUTH)
    refused(r, "invalid_scope")


def test_scope_beyond_the_call_rule_is_refused(mesh: Mesh) -> None:
    """An unrestricted user token still cannot get billing:admin: the rule grants only its scopes."""
    r = mesh.exchange("orders", user_token(mesh, scope=None), "billing", scope="billing:admin", auth=ORDERS_AUTH)
    refused(r, "invalid_scope", "scope_not_allowed")


def test_partly_covered_scope_is_narrowed_to_what_the_rule_allows(mesh: Mesh) -> None:
    r = mesh.exchange("orders", user_token(mesh, scope=None), "billing", scope="invoices:read billing:admin",
                      auth=ORDERS_AUTH)
    assert claims(r)["scope"] == "invoices:read" and r.json()["scope"] == "invoices:read"


@pytest.mark.parametrize("target", ["exports", "identity", "nosuchservice"])
def test_audience_not_permitted(mesh: Mesh, target: str) -> None:
    refused(mesh.exchange("orders", user_token(mesh), target, auth=ORDERS_AUTH), "invalid_target")


# -- lifetime -------------------------------------------------------------------------


def test_exp_is_never_extended(mesh: Mesh) -> None:
    short = user_token(mesh, lifetime=20)
    c = claims(mesh.exchange("orders", short, "billing", scope="invoices:read", auth=ORDERS_AUTH))
    assert c["exp"] <= jwt.decode(short, options={"verify_signature": False})["exp"]
    long_lived = user_token(mesh, lifetime=3600)
    c = claims(mesh.exchange("orders", long_lived, "billing", scope="invoices:read", auth=ORDERS_AUTH))
    assert c["exp"] - c["iat"] <= 120  # billing's zone max_lifetime, below the sidecar's 300 s


def test_expired_subject_token(mesh: Mesh) -> None:
    expired = user_token(mesh, now=time.time() - 600)
    refused(mesh.exchange("orders", expired, "billing", auth=ORDERS_AUTH), "invalid_request", "token_expired")


# -- forged and replayed tokens -------------------------------------------------------


def test_forged_act_chain_in_a_tampered_token(mesh: Mesh) -> None:
    """Rewriting act in a real token breaks its signature."""
    real = user_token(mesh)
    _, payload, _ = split(real)
    forged = with_payload(real, {**payload, "act": {"sub": "svc:edge"}})
    refused(mesh.exchange("orders", forged, "billing", auth=ORDERS_AUTH), "invalid_request", "signature_invalid")


def test_forged_act_chain_from_an_untrusted_key(mesh: Mesh) -> None:
    rogue = SigningKey.generate()
    forged = mint(rogue, issuer="sidecar:edge", sub="alice", tenant_id="acme", audience="orders",
                  act={"sub": "svc:edge"})
    refused(mesh.exchange("orders", forged, "billing", auth=ORDERS_AUTH), "invalid_request", "unknown_kid")


def test_another_services_key_cannot_claim_a_different_actor(mesh: Mesh) -> None:
    """reports' real key (trusted for sidecar:reports) signs a token naming svc:orders as actor."""
    stolen = mesh.exchange_key("reports")
    lie = mint(stolen, issuer="sidecar:reports", sub="alice", tenant_id="acme", audience="billing",
               roles=["editor"], scope="invoices:read", act={"sub": "svc:orders"})
    r = mesh.check("billing", lie, "invoices:read",
                   {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}})
    assert r.status_code == 401 and r.json()["error"] == "actor_mismatch", r.text
    # and it cannot be laundered through an exchange either
    lie_for_orders = mint(stolen, issuer="sidecar:reports", sub="alice", tenant_id="acme", audience="orders",
                          act={"sub": "svc:edge"})
    refused(mesh.exchange("orders", lie_for_orders, "billing", auth=ORDERS_AUTH), "invalid_request", "actor_mismatch")


def test_token_for_orders_replayed_at_billing(mesh: Mesh) -> None:
    for_orders = user_token(mesh)
    r = mesh.check("billing", for_orders, "invoices:read",
                   {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}})
    assert r.status_code == 401 and r.json()["error"] == "audience_invalid"
    exchanged = mesh.exchange("orders", for_orders, "billing", scope="invoices:read", auth=ORDERS_AUTH)
    # the token minted for billing is no good anywhere else, e.g. at reports (which trusts orders' key)
    for_billing = exchanged.json()["access_token"]
    refused(mesh.exchange("reports", for_billing, "exports"), "invalid_request", "audience_invalid")
    r = mesh.check("reports", for_billing, "reports:read", {"type": "report", "id": "r-1"})
    assert r.status_code == 401 and r.json()["error"] == "audience_invalid"


def test_subject_token_for_a_different_audience(mesh: Mesh) -> None:
    """billing's sidecar will not exchange a token that was issued for orders."""
    refused(mesh.exchange("billing", user_token(mesh, aud="orders"), "exports"), "invalid_request", "audience_invalid")


def test_chain_deeper_than_the_bound_is_refused_before_minting(mesh: Mesh) -> None:
    deep = {"sub": "svc:edge", "act": {"sub": "svc:a", "act": {"sub": "svc:b", "act": {"sub": "svc:c"}}}}
    token = mint(mesh.exchange_key("edge"), issuer="sidecar:edge", sub="alice", tenant_id="acme",
                 audience="orders", act=deep)
    refused(mesh.exchange("orders", token, "billing", auth=ORDERS_AUTH), "invalid_request", "actor_chain_too_deep")


def test_may_act_is_honoured(mesh: Mesh) -> None:
    for_reports_only = user_token(mesh, may_act={"sub": "svc:reports"})
    refused(mesh.exchange("orders", for_reports_only, "billing", auth=ORDERS_AUTH), "unauthorized_client", "may_act")
    for_orders = user_token(mesh, may_act={"sub": "svc:orders"})
    assert "may_act" not in claims(mesh.exchange("orders", for_orders, "billing", auth=ORDERS_AUTH))


def test_id_token_type_is_for_edge_issuers_only(mesh: Mesh) -> None:
    r = mesh.exchange("orders", user_token(mesh), "billing", token_type="urn:ietf:params:oauth:token-type:id_token",
                      auth=ORDERS_AUTH)
    refused(r, "invalid_request")


# -- the door -------------------------------------------------------------------------


def test_client_authentication_when_a_secret_is_configured(mesh: Mesh) -> None:
    token = user_token(mesh)
    for auth in (None, ("orders", "wrong-secret-wrong-secret"), ("billing", ORDERS_AUTH[1])):
        r = mesh.exchange("orders", token, "billing", auth=auth)
        refused(r, "invalid_client")
        assert r.headers["www-authenticate"].startswith("Basic")


@pytest.mark.parametrize(("form", "error"), [
    ({}, "invalid_request"),
    ({"grant_type": "client_credentials"}, "unsupported_grant_type"),
    ({"grant_type": GRANT}, "invalid_request"),
    ({"grant_type": GRANT, "subject_token": "x", "subject_token_type": "urn:example:saml"}, "invalid_request"),
    ({"grant_type": GRANT, "subject_token": "x", "subject_token_type": JWT}, "invalid_request"),  # no audience
    ({"grant_type": GRANT, "subject_token": "x", "subject_token_type": JWT, "audience": "a b"}, "invalid_target"),
    ({"grant_type": GRANT, "subject_token": "x", "subject_token_type": JWT, "audience": "billing",
      "scope": 'bad"scope'}, "invalid_scope"),
    ({"grant_type": GRANT, "subject_token": "x", "subject_token_type": JWT, "audience": "billing",
      "actor_token_type": JWT}, "invalid_request"),
    ({"grant_type": GRANT, "subject_token": "x", "subject_token_type": JWT, "audience": "billing",
      "requested_token_type": "urn:ietf:params:oauth:token-type:saml2"}, "invalid_request"),
])
def test_malformed_requests_get_oauth_errors(mesh: Mesh, form: dict[str, str], error: str) -> None:
    r = httpx.post(mesh.url("billing") + TOKEN_URL, data=form)
    refused(r, error)


def test_repeated_parameter_and_json_body_are_invalid_requests(mesh: Mesh) -> None:
    url = mesh.url("billing") + TOKEN_URL
    body = f"grant_type={GRANT}&grant_type={GRANT}&subject_token=x&subject_token_type={JWT}&audience=exports"
    r = httpx.post(url, content=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    refused(r, "invalid_request")
    refused(httpx.post(url, json={"grant_type": GRANT}), "invalid_request")


def test_resource_names_the_target_as_svc_uri(mesh: Mesh) -> None:
    r = mesh.exchange("orders", user_token(mesh), None, resource="svc:billing", scope="invoices:read",
                      auth=ORDERS_AUTH)
    assert claims(r)["aud"] == "billing"
    refused(mesh.exchange("orders", user_token(mesh), "billing", resource="svc:exports", auth=ORDERS_AUTH),
            "invalid_target")
    refused(mesh.exchange("orders", user_token(mesh), None, resource="https://billing.example/", auth=ORDERS_AUTH),
            "invalid_target")


def test_keys_and_propagation_endpoints(mesh: Mesh) -> None:
    keys = httpx.get(mesh.url("orders") + "/v1/keys").json()["keys"]
    assert [k["iss"] for k in keys] == ["sidecar:orders"] and "d" not in keys[0]
    assert keys == mesh.jwks["orders"]["keys"]  # the key kept under its state dir
    modes = {t: httpx.get(mesh.url("orders") + "/v1/propagation", params={"target": t}).json()["mode"]
             for t in ("billing", "exports", "orders")}
    assert modes == {"billing": "exchange", "exports": "deny", "orders": "deny"}
    assert httpx.get(mesh.url("edge") + "/v1/propagation", params={"target": "orders"}).json()["mode"] == "forward"
    assert httpx.get(mesh.url("edge") + "/v1/propagation", params={"target": "x/../y"}).status_code == 400


# -- tokens whose JSON says two things, at every door of real sidecars -------------------


def _invoice() -> dict[str, Any]:
    return {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}}


def _claims_text(aud: str, tail: str = "", **raw: str) -> str:
    now = int(time.time())
    members = {"iss": '"edge"', "sub": '"alice"', "tenant_id": '"acme"', "aud": f'"{aud}"', "iat": str(now),
               "exp": str(now + 300), "jti": f'"{uuid.uuid4().hex}"', "roles": '["editor"]',
               "scope": '"invoices:read"'}
    members.update(raw)
    return "{" + ",".join(f'"{k}":{v}' for k, v in members.items()) + tail + "}"


def _edge_signed(mesh: Mesh, body: str) -> str:
    edge = mesh.world.edge
    return signed_text(edge.private_key, f'{{"alg":"EdDSA","kid":"{edge.kid}"}}', body)


@pytest.mark.parametrize(("tail", "raw"), [
    (',"tenant_id":"globex"', {}),
    (',"aud":"billing"', {}),
    ("", {"exp": "NaN"}),
    ("", {"iat": "NaN"}),
    ("", {"exp": "1e400"}),
])
def test_double_meaning_tokens_are_refused_at_the_decision_and_exchange_doors(
        mesh: Mesh, tail: str, raw: dict[str, str]) -> None:
    """Signed with the real edge key: only the JSON is wrong, and every door says so, typed."""
    at_billing = _edge_signed(mesh, _claims_text("billing", tail, **raw))
    r = mesh.check("billing", at_billing, "invoices:read", _invoice())
    assert r.status_code == 401 and r.json()["error"] == "token_malformed", r.text
    at_orders = _edge_signed(mesh, _claims_text("orders", tail, **raw))
    refused(mesh.exchange("orders", at_orders, "billing", auth=ORDERS_AUTH), "invalid_request", "token_malformed")


def test_deeply_nested_tokens_are_a_typed_refusal_not_a_crash(mesh: Mesh) -> None:
    """No key needed for the header: 5,000 ``[`` there reached json.loads' recursion limit."""
    unsigned = f"{b64(b'[' * 5000)}.{b64(b'{}')}.c2ln"
    signed = _edge_signed(mesh, "[" * 5000)
    for token in (unsigned, signed):
        r = mesh.check("billing", token, "invoices:read", _invoice())
        assert r.status_code == 401 and r.json()["error"] == "token_malformed", r.text
        refused(mesh.exchange("orders", token, "billing", auth=ORDERS_AUTH), "invalid_request", "token_malformed")
        refused(mesh.exchange("edge", token, "orders", token_type=ID_TOKEN), "invalid_request", "token_malformed")


@pytest.mark.parametrize(("tail", "raw"), [
    (',"iss":"https://elsewhere.example"', {}),  # two issuers: which tenant would it be?
    (',"sub":"admin"', {}),
    ("", {"exp": "NaN"}),
    ("", {"iat": "Infinity"}),
])
def test_double_meaning_idp_tokens_are_refused_at_the_edge_door(mesh: Mesh, idp: LocalIdP, tail: str,
                                                                 raw: dict[str, str]) -> None:
    """An IdP token (acme's real RS256 key) built as text: the edge decodes it strictly too."""
    realm = idp.realms["acme"]
    kid, (alg, key) = next(iter(realm.keys.items()))
    now = int(time.time())
    members = {"iss": json.dumps(realm.issuer), "sub": '"alice"', "aud": '"edge-app"', "iat": str(now),
               "exp": str(now + 300), "groups": '["editor"]', **raw}
    body = "{" + ",".join(f'"{k}":{v}' for k, v in members.items()) + tail + "}"
    token = signed_text(key, json.dumps({"alg": alg, "kid": kid}), body)
    refused(mesh.exchange("edge", token, "orders", token_type=ID_TOKEN), "invalid_request", "token_malformed")
