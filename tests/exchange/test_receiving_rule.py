"""The receiving side: a token issued as sidecar:X must name svc:X as its current actor."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tenantguard import errors
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import ActorMismatch, TokenVerifier, VerifyOptions, mint


@pytest.fixture(scope="module")
def keys() -> dict[str, SigningKey]:
    return {name: SigningKey.generate() for name in ("edge", "orders", "reports")}


def verifier(keys: dict[str, SigningKey]) -> TokenVerifier:
    trust = TrustSet()
    trust.add_public_key(keys["edge"].public_key, "edge")
    for service in ("orders", "reports"):
        trust.add_public_key(keys[service].public_key, f"sidecar:{service}")
    return TokenVerifier(trust, VerifyOptions(audience="billing"))


def token(key: SigningKey, issuer: str, act: Any) -> str:
    return mint(key, issuer=issuer, sub="alice", tenant_id="acme", audience="billing", act=act, now=time.time())


def test_sidecar_token_naming_itself_is_accepted(keys: dict[str, SigningKey]) -> None:
    claims = verifier(keys).verify(token(keys["orders"], "sidecar:orders",
                                         {"sub": "svc:orders", "act": {"sub": "svc:edge"}}))
    assert claims.actor_chain == ["svc:orders", "svc:edge"]


@pytest.mark.parametrize("act", [
    None,
    {"sub": "svc:reports"},
    {"sub": "orders"},
    {"sub": "svc:edge", "act": {"sub": "svc:orders"}},  # itself, but not as the current actor
])
def test_sidecar_token_naming_another_actor_is_refused(keys: dict[str, SigningKey], act: Any) -> None:
    with pytest.raises(ActorMismatch) as err:
        verifier(keys).verify(token(keys["orders"], "sidecar:orders", act))
    assert err.value.code == "actor_mismatch" and isinstance(err.value, errors.ClaimInvalid)


def test_reports_key_cannot_speak_for_orders(keys: dict[str, SigningKey]) -> None:
    with pytest.raises(ActorMismatch):
        verifier(keys).verify(token(keys["reports"], "sidecar:reports", {"sub": "svc:orders"}))
    with pytest.raises(errors.IssuerNotTrusted):  # nor can it sign as sidecar:orders
        verifier(keys).verify(token(keys["reports"], "sidecar:orders", {"sub": "svc:orders"}))


def test_edge_tokens_are_not_subject_to_the_rule(keys: dict[str, SigningKey]) -> None:
    assert verifier(keys).verify(token(keys["edge"], "edge", None)).actor_chain == []
