"""Kill switch and cut-off edge cases, through real verifiers, exchangers and the decision core
on the example bundle: tokens stamped in the future (within the leeway), without ``iat``, not
yet valid; lifting and re-adding; and tenant A's switch never touching tenant B.

Each service has its own RevocationList (as each sidecar has); a revocation is applied to all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tenantguard import errors
from tenantguard import exchange as ex
from tenantguard.decision.core import DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.identity.tokens import Claims, TokenVerifier, VerifyOptions
from tenantguard.relations import RelationIndex

from tests.harness.exchangers import ExchangerMesh, payload
from tests.harness.forged_tokens import signed_text, split

RELATIONS = [("acme", "project:p1", "member", "user:alice"), ("globex", "project:p1", "member", "user:alice")]


def core_for(m: ExchangerMesh, revision: PolicyRevision, service: str = "billing") -> DecisionCore:
    core = DecisionCore(service, RelationIndex.from_trusted(3, RELATIONS), revocations=m.revocations[service])
    core.activate(revision)
    return core


def ask(core: DecisionCore, claims: Claims, tenant: str | None = None) -> Any:
    body = {"action": {"name": "invoices:read"},
            "resource": {"type": "invoice", "id": "inv-1",
                         "properties": {"tenant_id": tenant or claims.tenant_id, "project": "p1"}}}
    return core.decide(DecisionRequest.from_wire(body, claims))


def test_a_kill_switch_for_acme_never_touches_globex(revision: PolicyRevision) -> None:
    """Same sub, same project id, same jti-shaped values: only the tenant differs."""
    m = ExchangerMesh(revision)
    core = core_for(m, revision)
    acme = m.exchange("orders", m.user(age=60), "billing")
    globex = m.exchange("orders", m.user(age=60, tenant_id="globex"), "billing")
    assert ask(core, m.verify("billing", acme)).allow and ask(core, m.verify("billing", globex)).allow
    m.everywhere("revoke_tenant", "acme", m.clock.now - 1)
    assert m.refused("billing", acme) == "tenant revoked"
    assert ask(core, m.verify("billing", globex)).allow  # globex: verified, decided, exchanged
    assert m.exchange("orders", m.user(tenant_id="globex"), "billing")
    m.everywhere("revoke_subject", "acme", "alice", m.clock.now - 1)  # a subject cut-off too: acme's alice only
    assert ask(core, m.verify("billing", m.exchange("orders", m.user(age=60, tenant_id="globex"), "billing"))).allow


def test_a_fresh_login_after_the_switch_verifies_but_is_denied_and_not_exchanged(
        revision: PolicyRevision) -> None:
    m = ExchangerMesh(revision)
    core = core_for(m, revision, "orders")
    m.everywhere("revoke_tenant", "acme", m.clock.now - 60)
    fresh = m.verify("orders", m.user())  # issued after the cut-off: the token itself is fine
    assert ask(core, fresh).reasons == ("tenant_revoked",)  # but no decision while the switch is on
    with pytest.raises(ex.InvalidRequest) as err:
        m.exchange("orders", m.user(), "billing")
    assert err.value.reason == "tenant_revoked"


def test_lifting_and_re_adding_the_switch(revision: PolicyRevision) -> None:
    m = ExchangerMesh(revision)
    core = core_for(m, revision)
    old = m.exchange("orders", m.user(age=120), "billing")
    m.everywhere("revoke_tenant", "acme", m.clock.now - 60)
    m.refused("billing", old)
    m.everywhere("lift_tenant", "acme")
    assert ask(core, m.verify("billing", old)).allow  # documented: lifting removes the cut-off
    m.everywhere("revoke_tenant", "acme", m.clock.now - 200)  # re-added with an EARLIER cut-off
    assert ask(core, m.verify("billing", old)).reasons == ("tenant_revoked",)  # still denied: the switch is on
    m.everywhere("revoke_tenant", "acme", m.clock.now)  # and a later one refuses it again
    m.refused("billing", old)
    m.everywhere("lift_tenant", "acme")
    m.everywhere("lift_tenant", "acme")  # lifting twice is lifting once
    assert ask(core, m.verify("billing", old)).allow


def test_a_token_stamped_in_the_future_within_the_leeway_is_still_cut_off(
        revision: PolicyRevision) -> None:
    """An issuer whose clock runs 4 s ahead stamps iat = now + 4; a verifier with 5 s of leeway
    accepts it. A subject revoked one second after it was issued (cut-off = now + 1, by the
    plane's clock) left it alive for its whole lifetime: iat > cut-off read as "a later login".
    The leeway that lets it in now widens the cut-off by as much."""
    m = ExchangerMesh(revision)
    ahead = m.user("billing", age=-4)  # minted 4 s in the future
    assert payload(ahead)["iat"] == int(m.clock.now) + 4
    verifier = TokenVerifier(m.verifiers["billing"].trust, VerifyOptions(audience="billing", leeway=5),
                             revocations=m.revocations["billing"], clock=m.clock)
    assert verifier.verify(ahead).sub == "alice"
    m.everywhere("revoke_subject", "acme", "alice", int(m.clock.now) + 1)
    with pytest.raises(errors.TokenRevoked):
        verifier.verify(ahead)  # on the cache hit
    fresh = TokenVerifier(verifier.trust, verifier.options, revocations=verifier.revocations, clock=m.clock)
    with pytest.raises(errors.TokenRevoked):
        fresh.verify(ahead)  # and on a miss
    m.clock.now += 10
    assert verifier.verify(m.user("billing")).sub == "alice"  # a login well after the cut-off works
    # without leeway such a token is not accepted at all
    with pytest.raises(errors.TokenNotYetValid):
        m.verify("billing", m.user("billing", age=-4))


def test_tokens_without_iat_or_not_yet_valid_are_refused_before_any_cut_off_is_read(
        revision: PolicyRevision) -> None:
    m = ExchangerMesh(revision)
    claims = payload(m.user("billing"))
    head = json.dumps({"alg": "EdDSA", "kid": m.edge_key.kid, "typ": "JWT"})
    no_iat = {k: v for k, v in claims.items() if k != "iat"}
    with pytest.raises(errors.ClaimMissing):
        m.verify("billing", signed_text(m.edge_key.private_key, head, json.dumps(no_iat)))
    later = {**claims, "nbf": claims["iat"] + 60}
    with pytest.raises(errors.TokenNotYetValid):
        m.verify("billing", signed_text(m.edge_key.private_key, head, json.dumps(later)))
    assert split(m.user("billing"))[1]["iat"] <= m.clock.now
