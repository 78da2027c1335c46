"""Fuzzing the context-token parser with tokens a real key signed over odd JSON.

A forger without a key never gets past the signature, so the interesting inputs are the
ones a trusted issuer (a buggy IdP, a compromised edge) could sign: every claim of the
wrong type, odd JSON text, odd headers; and, for the unsigned layers in front of the
signature check, mutated segments. Property: ``TokenVerifier.verify`` returns claims of
the documented types or raises a :class:`TokenError`, never anything else.
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tenantguard.errors import TokenError
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import Claims, TokenVerifier, VerifyOptions, decode_unverified

from .budget import budget, timeout
from .strategies import json_text, mutated, nested, odd_strings

pytestmark = timeout

KEY = SigningKey.generate("EdDSA")
TRUST = TrustSet()
TRUST.add_public_key(KEY.public_key, "edge")


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def signed(header: bytes, payload: bytes, key: SigningKey = KEY) -> str:
    """A compact JWS over exactly these header and payload bytes, with a real signature."""
    message = f"{b64(header)}.{b64(payload)}".encode()
    return f"{message.decode()}.{b64(key.private_key.sign(message))}"


def header(**extra: Any) -> dict[str, Any]:
    return {"alg": "EdDSA", "kid": KEY.kid, "typ": "JWT", **extra}


def payload(**extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": "edge", "sub": "alice", "tenant_id": "acme", "aud": "billing", "iat": now, "nbf": now,
            "exp": now + 300, "jti": "j-1", "roles": ["editor"], "scope": "invoices:read",
            "act": {"sub": "svc:orders", "act": {"sub": "svc:edge"}}, "may_act": {"sub": "svc:orders"}, **extra}


def verifier() -> TokenVerifier:
    return TokenVerifier(TRUST, VerifyOptions(audience="billing"))


def check(token: str) -> Claims | None:
    """The property: claims of the documented types, or a TokenError; nothing else escapes."""
    try:
        claims = verifier().verify(token)
    except TokenError:
        return None
    assert isinstance(claims.sub, str) and claims.sub, claims
    assert isinstance(claims.tenant_id, str) and claims.tenant_id, claims
    assert all(isinstance(a, str) for a in claims.aud) and "billing" in claims.aud, claims
    assert all(isinstance(r, str) for r in claims.roles) and all(isinstance(s, str) for s in claims.scope), claims
    assert isinstance(claims.exp, float) and isinstance(claims.iat, float), claims
    assert claims.exp > time.time(), claims
    return claims


def test_the_valid_token_verifies() -> None:
    """The base every mutation starts from is accepted, so a refusal below is the mutation's."""
    assert check(signed(json.dumps(header()).encode(), json.dumps(payload()).encode())) is not None


@budget(150)
@given(data=st.data())
def test_claims_of_the_wrong_type(data: st.DataObject) -> None:
    body = json.dumps(data.draw(mutated(payload()))).encode()
    check(signed(json.dumps(header()).encode(), body))


@budget(100)
@given(data=st.data())
def test_headers_of_the_wrong_type(data: st.DataObject) -> None:
    head = data.draw(st.one_of(mutated(header()), st.just(header(crit=["exp"])), st.just(header(alg="none")),
                               st.just(header(alg="HS256")), st.just(header(kid=KEY.kid + "\x00")),
                               st.just(header(jku="http://evil/jwks")), st.just([header()])))
    check(signed(json.dumps(head).encode(), json.dumps(payload()).encode()))


@budget(100)
@given(data=st.data())
def test_odd_json_text_signed(data: st.DataObject) -> None:
    """Duplicate members, NaN/Infinity literals, bignums, lone surrogates, odd number spellings."""
    body = data.draw(json_text(data.draw(st.one_of(st.just(payload()), mutated(payload()))))).encode(
        "utf-8", "surrogatepass")
    head = data.draw(json_text(header())).encode("utf-8", "surrogatepass")
    check(signed(head, body))


@budget(30)
@given(depth=st.sampled_from([10, 100, 1_000, 3_000]), where=st.sampled_from(["act", "roles", "extra", "header"]))
def test_deep_nesting_signed(depth: int, where: str) -> None:
    """A deep ``act`` chain is ``actor_chain_too_deep``; deep members elsewhere never crash the parser
    (8 KiB bounds the token, so about 3,000 levels is the most that fits)."""
    if where == "act":
        body = _deep_act(depth)
    elif where == "roles":
        body = json.dumps(payload(roles="__")).replace('"__"', nested(depth))
    elif where == "extra":
        body = json.dumps(payload(extra="__")).replace('"__"', nested(depth, kind="object"))
    else:
        head = json.dumps(header(x="__")).replace('"__"', nested(depth))
        check(signed(head.encode(), json.dumps(payload()).encode()))
        return
    check(signed(json.dumps(header()).encode(), body.encode()))


def _deep_act(depth: int) -> str:
    """A payload whose ``act`` chain is ``depth`` levels deep (written as text: json.dumps recurses)."""
    chain = '{"sub":"svc:x","act":' * depth + '{"sub":"svc:edge"}' + "}" * depth
    return json.dumps(payload(act="__")).replace('"__"', chain)


SEGMENT_BYTES = st.sampled_from(["", "=", "==", "+/", "%", "é", "\x00", "eyJ", "e30", "bnVsbA", "W10", "IiI",
                                 "MQ", "AAAA", "_-_-", "....", " ", "\ud800"])


@budget(150)
@given(data=st.data())
def test_mutated_segments(data: st.DataObject) -> None:
    """Unsigned layers: a segment replaced, extended, dropped, duplicated, or non-base64url."""
    parts = signed(json.dumps(header()).encode(), json.dumps(payload()).encode()).split(".")
    how = data.draw(st.sampled_from(["replace", "append", "drop", "extra", "flip"]))
    index = data.draw(st.integers(0, 2))
    if how == "replace":
        parts[index] = data.draw(st.one_of(SEGMENT_BYTES, st.text(max_size=20)))
    elif how == "append":
        parts[index] += data.draw(SEGMENT_BYTES)
    elif how == "drop":
        parts.pop(index)
    elif how == "extra":
        parts.insert(index, data.draw(SEGMENT_BYTES))
    else:
        raw = bytearray(parts[index].encode())
        if raw:
            at = data.draw(st.integers(0, len(raw) - 1))
            raw[at] = data.draw(st.sampled_from(b"AZaz09-_+/=.\x00"))
        parts[index] = raw.decode("latin-1")
    token = ".".join(parts)
    check(token)
    with contextlib.suppress(TokenError):
        decode_unverified(token)


@budget(60)
@given(text=st.one_of(odd_strings, st.text(max_size=200), st.binary(max_size=100).map(lambda b: b.decode("latin-1"))))
def test_arbitrary_text(text: str) -> None:
    check(text)
