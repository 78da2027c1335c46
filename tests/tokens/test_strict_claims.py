"""Tokens whose JSON says two things, or nothing sensible, signed for real with the trusted key.

Each token here is built as text, byte by byte, and signed with the real Ed25519 edge key,
so the signature is good and only the content can get it refused: duplicate member
names, NaN/Infinity, numbers that overflow, absurd times, deep nesting, lone surrogates.
"""

from __future__ import annotations

import json
import time

import pytest
from tenantguard import errors
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.revocations import RevocationList
from tenantguard.identity.tokens import MAX_TIMESTAMP, TokenVerifier, VerifyOptions, decode_unverified, read_header

from tests.harness.forged_tokens import b64, signed_text


def header(key: SigningKey, tail: str = "") -> str:
    return f'{{"alg":"EdDSA","kid":"{key.kid}","typ":"JWT"{tail}}}'


def payload(tail: str = "", **raw: str) -> str:
    """Claims as JSON text; each value is raw JSON text (so NaN or 1e400 go in verbatim),
    ``tail`` is spliced in before the closing brace (e.g. a second ``tenant_id``)."""
    now = int(time.time())
    members = {"iss": '"edge"', "sub": '"alice"', "tenant_id": '"acme"', "aud": '"orders"', "iat": str(now),
               "nbf": str(now), "exp": str(now + 300), "jti": '"j-strict"', "roles": '["editor"]'}
    members.update(raw)
    return "{" + ",".join(f'"{k}":{v}' for k, v in members.items() if v) + tail + "}"


def forge(key: SigningKey, body: str, head: str | None = None) -> str:
    return signed_text(key.private_key, head if head is not None else header(key), body)


def verifier(trust: TrustSet, revocations: RevocationList | None = None) -> TokenVerifier:
    return TokenVerifier(trust, VerifyOptions(audience="orders"), revocations=revocations)


def refused(v: TokenVerifier, token: str, error: type[errors.TokenError]) -> errors.TokenError:
    with pytest.raises(error) as info:
        v.verify(token)
    assert type(info.value) is error, info.value  # exactly this code, not a relative
    assert info.value.http_status == 401 and info.value.to_dict()["error"] == error.code
    return info.value


def test_the_hand_built_token_itself_verifies(edge_key: SigningKey, trust: TrustSet) -> None:
    """Control: the forging is sound, so every refusal below is about the content."""
    claims = verifier(trust).verify(forge(edge_key, payload()))
    assert (claims.sub, claims.tenant_id, claims.jti) == ("alice", "acme", "j-strict")


# -- 1. numeric claims: finite numbers within bounds, nothing else ---------------------


@pytest.mark.parametrize("claim", ["exp", "iat", "nbf"])
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_in_time_claims(edge_key: SigningKey, trust: TrustSet, claim: str, value: str) -> None:
    error = refused(verifier(trust), forge(edge_key, payload(**{claim: value})), errors.TokenMalformed)
    assert error.detail["problem"] == "number"


@pytest.mark.parametrize("claim", ["exp", "iat", "nbf"])
@pytest.mark.parametrize("value", ["1e400", "-1e400", "1E999", str(10**40)])  # no double holds them exactly
def test_numbers_that_parse_to_infinity(edge_key: SigningKey, trust: TrustSet, claim: str, value: str) -> None:
    error = refused(verifier(trust), forge(edge_key, payload(**{claim: value})), errors.TokenMalformed)
    assert error.detail["problem"] == "number"


@pytest.mark.parametrize("claim", ["exp", "iat", "nbf"])
@pytest.mark.parametrize("value", ["true", "false", "null", '"1700000000"', "[1]", "{}", "-1", "1e300",
                                   str(MAX_TIMESTAMP + 1)])
def test_time_claims_that_are_not_sane_epoch_seconds(edge_key: SigningKey, trust: TrustSet, claim: str,
                                                      value: str) -> None:
    refused(verifier(trust), forge(edge_key, payload(**{claim: value})), errors.ClaimInvalid)


def test_finite_float_times_are_fine(edge_key: SigningKey, trust: TrustSet) -> None:
    now = time.time()
    claims = verifier(trust).verify(forge(edge_key, payload(iat=repr(now - 1.5), exp=repr(now + 60.25))))
    assert claims.exp == pytest.approx(now + 60.25)


def test_a_nan_iat_cannot_outlive_a_subject_revocation(edge_key: SigningKey, trust: TrustSet) -> None:
    """``iat <= cut`` is never true for NaN: such a token must never be accepted at all."""
    revocations = RevocationList()
    revocations.revoke_subject("acme", "alice")
    v = verifier(trust, revocations)
    refused(v, forge(edge_key, payload(iat="NaN")), errors.TokenMalformed)
    refused(v, forge(edge_key, payload(iat="true")), errors.ClaimInvalid)
    refused(v, forge(edge_key, payload()), errors.TokenRevoked)  # the control: a real iat is cut off


@pytest.mark.parametrize("jti", ["1234", "true", "null", '""', '["a"]', '"' + "j" * 257 + '"'])
def test_jti_must_be_a_revocable_string(edge_key: SigningKey, trust: TrustSet, jti: str) -> None:
    error = errors.ClaimMissing if jti == "null" else errors.ClaimInvalid
    refused(verifier(trust), forge(edge_key, payload(jti=jti)), error)


@pytest.mark.parametrize(("aud", "error"), [('["billing",1]', errors.AudienceInvalid),
                                            ('{"orders":1}', errors.AudienceInvalid),
                                            ("[]", errors.ClaimMissing), ('""', errors.ClaimMissing)])
def test_aud_shapes(edge_key: SigningKey, trust: TrustSet, aud: str, error: type[errors.TokenError]) -> None:
    refused(verifier(trust), forge(edge_key, payload(aud=aud)), error)


# -- 2. one meaning per token: duplicates refused in header and payload ------------------


@pytest.mark.parametrize("tail", [
    ',"tenant_id":"globex"',
    ',"aud":"orders"',  # even a duplicate that agrees
    ',"aud":["orders","billing"]',
    ',"sub":"admin"',
    ',"exp":9999999999',
    ',"iat":0',
    ',"jti":"other"',
    ',"roles":["admin"]',
    ',"act":{"sub":"svc:a","sub":"svc:b"}',  # nested
])
def test_duplicate_members_in_the_payload(edge_key: SigningKey, trust: TrustSet, tail: str) -> None:
    error = refused(verifier(trust), forge(edge_key, payload(tail)), errors.TokenMalformed)
    assert error.detail["problem"] == "duplicate_key"


@pytest.mark.parametrize("tail", [',"kid":"someone-else"', ',"alg":"EdDSA"', ',"typ":"JWT"'])
def test_duplicate_members_in_the_header(edge_key: SigningKey, trust: TrustSet, tail: str) -> None:
    error = refused(verifier(trust), forge(edge_key, payload(), header(edge_key, tail)), errors.TokenMalformed)
    assert error.detail["problem"] == "duplicate_key"


def test_last_one_wins_is_not_how_a_tenant_is_chosen(edge_key: SigningKey, trust: TrustSet) -> None:
    """The attack as found: a signed token saying acme first and globex last."""
    token = forge(edge_key, payload(',"tenant_id":"globex"'))
    refused(verifier(trust), token, errors.TokenMalformed)
    with pytest.raises(errors.TokenMalformed):
        decode_unverified(token)  # `tenantguard token show` and the SDK read it strictly too


# -- bounded work: nesting, size, encoding ---------------------------------------------


def test_5000_nested_brackets_in_the_payload_are_a_typed_refusal(edge_key: SigningKey, trust: TrustSet) -> None:
    error = refused(verifier(trust), forge(edge_key, "[" * 5000), errors.TokenMalformed)
    assert error.detail["problem"] == "json_too_deep"
    balanced = forge(edge_key, payload(',"x":' + "[" * 2000 + "]" * 2000))
    assert refused(verifier(trust), balanced, errors.TokenMalformed).detail["problem"] == "json_too_deep"
    huge = forge(edge_key, payload(',"x":' + "[" * 4000 + "]" * 4000))
    refused(verifier(trust), huge, errors.TokenTooLarge)  # past 8 KiB: refused before any decoding


def test_deep_header_is_refused_before_any_signature_work(trust: TrustSet) -> None:
    """The header is read unauthenticated: no key needed to send it, so it must be cheap and typed."""
    token = f"{b64(b'[' * 5000)}.{b64(b'{}')}.c2ln"
    refused(verifier(trust), token, errors.TokenMalformed)
    with pytest.raises(errors.TokenMalformed):
        read_header(token)


@pytest.mark.parametrize("body", [
    payload(tenant_id='"acme\\ud800"'),  # a lone surrogate: no character at all
    payload(',"x":1e400'),  # an unrelated claim that overflows still spoils the document
    payload(',"x":NaN'),
])
def test_other_non_json(edge_key: SigningKey, trust: TrustSet, body: str) -> None:
    refused(verifier(trust), forge(edge_key, body), errors.TokenMalformed)


def test_payload_that_is_not_utf8(edge_key: SigningKey, trust: TrustSet) -> None:
    body = payload().encode().replace(b'"alice"', b'"al\xffce"')
    signing_input = f"{b64(header(edge_key).encode())}.{b64(body)}"
    token = f"{signing_input}.{b64(edge_key.private_key.sign(signing_input.encode()))}"  # type: ignore[call-arg]
    refused(verifier(trust), token, errors.TokenMalformed)


def test_critical_header_extensions_are_refused(edge_key: SigningKey, trust: TrustSet) -> None:
    """RFC 7515 4.1.11: an extension we do not implement (e.g. b64=false, RFC 7797) must not be ignored."""
    head = header(edge_key, ',"b64":false,"crit":["b64"]')
    refused(verifier(trust), forge(edge_key, payload(), head), errors.TokenMalformed)


def test_claims_are_the_signed_bytes_decoded(edge_key: SigningKey, trust: TrustSet) -> None:
    body = payload(',"custom":{"nested":[1,2.5,"x"]}')
    claims = verifier(trust).verify(forge(edge_key, body))
    assert claims.to_dict() == json.loads(body)
