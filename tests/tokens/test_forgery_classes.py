"""Classes of forged context tokens, each signed for real with the trusted edge key.

The signature is good in every case, so only what the token says can get it refused:
non-canonical base64url (one signed token written several ways), a ``typ`` naming
another kind of token, JOSE members that locate keys or nest content, claims no
revocation could ever name (tenant, sub, jti), malformed scope tokens and actor chains,
and a cached token whose key was re-bound to another issuer.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from tenantguard import errors
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet
from tenantguard.identity.revocations import RevocationList
from tenantguard.identity.tokens import TokenVerifier, VerifyOptions, is_jti, is_tenant_name, mint

from tests.harness.forged_tokens import b64, signed_text

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    body: dict[str, Any] = {"iss": "edge", "sub": "alice", "tenant_id": "acme", "aud": "orders", "iat": now,
                            "nbf": now, "exp": now + 300, "jti": "j-forged", "roles": ["editor"]}
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


def forge(key: SigningKey, header: dict[str, Any] | None = None, **changes: Any) -> str:
    head = {"alg": "EdDSA", "kid": key.kid, "typ": "JWT"} if header is None else header
    return signed_text(key.private_key, json.dumps(head), json.dumps(claims(**changes)))


def sign_segments(key: SigningKey, header_b64: str, payload_b64: str) -> str:
    """A token over exactly these (possibly non-canonical) segments, signed for real."""
    signing_input = f"{header_b64}.{payload_b64}"
    return f"{signing_input}.{b64(key.private_key.sign(signing_input.encode()))}"


def verifier(trust: TrustSet, revocations: RevocationList | None = None) -> TokenVerifier:
    return TokenVerifier(trust, VerifyOptions(audience="orders"), revocations=revocations)


def refused(trust: TrustSet, token: str, error: type[errors.TokenError]) -> None:
    with pytest.raises(error) as info:
        verifier(trust).verify(token)
    assert type(info.value) is error, info.value
    assert info.value.http_status == 401 and info.value.to_dict()["error"] == error.code


def test_the_forged_baseline_verifies(edge_key: SigningKey, trust: TrustSet) -> None:
    """Every refusal below is then down to the one thing changed."""
    assert verifier(trust).verify(forge(edge_key)).tenant_id == "acme"


# -- one signed token, one spelling ------------------------------------------------------


def _with_trailing_bits(segment: str, bits: int) -> str:
    return segment[:-1] + ALPHABET[ALPHABET.index(segment[-1]) ^ bits]


@pytest.mark.parametrize("bits", [1, 2, 3, 15])
def test_signature_with_trailing_bits_set_is_refused(edge_key: SigningKey, trust: TrustSet, bits: int) -> None:
    """An Ed25519 signature is 86 characters carrying 4 unused bits: 15 more spellings of it."""
    token = forge(edge_key)
    head, body, signature = token.split(".")
    refused(trust, f"{head}.{body}.{_with_trailing_bits(signature, bits)}", errors.TokenMalformed)


def test_non_canonical_payload_is_refused_even_when_signed_as_written(edge_key: SigningKey, trust: TrustSet) -> None:
    """The signer signed the odd spelling itself: still one meaning per token string only."""
    head = b64(json.dumps({"alg": "EdDSA", "kid": edge_key.kid}).encode())
    text = json.dumps(claims()).encode()
    body = b64(text)
    while len(text) % 3 == 0:  # make sure the last character carries unused bits
        text += b" "
        body = b64(text)
    assert base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)) == text
    assert verifier(trust).verify(sign_segments(edge_key, head, body)).sub == "alice"
    refused(trust, sign_segments(edge_key, head, _with_trailing_bits(body, 1)), errors.TokenMalformed)


@pytest.mark.parametrize("spelling", ["{t}=", "{t}==", " {t}", "{t} ", "{t}\n", "{h}.{p}.{s}.", "{h}+{p}.{s}"])
def test_padding_whitespace_and_other_shapes_are_malformed(edge_key: SigningKey, trust: TrustSet,
                                                           spelling: str) -> None:
    token = forge(edge_key)
    h, p, s = token.split(".")
    refused(trust, spelling.format(t=token, h=h, p=p, s=s), errors.TokenMalformed)


# -- the header: what kind of token, and nothing that locates a key --------------------


@pytest.mark.parametrize("typ", ["at+jwt", "application/at+jwt", "dpop+jwt", "secevent+jwt", "logout+jwt",
                                 "JOSE", "JOSE+JSON", "JWE", "", 1, ["JWT"], None])
def test_a_typ_naming_another_kind_of_token_is_refused(edge_key: SigningKey, trust: TrustSet, typ: Any) -> None:
    refused(trust, forge(edge_key, {"alg": "EdDSA", "kid": edge_key.kid, "typ": typ}), errors.TokenMalformed)


@pytest.mark.parametrize("typ", ["JWT", "jwt", "application/jwt", "absent"])
def test_jwt_typ_or_none_is_a_context_token(edge_key: SigningKey, trust: TrustSet, typ: str) -> None:
    head: dict[str, Any] = {"alg": "EdDSA", "kid": edge_key.kid}
    if typ != "absent":
        head["typ"] = typ
    assert verifier(trust).verify(forge(edge_key, head)).sub == "alice"


@pytest.mark.parametrize("member", [
    {"jku": "https://attacker.example/jwks.json"},
    {"x5u": "https://attacker.example/cert.pem"},
    {"jwk": {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}},
    {"x5c": ["MIIBszCCAVmgAwIBAgIUQ"]},
    {"cty": "JWT"},
    {"b64": False},
    {"zip": "DEF"},
    {"enc": "A256GCM"},
    {"crit": ["exp"], "exp": 1},
])
def test_header_members_we_never_honour_are_refused(edge_key: SigningKey, trust: TrustSet,
                                                     member: dict[str, Any]) -> None:
    refused(trust, forge(edge_key, {"alg": "EdDSA", "kid": edge_key.kid, "typ": "JWT", **member}),
            errors.TokenMalformed)


def test_embedded_jwk_of_the_attackers_own_key_does_not_help(edge_key: SigningKey, trust: TrustSet) -> None:
    """Without the header rule too: the key comes from kid and the trust set, never the token."""
    attacker = SigningKey.generate()
    head = {"alg": "EdDSA", "kid": edge_key.kid, "typ": "JWT", "jwk": attacker.public_jwk()}
    with pytest.raises(errors.TokenError):
        verifier(trust).verify(forge(attacker, head))


# -- claims a revocation must be able to name ---------------------------------------------


@pytest.mark.parametrize("tenant", ["Acme", "ACME", "acme ", " acme", "acme\n", "acme\x00", "acme\u200b",
                                    "\u0430cme", "\uff41cme", "acme-corp", "acme.corp", "1acme", "a" * 65, "acme/x",
                                    "acme*", "acme\u0301"])
def test_tenant_ids_no_kill_switch_could_name_are_refused(edge_key: SigningKey, trust: TrustSet,
                                                           tenant: str) -> None:
    """The plane's revocation API takes tenants matching the relation model's names only:
    a token for ``Acme`` or a Cyrillic ``\\u0430cme`` could never be stopped by a kill switch."""
    assert not is_tenant_name(tenant)
    refused(trust, forge(edge_key, tenant_id=tenant), errors.ClaimInvalid)


@pytest.mark.parametrize("sub", ["alice bob", "alice\n", "alice\t", "\x00", "\uff41lice", "al\u00efce", "x" * 257,
                                 "alice\u200b", "\u202ealice"])
def test_subjects_no_subject_revocation_could_name_are_refused(edge_key: SigningKey, trust: TrustSet,
                                                                sub: str) -> None:
    refused(trust, forge(edge_key, sub=sub), errors.ClaimInvalid)


@pytest.mark.parametrize("jti", ["a b", "\u00e9", "\x00", "j\n", "x" * 257, "\u2028"])
def test_jtis_no_jti_revocation_could_name_are_refused(edge_key: SigningKey, trust: TrustSet, jti: str) -> None:
    assert not is_jti(jti)
    refused(trust, forge(edge_key, jti=jti), errors.ClaimInvalid)


@pytest.mark.parametrize("chain", [["a b"], ["\u00e9"], ["ok", "\x00"]])
def test_ancestor_jtis_must_be_revocable_too(edge_key: SigningKey, trust: TrustSet, chain: list[str]) -> None:
    now = int(time.time())
    refused(trust, forge(edge_key, act={"sub": "svc:edge", "act": {"sub": "svc:x"}}, tg_chain=chain,
                         tg_root_iat=now), errors.ClaimInvalid)


def test_the_longest_nameable_claims_verify(edge_key: SigningKey, trust: TrustSet) -> None:
    long = "~" + "x" * 254 + "!"
    got = verifier(trust).verify(forge(edge_key, sub=long, jti=long, tenant_id="a" + "b" * 63))
    assert (got.sub, got.jti, got.tenant_id) == (long, long, "a" + "b" * 63)


# -- scope and actor chains ----------------------------------------------------------------


@pytest.mark.parametrize("scope", ["orders:read\torders:write", "orders:read\norders:write", 'say"hi"',
                                   "back\\slash", "caf\u00e9", "x" * 129])
def test_scope_items_outside_rfc6749_are_refused(edge_key: SigningKey, trust: TrustSet, scope: str) -> None:
    refused(trust, forge(edge_key, scope=scope), errors.ClaimInvalid)


@pytest.mark.parametrize("act", [
    {},
    {"sub": 1},
    {"sub": ""},
    {"sub": ["svc:a"]},
    {"sub": "svc:a", "act": "svc:b"},
    {"sub": "svc:a", "act": {"iss": "edge"}},
    {"sub": "svc:a", "act": {"sub": "svc:b", "act": []}},
    {"sub": "svc a"},
])
def test_actor_chain_levels_must_each_name_an_actor(edge_key: SigningKey, trust: TrustSet,
                                                    act: dict[str, Any]) -> None:
    """Else policy would see an actor named ``""`` or ``"1"``, or a chain silently cut short."""
    refused(trust, forge(edge_key, act=act), errors.ClaimInvalid)


def test_a_well_formed_actor_chain_verifies(edge_key: SigningKey, trust: TrustSet) -> None:
    got = verifier(trust).verify(forge(edge_key, act={"sub": "svc:b", "act": {"sub": "svc:a"}}))
    assert got.actor_chain == ["svc:b", "svc:a"]


# -- the cache cannot outlast a key's re-binding -------------------------------------------


def test_a_cached_token_dies_when_its_kid_is_rebound_to_another_issuer(edge_key: SigningKey) -> None:
    """Trust replaced while a verification was in flight (so its result is cached after the
    sidecar's invalidate): the cache hit checks the key's issuer again."""
    trust = TrustSet([TrustedKey.of(edge_key.public_key, "edge")])
    v = verifier(trust)
    token = mint(edge_key, issuer="edge", sub="alice", tenant_id="acme", audience="orders")
    assert v.verify(token).iss == "edge"
    trust.replace_all([TrustedKey.of(edge_key.public_key, "other-edge")])  # no invalidate(): the race
    with pytest.raises(errors.IssuerNotTrusted):
        v.verify(token)
    with pytest.raises(errors.IssuerNotTrusted):  # and uncached, as before
        v.verify(token)
