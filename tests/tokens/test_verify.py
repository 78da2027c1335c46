"""Every verification rule, each tried with a real token built to break it."""

from __future__ import annotations

import time

import jwt
import pytest
from tenantguard import errors
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import MAX_TOKEN_BYTES, TokenVerifier, VerifyOptions, mint

from tests.harness.forged_tokens import hmac_signed, segment, split, with_payload


def now() -> float:
    """Read per use: a module-level timestamp goes stale in a long test run."""
    return time.time()


def make(key: SigningKey, **overrides: object) -> str:
    args: dict[str, object] = dict(issuer="edge", sub="alice", tenant_id="acme", audience="orders",
                                   roles=["editor"], scope="orders:read")
    args.update(overrides)
    return mint(key, **args)  # type: ignore[arg-type]


def verifier(trust: TrustSet, **options: object) -> TokenVerifier:
    return TokenVerifier(trust, VerifyOptions(audience="orders", **options))  # type: ignore[arg-type]


def test_valid_token_yields_typed_claims(edge_key: SigningKey, trust: TrustSet) -> None:
    claims = verifier(trust).verify(make(edge_key))
    assert (claims.sub, claims.tenant_id, claims.iss) == ("alice", "acme", "edge")
    assert claims.roles == ("editor",) and claims.scope == ("orders:read",)
    assert claims.aud == ("orders",) and claims.kid == edge_key.kid
    assert claims.exp - claims.iat == 300  # the 5 minute default


@pytest.mark.parametrize("alg", ["EdDSA", "ES256", "RS256"])
def test_each_configured_algorithm_verifies(alg: str) -> None:
    key = SigningKey.generate(alg)  # type: ignore[arg-type]
    trust = TrustSet()
    trust.add_public_key(key.public_key, "edge")
    assert verifier(trust, algorithms=frozenset({alg})).verify(make(key)).sub == "alice"


def test_algorithm_not_enabled_is_refused_even_with_a_good_signature() -> None:
    key = SigningKey.generate("ES256")
    trust = TrustSet()
    trust.add_public_key(key.public_key, "edge")
    with pytest.raises(errors.AlgorithmNotAllowed):
        verifier(trust).verify(make(key))  # default allow-list is EdDSA only


def test_alg_none_is_refused(edge_key: SigningKey, trust: TrustSet) -> None:
    _, payload, _ = split(make(edge_key))
    for header in ({"alg": "none", "kid": edge_key.kid}, {"alg": "None", "kid": edge_key.kid}):
        with pytest.raises(errors.AlgorithmNotAllowed):
            verifier(trust).verify(f"{segment(header)}.{segment(payload)}.")


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
def test_hmac_with_the_public_key_as_secret_is_refused(alg: str, edge_key: SigningKey, trust: TrustSet) -> None:
    """The classic confusion: the attacker signs with HMAC keyed by the known public key."""
    _, payload, _ = split(make(edge_key))
    payload["tenant_id"] = "globex"
    for secret in (edge_key.public_pem(), edge_key.public_jwk()["x"].encode()):
        forged = hmac_signed({"alg": alg, "kid": edge_key.kid, "typ": "JWT"}, payload, secret)
        with pytest.raises(errors.AlgorithmNotAllowed):
            verifier(trust).verify(forged)


def test_hmac_refused_even_with_every_asymmetric_alg_enabled(edge_key: SigningKey, trust: TrustSet) -> None:
    _, payload, _ = split(make(edge_key))
    forged = hmac_signed({"alg": "HS256", "kid": edge_key.kid}, payload, edge_key.public_pem())
    with pytest.raises(errors.AlgorithmNotAllowed):
        verifier(trust, algorithms=frozenset({"EdDSA", "ES256", "RS256"})).verify(forged)


def test_verifier_refuses_to_be_configured_with_hmac_or_none() -> None:
    for bad in ({"HS256"}, {"none"}, set()):
        with pytest.raises(errors.ConfigError):
            VerifyOptions(audience="orders", algorithms=frozenset(bad))


def test_header_alg_that_differs_from_the_keys_alg_is_refused() -> None:
    """An ES256 key's kid with an RS256 header must not pick another verification path."""
    key = SigningKey.generate("ES256")
    trust = TrustSet()
    trust.add_public_key(key.public_key, "edge")
    rsa = SigningKey.generate("RS256")
    token = jwt.encode({"iss": "edge", "sub": "a", "tenant_id": "t", "aud": "orders", "exp": now() + 60,
                        "iat": now(), "jti": "j"}, rsa.private_key, algorithm="RS256", headers={"kid": key.kid})
    with pytest.raises(errors.AlgorithmNotAllowed):
        verifier(trust, algorithms=frozenset({"ES256", "RS256"})).verify(token)


def test_unknown_kid(trust: TrustSet) -> None:
    with pytest.raises(errors.UnknownKey):
        verifier(trust).verify(make(SigningKey.generate()))


def test_missing_kid(edge_key: SigningKey, trust: TrustSet) -> None:
    token = jwt.encode({"iss": "edge", "sub": "a", "tenant_id": "t", "aud": "orders", "exp": now() + 60,
                        "iat": now(), "jti": "j"}, edge_key.private_key, algorithm="EdDSA")
    with pytest.raises(errors.UnknownKey):
        verifier(trust).verify(token)


def test_tampered_payload_fails_the_signature(edge_key: SigningKey, trust: TrustSet) -> None:
    token = make(edge_key)
    _, payload, _ = split(token)
    with pytest.raises(errors.SignatureInvalid):
        verifier(trust).verify(with_payload(token, {**payload, "tenant_id": "globex"}))


def test_signature_from_a_different_key_under_a_trusted_kid(edge_key: SigningKey, trust: TrustSet) -> None:
    forged = make(SigningKey.generate())
    header, payload, sig = split(forged)
    relabelled = f"{segment({**header, 'kid': edge_key.kid})}.{segment(payload)}.{sig}"
    with pytest.raises(errors.SignatureInvalid):
        verifier(trust).verify(relabelled)


def test_expired(edge_key: SigningKey, trust: TrustSet) -> None:
    with pytest.raises(errors.TokenExpired):
        verifier(trust).verify(make(edge_key, lifetime=60, now=now() - 120))


def test_leeway_accepts_slightly_expired_but_is_bounded(edge_key: SigningKey, trust: TrustSet) -> None:
    token = make(edge_key, lifetime=60, now=now() - 70)
    assert verifier(trust, leeway=30).verify(token).sub == "alice"
    with pytest.raises(errors.ConfigError):
        VerifyOptions(audience="orders", leeway=31)


def test_not_yet_valid(edge_key: SigningKey, trust: TrustSet) -> None:
    with pytest.raises(errors.TokenNotYetValid):
        verifier(trust).verify(make(edge_key, now=now() + 600))


def test_wrong_audience(edge_key: SigningKey, trust: TrustSet) -> None:
    with pytest.raises(errors.AudienceInvalid):
        verifier(trust).verify(make(edge_key, audience="billing"))


def test_issuer_not_trusted_for_that_kid(trust: TrustSet) -> None:
    """A sidecar's key may sign as that sidecar only, never as the edge."""
    orders_key = SigningKey.generate()
    trust.add_public_key(orders_key.public_key, "sidecar:orders")
    with pytest.raises(errors.IssuerNotTrusted):
        verifier(trust).verify(make(orders_key, issuer="edge"))


@pytest.mark.parametrize("claim", ["tenant_id", "sub"])
def test_missing_subject_or_tenant(claim: str, edge_key: SigningKey, trust: TrustSet) -> None:
    payload = {"iss": "edge", "sub": "alice", "tenant_id": "acme", "aud": "orders", "exp": now() + 60,
               "iat": now(), "jti": "j1"}
    del payload[claim]
    token = jwt.encode(payload, edge_key.private_key, algorithm="EdDSA", headers={"kid": edge_key.kid})
    with pytest.raises(errors.ClaimMissing):
        verifier(trust).verify(token)


def test_empty_tenant_is_missing(edge_key: SigningKey, trust: TrustSet) -> None:
    token = jwt.encode({"iss": "edge", "sub": "a", "tenant_id": "", "aud": "orders", "exp": now() + 60,
                        "iat": now(), "jti": "j"}, edge_key.private_key, algorithm="EdDSA",
                       headers={"kid": edge_key.kid})
    with pytest.raises(errors.ClaimMissing):
        verifier(trust).verify(token)


@pytest.mark.parametrize("token", ["", "abc", "a.b", "a.b.c.d", "!!!.???.***", "eyJhbGciOiJFZERTQSJ9.@@.x"])
def test_malformed(token: str, trust: TrustSet) -> None:
    with pytest.raises((errors.TokenMalformed, errors.TokenMissing)):
        verifier(trust).verify(token)


def test_header_that_is_not_an_object(trust: TrustSet) -> None:
    with pytest.raises(errors.TokenMalformed):
        verifier(trust).verify(f"{segment([1, 2])}.{segment({})}.c2ln")


def test_oversized_token_is_refused_before_parsing(edge_key: SigningKey, trust: TrustSet) -> None:
    big = make(edge_key, roles=["r" * 100] * 100)
    assert len(big) > MAX_TOKEN_BYTES
    with pytest.raises(errors.TokenTooLarge):
        verifier(trust).verify(big)


def test_actor_chain_deeper_than_the_bound(edge_key: SigningKey, trust: TrustSet) -> None:
    act: dict[str, object] = {"sub": "svc:0"}
    for i in range(1, 5):
        act = {"sub": f"svc:{i}", "act": act}
    token = make(edge_key, act=act)  # depth 5
    with pytest.raises(errors.ActorChainTooDeep):
        verifier(trust, max_act_depth=4).verify(token)
    claims = verifier(trust, max_act_depth=5).verify(token)
    assert claims.actor_chain == ["svc:4", "svc:3", "svc:2", "svc:1", "svc:0"]


def test_lifetime_beyond_the_bound_is_refused(edge_key: SigningKey, trust: TrustSet) -> None:
    token = make(edge_key, lifetime=3600)
    with pytest.raises(errors.ClaimInvalid):
        verifier(trust, max_lifetime=600).verify(token)
    with pytest.raises(errors.ConfigError):
        make(edge_key, lifetime=86400)


def test_roles_of_the_wrong_type_are_refused(edge_key: SigningKey, trust: TrustSet) -> None:
    token = jwt.encode({"iss": "edge", "sub": "a", "tenant_id": "t", "aud": "orders", "exp": now() + 60,
                        "iat": now(), "jti": "j", "roles": "admin"}, edge_key.private_key,
                       algorithm="EdDSA", headers={"kid": edge_key.kid})
    with pytest.raises(errors.ClaimInvalid):
        verifier(trust).verify(token)


def test_errors_carry_http_and_grpc_mapping(edge_key: SigningKey, trust: TrustSet) -> None:
    with pytest.raises(errors.TokenExpired) as info:
        verifier(trust).verify(make(edge_key, lifetime=60, now=now() - 120))
    assert info.value.http_status == 401 and info.value.grpc_status == errors.GRPC_UNAUTHENTICATED
    assert info.value.to_dict()["error"] == "token_expired"


@pytest.mark.parametrize("claims", [
    {"tenant_id": "Acme"}, {"tenant_id": "acme-corp"}, {"tenant_id": "a" * 65}, {"sub": "a b"}, {"sub": "u#rel"},
    {"sub": "é"}, {"issuer": ""}, {"audience": ""}, {"audience": []}, {"audience": ["orders", ""]},
    {"scope": "read wr\"ite"}, {"scope": ["read", "a\\b"]}, {"roles": ["editor", 1]},
])
def test_mint_refuses_what_every_verifier_refuses(claims: dict[str, object]) -> None:
    """mint must not sign a token that no sidecar will accept: the mistake shows where it is made."""
    key = SigningKey.generate()
    kwargs: dict[str, object] = {"issuer": "edge", "sub": "alice", "tenant_id": "acme", "audience": "orders"} | claims
    with pytest.raises(errors.ClaimInvalid):
        mint(key, **kwargs)  # type: ignore[arg-type]


def test_mint_accepts_a_role_generator_and_signs_every_role(edge_key: SigningKey, trust: TrustSet) -> None:
    token = mint(edge_key, issuer="edge", sub="alice", tenant_id="acme", audience="orders",
                 roles=(r for r in ("viewer", "editor")))
    claims = verifier(trust).verify(token)
    assert claims.roles == ("viewer", "editor")
