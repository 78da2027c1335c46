"""The ``tenantguard token demo`` scenario: one good token and the attacks it must survive.

Each step builds a real token (or a real forgery) and runs it through the verifier a
service would use, so the demo shows the library's behaviour rather than describing it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from tenantguard.errors import TokenError
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import TokenVerifier, VerifyOptions, mint


@dataclass(frozen=True)
class Step:
    name: str
    expected: str
    outcome: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict[str, object], payload: dict[str, object]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}"


def _payload_of(token: str) -> dict[str, object]:
    segment = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))))


def run() -> list[Step]:
    edge = SigningKey.generate()
    trust = TrustSet()
    trust.add_public_key(edge.public_key, "edge")
    verifier = TokenVerifier(trust, VerifyOptions(audience="orders"))
    good = mint(edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders",
                roles=["editor"], scope="orders:read orders:write")
    payload = _payload_of(good)
    public_pem = edge.public_pem()

    def forged_none() -> str:
        return _unsigned({"alg": "none", "kid": edge.kid}, payload) + "."

    def forged_hs256() -> str:
        signing_input = _unsigned({"alg": "HS256", "kid": edge.kid, "typ": "JWT"}, payload)
        mac = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(mac)}"

    def tampered() -> str:
        h, _, s = good.split(".")
        return f"{h}.{_b64(json.dumps({**payload, 'tenant_id': 'globex'}).encode())}.{s}"

    def other_key() -> str:
        return mint(SigningKey.generate(), issuer="edge", sub="alice", tenant_id="acme", audience="orders")

    def wrong_audience() -> str:
        return mint(edge, issuer="edge", sub="alice", tenant_id="acme", audience="billing")

    def expired() -> str:
        return mint(edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders",
                    lifetime=60, now=time.time() - 3600)

    cases: list[tuple[str, str, Callable[[], str]]] = [
        ("alg none", "algorithm_not_allowed", forged_none),
        ("HS256 keyed with the public key", "algorithm_not_allowed", forged_hs256),
        ("payload edited to tenant globex", "signature_invalid", tampered),
        ("signed by an unknown key", "unknown_kid", other_key),
        ("token for billing shown to orders", "audience_invalid", wrong_audience),
        ("expired an hour ago", "token_expired", expired),
    ]
    claims = verifier.verify(good)
    steps = [Step(f"valid token for {claims.sub}@{claims.tenant_id} (kid {claims.kid[:8]}…)", "accepted", "accepted")]
    for name, expected, make in cases:
        steps.append(Step(name, expected, _outcome(verifier, make())))
    verifier.revocations.revoke_jti(claims.jti, until=claims.exp)
    steps.append(Step("valid token after its jti is revoked", "token_revoked", _outcome(verifier, good)))
    return steps


def _outcome(verifier: TokenVerifier, token: str) -> str:
    try:
        verifier.verify(token)
    except TokenError as exc:
        return exc.code
    return "accepted"
