"""Token exchange in process: one exchanger and its verifier (``Setup``), a mesh of services each with
a key, a verifier, a revocation list and an exchanger on one clock (``ExchangerMesh``: how far a
revocation reaches along exchanged tokens), and the token endpoint's refusals as RFC 6749 words them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import jwt
import pytest
from tenantguard import errors
from tenantguard import exchange as ex
from tenantguard.decision.core import PolicyRevision
from tenantguard.feed.topology import sidecar_issuer
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.oidc import EdgeVerifier
from tenantguard.identity.revocations import RevocationList
from tenantguard.identity.tokens import Claims, TokenVerifier, VerifyOptions, mint

from .forged_tokens import split


class Setup:
    def __init__(self, revision: PolicyRevision | None, **kw: Any) -> None:
        self.edge = SigningKey.generate()
        self.own = SigningKey.generate()
        self.trust = TrustSet()
        self.trust.add_public_key(self.edge.public_key, "edge")
        self.revocations = RevocationList()
        self.verifier = TokenVerifier(self.trust, VerifyOptions(audience="orders"), revocations=self.revocations)
        self.exchanger = ex.TokenExchanger("orders", self.own, self.verifier, lambda: revision, **kw)

    def subject(self, **kw: Any) -> str:
        args: dict[str, Any] = {"issuer": "edge", "sub": "alice", "tenant_id": "acme", "audience": "orders",
                                "roles": ["editor"]}
        args.update(kw)
        return mint(self.edge, **args)

    def run(self, token: str, audience: str = "billing", scope: tuple[str, ...] | None = None) -> ex.ExchangeResult:
        request = ex.ExchangeRequest(token, ex.TOKEN_TYPE_JWT, audience, scope)
        return asyncio.run(self.exchanger.exchange(request))

    def claims(self, result: ex.ExchangeResult) -> dict[str, Any]:
        return jwt.decode(result.access_token, self.own.public_key, algorithms=["EdDSA"], audience="billing")


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class ExchangerMesh:
    """Services each with a key, a verifier, a revocation list and an exchanger; all trust
    the edge issuer and each other's sidecar keys."""

    SERVICES = ("edge", "orders", "billing", "reports", "exports")

    def __init__(self, revision: PolicyRevision, edge: EdgeVerifier | None = None) -> None:
        self.clock = Clock()
        self.edge_key = SigningKey.generate()
        self.keys = {s: SigningKey.generate() for s in self.SERVICES}
        trust = TrustSet()
        trust.add_public_key(self.edge_key.public_key, "edge")
        for service, key in self.keys.items():
            trust.add_public_key(key.public_key, sidecar_issuer(service))
        self.revocations = {s: RevocationList() for s in self.SERVICES}
        self.verifiers = {s: TokenVerifier(trust, VerifyOptions(audience=s), revocations=self.revocations[s],
                                           clock=self.clock) for s in self.SERVICES}
        self.exchangers = {s: ex.TokenExchanger(s, self.keys[s], self.verifiers[s], lambda: revision,
                                                clock=self.clock, edge=edge if s == "edge" else None)
                           for s in self.SERVICES}

    def user(self, audience: str = "orders", *, age: float = 0, **kw: Any) -> str:
        args: dict[str, Any] = {"issuer": "edge", "sub": "alice", "tenant_id": "acme", "audience": audience,
                                "roles": ["editor"], "now": self.clock.now - age}
        args.update(kw)
        return mint(self.edge_key, **args)

    def exchange(self, at: str, token: str, audience: str, token_type: str = ex.TOKEN_TYPE_JWT) -> str:
        request = ex.ExchangeRequest(token, token_type, audience, None)
        return asyncio.run(self.exchangers[at].exchange(request)).access_token

    def verify(self, at: str, token: str) -> Claims:
        return self.verifiers[at].verify(token)

    def refused(self, at: str, token: str) -> str:
        with pytest.raises(errors.TokenRevoked) as info:
            self.verify(at, token)
        return info.value.message

    def everywhere(self, revoke: str, *args: Any) -> None:
        """One revocation event, applied by every sidecar."""
        for revocations in self.revocations.values():
            getattr(revocations, revoke)(*args)


def payload(token: str) -> dict[str, Any]:
    return split(token)[1]


def refused(r: httpx.Response, error: str, reason: str | None = None) -> None:
    assert r.status_code == (401 if error == "invalid_client" else 400), r.text
    body = r.json()
    assert set(body) == {"error", "error_description"} and body["error"] == error, body
    if reason is not None:
        assert body["error_description"].startswith(reason + ":"), body
    assert r.headers["cache-control"] == "no-store"
