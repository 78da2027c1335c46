"""How real sidecars' doors take the token: forged token classes over HTTP.

The mesh's billing sidecar answers the decision doors, orders the token exchange; every
token is signed for real with the edge key the mesh trusts, so only the trick under test
can get it refused, and each refusal must be a typed 4xx, never a 500 or an allow.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

import httpx
import pytest
from tenantguard.identity.tokens import mint

from tests.harness.exchangers import refused
from tests.harness.forged_tokens import signed_text

from .conftest import ORDERS_AUTH
from .mesh import GRANT, JWT, TOKEN_URL, Mesh

INVOICE = {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}}


def user_token(mesh: Mesh, aud: str = "billing", **kw: Any) -> str:
    args: dict[str, Any] = {"issuer": "edge", "sub": "alice", "tenant_id": "acme", "audience": aud,
                            "roles": ["editor"], "scope": "invoices:read"}
    args.update(kw)
    return mint(mesh.world.edge, **args)


def edge_forged(mesh: Mesh, aud: str, header: dict[str, Any] | None = None, **changes: Any) -> str:
    edge = mesh.world.edge
    now = int(time.time())
    body: dict[str, Any] = {"iss": "edge", "sub": "alice", "tenant_id": "acme", "aud": aud, "iat": now,
                            "exp": now + 300, "jti": uuid.uuid4().hex, "roles": ["editor"], "scope": "invoices:read"}
    body.update(changes)
    head = {"alg": "EdDSA", "kid": edge.kid, "typ": "JWT"} if header is None else header
    return signed_text(edge.private_key, json.dumps(head), json.dumps(body))


def _trailing_bits(token: str) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    head, body, signature = token.split(".")
    return f"{head}.{body}.{signature[:-1]}{alphabet[alphabet.index(signature[-1]) ^ 1]}"


FORGERIES: list[tuple[str, dict[str, Any], str]] = [
    ("typ at+jwt", {"header": "at+jwt"}, "token_malformed"),
    ("typ dpop+jwt", {"header": "dpop+jwt"}, "token_malformed"),
    ("jku header", {"header": {"jku": "https://attacker.example/jwks"}}, "token_malformed"),
    ("tenant Acme", {"tenant_id": "Acme"}, "claim_invalid"),
    ("tenant with NUL", {"tenant_id": "acme\u0000"}, "claim_invalid"),
    ("cyrillic tenant", {"tenant_id": "\u0430cme"}, "claim_invalid"),
    ("sub with space", {"sub": "alice smith"}, "claim_invalid"),
    ("jti with space", {"jti": "j 1"}, "claim_invalid"),
    ("actor without sub", {"act": {"iss": "edge"}}, "claim_invalid"),
    ("scope with tab", {"scope": "invoices:read\tinvoices:write"}, "claim_invalid"),
]


def _forgery(mesh: Mesh, aud: str, spec: dict[str, Any]) -> str:
    spec = dict(spec)
    head = spec.pop("header", None)
    header = None
    if isinstance(head, str):
        header = {"alg": "EdDSA", "kid": mesh.world.edge.kid, "typ": head}
    elif isinstance(head, dict):
        header = {"alg": "EdDSA", "kid": mesh.world.edge.kid, "typ": "JWT", **head}
    return edge_forged(mesh, aud, header, **spec)


@pytest.mark.parametrize(("label", "spec", "error"), FORGERIES, ids=[f[0] for f in FORGERIES])
def test_forged_token_classes_are_typed_refusals_at_decision_and_exchange_doors(
        mesh: Mesh, label: str, spec: dict[str, Any], error: str) -> None:
    r = mesh.check("billing", _forgery(mesh, "billing", spec), "invoices:read", INVOICE)
    assert r.status_code == 401 and r.json()["error"] == error, (label, r.text)
    refused(mesh.exchange("orders", _forgery(mesh, "orders", spec), "billing", auth=ORDERS_AUTH),
            "invalid_request", error)


def test_a_signature_spelled_with_trailing_bits_is_refused_at_both_doors(mesh: Mesh) -> None:
    good = user_token(mesh)
    assert mesh.check("billing", good, "invoices:read", INVOICE).json()["allow"] is True
    r = mesh.check("billing", _trailing_bits(good), "invoices:read", INVOICE)
    assert r.status_code == 401 and r.json()["error"] == "token_malformed", r.text
    refused(mesh.exchange("orders", _trailing_bits(user_token(mesh, aud="orders")), "billing", auth=ORDERS_AUTH),
            "invalid_request", "token_malformed")


def test_two_different_client_credentials_are_one_request_too_many(mesh: Mesh) -> None:
    """RFC 6749 2.3: one authentication method per request. The exchange door read the first
    Authorization header while a proxy or log reading the last saw another client."""
    def basic(user: str, secret: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()

    form = {"grant_type": GRANT, "subject_token": user_token(mesh, aud="orders"), "subject_token_type": JWT,
            "audience": "billing"}
    right, wrong = basic(*ORDERS_AUTH), basic("orders", "not-the-secret")
    for pair in ((right, wrong), (wrong, right)):
        r = httpx.post(mesh.url("orders") + TOKEN_URL, data=form,
                       headers=httpx.Headers([("authorization", pair[0]), ("authorization", pair[1])]))
        refused(r, "invalid_request", "duplicate_header")
    once = httpx.post(mesh.url("orders") + TOKEN_URL, data=form, headers={"authorization": right})
    assert once.status_code == 200 and "access_token" in once.json(), once.text
