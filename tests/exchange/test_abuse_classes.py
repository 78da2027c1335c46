"""Exchange abuse the library refuses whatever the policy answers or the IdP asserts.

The policy here is a stub that answers as told (a buggy or hostile bundle), and the edge
verifier a stub that returns the identity it is given (an IdP with odd subjects): the
exchanger itself must keep scope narrowing and mint only tokens every verifier accepts
and every revocation can name.
"""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from tenantguard import exchange as ex
from tenantguard.decision.core import PolicyRevision
from tenantguard.identity.oidc import ExternalIdentity
from tenantguard.identity.tokens import TokenVerifier, VerifyOptions
from tenantguard.policy.engine import RegorusEngine
from tenantguard.policy.testrunner import load_bundle_dir

from tests.harness.exchangers import Setup
from tests.harness.paths import REPO


@pytest.fixture(scope="module")
def example() -> PolicyRevision:
    """The example bundle, compiled by the real engine."""
    modules, data = load_bundle_dir(REPO / "bundles" / "tenantguard", include_tests=False)
    return PolicyRevision("test", RegorusEngine().prepare(modules, data))


class Grants:
    """A policy that allows and grants exactly ``scope``."""

    def __init__(self, scope: list[str]) -> None:
        self.scope = scope

    def evaluate(self, entrypoint: str, input: Any) -> Any:
        return {"allow": True, "reasons": [], "scope": self.scope, "max_lifetime": 300}


@pytest.mark.parametrize(("subject_scope", "requested", "granted"), [
    (None, ("invoices:*",), ["invoices:read admin:all"]),     # one string, two scopes once minted
    ("invoices:*", None, ["invoices:read admin:all"]),
    ("invoices:*", ("invoices:*",), ["invoices:x\tadmin:all"]),
    (None, ("invoices:*",), ["invoices:read", " "]),
    (None, ("invoices:*",), ["invoices:\"q\""]),
])
def test_policy_cannot_smuggle_scopes_inside_one_granted_item(subject_scope: str | None,
                                                              requested: tuple[str, ...] | None,
                                                              granted: list[str]) -> None:
    s = Setup(PolicyRevision("hostile", Grants(granted)))
    with pytest.raises(ex.InvalidScope) as err:
        s.run(s.subject(scope=subject_scope), scope=requested)
    assert err.value.reason == "policy_widened_scope"


def test_well_formed_narrowing_still_mints() -> None:
    s = Setup(PolicyRevision("ok", Grants(["invoices:read"])))
    result = s.run(s.subject(scope="invoices:*"), scope=("invoices:*",))
    assert s.claims(result)["scope"] == "invoices:read"


class Edge:
    """An edge verifier whose IdP vouched for ``identity``."""

    def __init__(self, identity: ExternalIdentity) -> None:
        self.identity = identity

    def handles(self, token: str) -> bool:
        return True

    async def verify(self, token: str) -> ExternalIdentity:
        return self.identity

    async def aclose(self) -> None:
        pass


def _identity(sub: str = "alice", tenant: str = "acme", jti: str | None = "idp-1") -> ExternalIdentity:
    now = time.time()
    return ExternalIdentity(sub=sub, tenant_id=tenant, roles=("editor",), exp=now + 300, issuer="https://idp",
                            iat=now, jti=jti)


@pytest.mark.parametrize(("sub", "tenant"), [
    ("alice smith", "acme"), ("al\u00efce", "acme"), ("alice\n", "acme"), ("x" * 257, "acme"),
    ("alice", "Acme"), ("alice", "acme corp"), ("alice", "\u0430cme"),
])
def test_an_idp_identity_no_revocation_could_name_is_not_minted(example: PolicyRevision, sub: str,
                                                                 tenant: str) -> None:
    s = Setup(example, edge=Edge(_identity(sub, tenant)))
    with pytest.raises(ex.InvalidRequest) as err:
        s.run("idp.token.here")
    assert err.value.reason == "claim_invalid"


def test_what_the_exchanger_mints_from_an_idp_identity_the_next_hop_verifies(example: PolicyRevision) -> None:
    s = Setup(example, edge=Edge(_identity("auth0|5f7c8ec7c33c6c004bbafe82")))
    token = s.run("idp.token.here").access_token
    s.trust.add_public_key(s.own.public_key, "sidecar:orders")
    billing = TokenVerifier(s.trust, VerifyOptions(audience="billing"))
    assert billing.verify(token).sub == "auth0|5f7c8ec7c33c6c004bbafe82"
    assert jwt.decode(token, options={"verify_signature": False})["tg_chain"] == ["idp-1"]
