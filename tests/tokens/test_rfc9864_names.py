"""RFC 9864 names EdDSA over Ed25519 "Ed25519" and deprecates "EdDSA"; IdPs and JOSE libraries
(joserfc already warns on "EdDSA") move to it. A token or JWK saying "Ed25519" is the same
algorithm on the same key type and verifies; the name never widens what a key may do: it
is refused for any other key type, and Ed448 ("EdDSA" or "Ed448") stays refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed448
from jwt.algorithms import OKPAlgorithm
from tenantguard import errors
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet, public_jwk
from tenantguard.identity.tokens import TokenVerifier, VerifyOptions, mint

from tests.harness.forged_tokens import segment, signed_text, split


def _renamed(token: str, key: SigningKey, alg: str) -> str:
    """``token`` signed again by ``key`` with its header's ``alg`` saying ``alg``."""
    header, payload, _ = split(token)
    return signed_text(key.private_key, json.dumps({**header, "alg": alg}), json.dumps(payload))


def _token(key: SigningKey) -> str:
    return mint(key, issuer="edge", sub="alice", tenant_id="acme", audience="orders", roles=["editor"])


def _verifier(key: SigningKey, algorithms: frozenset[str] = frozenset({"EdDSA"})) -> TokenVerifier:
    trust = TrustSet()
    trust.add_public_key(key.public_key, "edge")
    return TokenVerifier(trust, VerifyOptions(audience="orders", algorithms=algorithms))


@pytest.mark.parametrize("configured", [{"EdDSA"}, {"Ed25519"}])
def test_a_context_token_saying_ed25519_verifies_either_way_the_service_names_it(configured: set[str]) -> None:
    key = SigningKey.generate("EdDSA")
    verifier = _verifier(key, frozenset(configured))
    assert verifier.options.algorithms == {"EdDSA"}
    for alg in ("EdDSA", "Ed25519"):
        assert verifier.verify(_renamed(_token(key), key, alg)).sub == "alice"


@pytest.mark.parametrize("alg", ["ES256", "RS256"])
def test_ed25519_on_another_key_type_is_refused(alg: str) -> None:
    key = SigningKey.generate(alg)  # type: ignore[arg-type]
    verifier = _verifier(key, frozenset({"EdDSA", alg}))
    assert verifier.verify(_token(key)).sub == "alice"  # control: its own name verifies
    with pytest.raises(errors.AlgorithmNotAllowed, match="does not match its key"):
        verifier.verify(_renamed(_token(key), key, "Ed25519"))


def test_ed25519_is_refused_where_the_service_did_not_enable_eddsa() -> None:
    key = SigningKey.generate("EdDSA")
    verifier = _verifier(key, frozenset({"ES256"}))
    with pytest.raises(errors.AlgorithmNotAllowed, match="'Ed25519' is not accepted"):
        verifier.verify(_renamed(_token(key), key, "Ed25519"))


@pytest.mark.parametrize("names", [{"Ed448"}, {"ed25519"}, {"EdDSA", "HS256"}, set()])
def test_a_configured_list_naming_anything_else_is_refused(names: set[str]) -> None:
    with pytest.raises(errors.ConfigError, match="RFC 9864"):
        VerifyOptions(audience="orders", algorithms=frozenset(names))


def test_a_trusted_jwk_saying_ed25519_loads_only_for_an_ed25519_key() -> None:
    ed = SigningKey.generate("EdDSA")
    jwk = {**public_jwk(ed.public_key), "alg": "Ed25519", "iss": "edge"}
    assert TrustedKey.from_jwk(jwk).alg == "EdDSA"
    p256 = SigningKey.generate("ES256")
    with pytest.raises(errors.KeyMaterialError, match="does not match the key type"):
        TrustedKey.from_jwk({**public_jwk(p256.public_key), "alg": "Ed25519", "iss": "edge"})


def test_ed448_stays_refused_under_either_name() -> None:
    key = ed448.Ed448PrivateKey.generate()
    jwk: dict[str, Any] = OKPAlgorithm.to_jwk(key.public_key(), as_dict=True)
    for alg in ("EdDSA", "Ed448", "Ed25519"):
        with pytest.raises(errors.KeyMaterialError):
            TrustedKey.from_jwk({**jwk, "alg": alg, "iss": "edge"})
    header = {"alg": "Ed448", "kid": "x"}
    with pytest.raises(errors.AlgorithmNotAllowed):
        _verifier(SigningKey.generate("EdDSA")).verify(f"{segment(header)}.{segment({'sub': 'a'})}.{'A' * 86}")
