"""A revocation reaches every token exchanged from the revoked one, at once, cache hits included.

Real keys, real TokenVerifiers and TokenExchangers (one per service, each with its own
RevocationList, as each sidecar has), the example bundle compiled by the real engine.
A revocation is applied to every service's list, the way the plane's event reaches
every sidecar.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import jwt
import pytest
from tenantguard import errors
from tenantguard import exchange as ex
from tenantguard.decision.core import PolicyRevision
from tenantguard.feed.topology import sidecar_issuer
from tenantguard.identity.oidc import EdgeConfig, EdgeTenant, EdgeVerifier
from tenantguard.identity.tokens import (
    CHAIN_CLAIM,
    CHAIN_KIDS_CLAIM,
    ROOT_IAT_CLAIM,
    TokenVerifier,
    VerifyOptions,
    mint,
)

from tests.harness.exchangers import ExchangerMesh, payload
from tests.harness.forged_tokens import signed_text, with_payload

from .idp import LocalIdP


def test_exchanged_token_names_its_ancestry(revision: PolicyRevision) -> None:
    m = ExchangerMesh(revision)
    root = m.user()
    for_billing = m.exchange("orders", root, "billing")
    p, r = payload(for_billing), payload(root)
    assert p[CHAIN_CLAIM] == [r["jti"]] and p[ROOT_IAT_CLAIM] == r["iat"]
    claims = m.verify("billing", for_billing)
    assert claims.chain == (r["jti"],) and claims.origin_iat == r["iat"]
    assert CHAIN_CLAIM not in r and m.verify("orders", root).chain == ()  # an edge token needs no claim


def test_revoking_the_parent_jti_refuses_the_derived_token_on_a_cache_hit(revision: PolicyRevision) -> None:
    """The attack as found: T is refused at orders, but the token exchanged from it lived on at billing."""
    m = ExchangerMesh(revision)
    parent = m.user()
    derived = m.exchange("orders", parent, "billing")
    assert m.verify("billing", derived).sub == "alice"
    assert m.verify("billing", derived).sub == "alice"  # now cached at billing
    hits = m.verifiers["billing"].cache_hits
    m.everywhere("revoke_jti", payload(parent)["jti"], payload(parent)["exp"])
    assert m.refused("orders", parent) == "jti revoked"
    assert m.refused("billing", derived) == "a token it was exchanged from is revoked"
    assert m.verifiers["billing"].cache_hits == hits + 1  # refused on the cache hit, not after a re-verify
    fresh = TokenVerifier(m.verifiers["billing"].trust, VerifyOptions(audience="billing"),
                          revocations=m.revocations["billing"], clock=m.clock)
    with pytest.raises(errors.TokenRevoked):
        fresh.verify(derived)  # and on a cache miss


def test_revocation_reaches_every_hop_below_it_and_nothing_above(revision: PolicyRevision) -> None:
    """edge token -> (edge sidecar) -> orders token -> (orders sidecar) -> billing token."""
    m = ExchangerMesh(revision)
    root = m.user("edge")
    for_orders = m.exchange("edge", root, "orders")
    for_billing = m.exchange("orders", for_orders, "billing")
    jtis = [payload(t)["jti"] for t in (root, for_orders)]
    assert payload(for_billing)[CHAIN_CLAIM] == jtis
    assert payload(for_billing)[ROOT_IAT_CLAIM] == payload(root)["iat"]
    assert m.verify("billing", for_billing).actor_chain == ["svc:orders", "svc:edge"]

    m.everywhere("revoke_jti", payload(for_orders)["jti"], payload(for_orders)["exp"])  # the middle hop
    m.refused("orders", for_orders)
    m.refused("billing", for_billing)
    assert m.verify("edge", root).sub == "alice"  # its parent is untouched
    with pytest.raises(ex.InvalidRequest) as err:
        m.exchange("orders", for_orders, "billing")  # and it cannot be exchanged again
    assert err.value.reason == "token_revoked"

    m2 = ExchangerMesh(revision)
    root = m2.user("edge")
    for_billing = m2.exchange("orders", m2.exchange("edge", root, "orders"), "billing")
    m2.everywhere("revoke_jti", payload(root)["jti"], payload(root)["exp"])  # the root, two hops up
    m2.refused("billing", for_billing)


def test_a_subject_cut_off_after_the_login_reaches_tokens_exchanged_later(revision: PolicyRevision) -> None:
    """The derived token's own iat is after the cut-off (it was exchanged after it, e.g. at a
    sidecar the revocation had not reached yet); its root's iat is not, so it is refused."""
    m = ExchangerMesh(revision)
    root = m.user(age=120)
    derived = m.exchange("orders", root, "billing")
    assert payload(derived)["iat"] > m.clock.now - 60 > payload(derived)[ROOT_IAT_CLAIM]
    assert m.verify("billing", derived).sub == "alice"
    m.everywhere("revoke_subject", "acme", "alice", m.clock.now - 60)
    assert m.refused("billing", derived) == "subject revoked"
    # a login after the cut-off is a new session: its exchanged tokens live
    again = m.exchange("orders", m.user(), "billing")
    assert m.verify("billing", again).sub == "alice"


def test_a_tenant_kill_switch_reaches_tokens_exchanged_from_older_logins(revision: PolicyRevision) -> None:
    m = ExchangerMesh(revision)
    derived = m.exchange("orders", m.user(age=120), "billing")
    assert m.verify("billing", derived).tenant_id == "acme"
    m.everywhere("revoke_tenant", "acme", m.clock.now - 60)
    assert m.refused("billing", derived) == "tenant revoked"


def test_no_exchange_under_the_kill_switch_even_for_tokens_issued_after_the_cut_off(
        revision: PolicyRevision) -> None:
    """docs/security.md listed this as not covered; the exchanger refuses while the switch is on."""
    m = ExchangerMesh(revision)
    m.everywhere("revoke_tenant", "acme", m.clock.now - 3600)
    fresh = m.user()  # issued after the cut-off: verification alone would accept it
    assert m.verify("orders", fresh).tenant_id == "acme"
    with pytest.raises(ex.InvalidRequest) as err:
        m.exchange("orders", fresh, "billing")
    assert err.value.reason == "tenant_revoked"
    m.everywhere("lift_tenant", "acme")
    assert m.exchange("orders", fresh, "billing")


def test_revoking_a_kid_reaches_tokens_exchanged_from_tokens_it_signed(revision: PolicyRevision) -> None:
    """The gap docs/security.md listed: the edge key is revoked, the user's token is refused at
    orders, but the token orders' sidecar had exchanged from it (signed by orders' own key)
    lived on at billing until its exp. Now the chain names its ancestors' kids."""
    m = ExchangerMesh(revision)
    root = m.user()
    derived = m.exchange("orders", root, "billing")
    assert payload(derived)[CHAIN_KIDS_CLAIM] == [m.edge_key.kid]
    assert m.verify("billing", derived).chain_kids == (m.edge_key.kid,)  # cached at billing now
    hits = m.verifiers["billing"].cache_hits
    m.everywhere("revoke_kid", m.edge_key.kid)
    assert m.refused("orders", root) == "signing key revoked"
    assert m.refused("billing", derived) == "the key that signed a token it was exchanged from is revoked"
    assert m.verifiers["billing"].cache_hits == hits + 1  # refused on the cache hit
    fresh = TokenVerifier(m.verifiers["billing"].trust, VerifyOptions(audience="billing"),
                          revocations=m.revocations["billing"], clock=m.clock)
    with pytest.raises(errors.TokenRevoked):
        fresh.verify(derived)  # and on a cache miss


def test_a_revoked_sidecar_kid_reaches_every_hop_below_it_and_nothing_above(revision: PolicyRevision) -> None:
    """edge token -> (edge sidecar) -> orders token -> (orders sidecar) -> billing token.
    Revoking the edge sidecar's key refuses the orders token (its own kid) and the billing
    token (an ancestor's kid); revoking the orders sidecar's key leaves everything above it alone."""
    m = ExchangerMesh(revision)
    root = m.user("edge")
    for_orders = m.exchange("edge", root, "orders")
    for_billing = m.exchange("orders", for_orders, "billing")
    assert payload(for_billing)[CHAIN_KIDS_CLAIM] == [m.edge_key.kid, m.keys["edge"].kid]
    m.everywhere("revoke_kid", m.keys["orders"].kid)
    m.refused("billing", for_billing)
    assert m.verify("orders", for_orders).sub == "alice" and m.verify("edge", root).sub == "alice"

    m2 = ExchangerMesh(revision)
    root = m2.user("edge")
    for_orders = m2.exchange("edge", root, "orders")
    for_billing = m2.exchange("orders", for_orders, "billing")
    assert m2.verify("billing", for_billing).sub == "alice"
    m2.everywhere("revoke_kid", m2.keys["edge"].kid)
    assert m2.verify("edge", root).sub == "alice"  # signed by the edge issuer's key, not the revoked one
    m2.refused("orders", for_orders)
    assert m2.refused("billing", for_billing) == "the key that signed a token it was exchanged from is revoked"
    with pytest.raises(ex.InvalidRequest) as err:
        m2.exchange("orders", for_orders, "billing")
    assert err.value.reason == "token_revoked"


def test_a_token_minted_before_chain_kids_is_accepted_and_reached_through_its_own_kid(
        revision: PolicyRevision) -> None:
    """Old sidecars mint tg_chain without tg_chain_kids: such a token still verifies (a rollout
    must not break live traffic); a kid revocation reaches it only through its own kid, and a
    new sidecar exchanging it carries that kid on."""
    m = ExchangerMesh(revision)
    root = m.user("edge")
    r = payload(root)
    old_style = mint(m.keys["edge"], issuer=sidecar_issuer("edge"), sub="alice", tenant_id="acme",
                     audience="orders", roles=["editor"], act={"sub": "svc:edge"}, now=m.clock.now,
                     chain=[r["jti"]], root_iat=r["iat"])
    assert CHAIN_KIDS_CLAIM not in payload(old_style)
    assert m.verify("orders", old_style).chain_kids == ()
    onward = m.exchange("orders", old_style, "billing")
    assert payload(onward)[CHAIN_KIDS_CLAIM] == [m.keys["edge"].kid]
    m.everywhere("revoke_kid", m.edge_key.kid)
    assert m.verify("orders", old_style).sub == "alice"  # what the old format loses (docs/security.md)
    assert m.verify("billing", onward).sub == "alice"  # and so its descendants
    m.everywhere("revoke_kid", m.keys["edge"].kid)
    m.refused("orders", old_style)
    m.refused("billing", onward)


def test_the_chain_cannot_be_edited_without_the_key(revision: PolicyRevision) -> None:
    m = ExchangerMesh(revision)
    parent = m.user()
    derived = m.exchange("orders", parent, "billing")
    stripped = {k: v for k, v in payload(derived).items() if k not in (CHAIN_CLAIM, ROOT_IAT_CLAIM)}
    with pytest.raises(errors.SignatureInvalid):
        m.verify("billing", with_payload(derived, stripped))


@pytest.mark.parametrize(("edit", "error"), [
    ({CHAIN_CLAIM: "j1"}, errors.ClaimInvalid),
    ({CHAIN_CLAIM: [1]}, errors.ClaimInvalid),
    ({CHAIN_CLAIM: [""]}, errors.ClaimInvalid),
    ({CHAIN_CLAIM: ["j" * 257]}, errors.ClaimInvalid),
    ({CHAIN_CLAIM: ["a", "b"]}, errors.ClaimInvalid),  # longer than the actor chain (one hop)
    ({CHAIN_CLAIM: None}, errors.ClaimInvalid),
    ({ROOT_IAT_CLAIM: None}, errors.ClaimInvalid),
    ({ROOT_IAT_CLAIM: True}, errors.ClaimInvalid),
    ({ROOT_IAT_CLAIM: "0"}, errors.ClaimInvalid),
    ({ROOT_IAT_CLAIM: "later"}, errors.ClaimInvalid),  # after the token's own iat
    ({ROOT_IAT_CLAIM: "drop"}, errors.ClaimMissing),  # one without the other
    ({CHAIN_CLAIM: "drop"}, errors.ClaimMissing),
    ({CHAIN_KIDS_CLAIM: "k1"}, errors.ClaimInvalid),
    ({CHAIN_KIDS_CLAIM: [1]}, errors.ClaimInvalid),
    ({CHAIN_KIDS_CLAIM: [""]}, errors.ClaimInvalid),
    ({CHAIN_KIDS_CLAIM: ["k k"]}, errors.ClaimInvalid),
    ({CHAIN_KIDS_CLAIM: None}, errors.ClaimInvalid),
    ({CHAIN_KIDS_CLAIM: ["a", "b"]}, errors.ClaimInvalid),  # longer than the actor chain (one hop)
    ({CHAIN_CLAIM: "drop", ROOT_IAT_CLAIM: "drop"}, errors.ClaimMissing),  # kids without the chain
])
def test_malformed_ancestry_signed_with_the_real_sidecar_key(revision: PolicyRevision, edit: dict[str, Any],
                                                             error: type[errors.TokenError]) -> None:
    """What a buggy (or stolen) sidecar key could sign is still checked strictly."""
    m = ExchangerMesh(revision)
    claims = payload(m.exchange("orders", m.user(), "billing"))
    for name, value in edit.items():
        if value == "drop":
            del claims[name]
        else:
            claims[name] = claims["iat"] + 1 if value == "later" else value
    head = json.dumps({"alg": "EdDSA", "kid": m.keys["orders"].kid, "typ": "JWT"})
    token = signed_text(m.keys["orders"].private_key, head, json.dumps(claims))
    with pytest.raises(error):
        m.verify("billing", token)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e400"])
def test_root_iat_nan_cannot_dodge_cut_offs(revision: PolicyRevision, value: str) -> None:
    m = ExchangerMesh(revision)
    claims = payload(m.exchange("orders", m.user(), "billing"))
    text = json.dumps(claims).replace(f'"{ROOT_IAT_CLAIM}": {claims[ROOT_IAT_CLAIM]}', f'"{ROOT_IAT_CLAIM}": {value}')
    assert value in text
    head = json.dumps({"alg": "EdDSA", "kid": m.keys["orders"].kid})
    with pytest.raises(errors.TokenMalformed):
        m.verify("billing", signed_text(m.keys["orders"].private_key, head, text))


# -- edge mode: the IdP token is the root ----------------------------------------------


@pytest.fixture()
def idp() -> Any:
    server = LocalIdP()
    server.realm("acme", "EdDSA")
    yield server
    server.close()


def edge_mesh(revision: PolicyRevision, idp: LocalIdP) -> tuple[ExchangerMesh, EdgeVerifier]:
    config = EdgeConfig(tenants=(EdgeTenant.from_wire(idp.tenant_config("acme", "acme")),), http_timeout=2)
    edge = EdgeVerifier(config)
    m = ExchangerMesh(revision, edge)
    edge.revocations = m.revocations["edge"]  # the sidecar hands one list to both verifiers
    return m, edge


def test_revoking_the_idp_tokens_jti_reaches_every_token_exchanged_from_it(revision: PolicyRevision,
                                                                            idp: LocalIdP) -> None:
    m, edge = edge_mesh(revision, idp)
    try:
        idp_token = idp.realms["acme"].token(jti="idp-jti-1", groups=["editor"])
        for_orders = m.exchange("edge", idp_token, "orders", ex.TOKEN_TYPE_ID_TOKEN)
        for_billing = m.exchange("orders", for_orders, "billing")
        idp_claims = jwt.decode(idp_token, options={"verify_signature": False})
        assert payload(for_billing)[CHAIN_CLAIM] == ["idp-jti-1", payload(for_orders)["jti"]]
        assert payload(for_billing)[ROOT_IAT_CLAIM] == idp_claims["iat"]
        m.verify("billing", for_billing)
        m.everywhere("revoke_jti", "idp-jti-1", idp_claims["exp"])
        m.refused("orders", for_orders)
        m.refused("billing", for_billing)
        with pytest.raises(ex.InvalidRequest) as err:
            m.exchange("edge", idp_token, "orders", ex.TOKEN_TYPE_ID_TOKEN)
        assert err.value.reason == "token_revoked"
    finally:
        asyncio.run(edge.aclose())


def test_revoking_the_idp_key_reaches_every_token_exchanged_from_its_tokens(revision: PolicyRevision,
                                                                          idp: LocalIdP) -> None:
    m, edge = edge_mesh(revision, idp)
    try:
        idp_token = idp.realms["acme"].token(groups=["editor"])  # no jti: only its kid can reach it
        idp_kid = jwt.get_unverified_header(idp_token)["kid"]
        for_orders = m.exchange("edge", idp_token, "orders", ex.TOKEN_TYPE_ID_TOKEN)
        for_billing = m.exchange("orders", for_orders, "billing")
        assert payload(for_billing)[CHAIN_KIDS_CLAIM] == [idp_kid, m.keys["edge"].kid]
        m.verify("billing", for_billing)
        m.everywhere("revoke_kid", idp_kid)
        m.refused("orders", for_orders)
        m.refused("billing", for_billing)
    finally:
        asyncio.run(edge.aclose())


def test_a_subject_cut_off_after_the_idp_login_reaches_exchanged_tokens(revision: PolicyRevision,
                                                                        idp: LocalIdP) -> None:
    m, edge = edge_mesh(revision, idp)
    try:
        idp_token = idp.realms["acme"].token(groups=["editor"])  # no jti: the chain starts below it
        for_orders = m.exchange("edge", idp_token, "orders", ex.TOKEN_TYPE_ID_TOKEN)
        assert payload(for_orders)[CHAIN_CLAIM] == []
        idp_iat = jwt.decode(idp_token, options={"verify_signature": False})["iat"]
        m.clock.now += 30  # a later exchange, after the cut-off below
        for_billing = m.exchange("orders", for_orders, "billing")
        assert payload(for_billing)["iat"] > idp_iat + 10
        m.everywhere("revoke_subject", "acme", "alice", idp_iat + 10)
        assert m.refused("billing", for_billing) == "subject revoked"
    finally:
        asyncio.run(edge.aclose())


def test_an_idp_token_stamped_in_the_future_within_the_leeway_is_still_cut_off(revision: PolicyRevision,
                                                                                idp: LocalIdP) -> None:
    """The edge verifier's sibling of the context-token case (test_kill_switch_semantics): an IdP
    clock 4 s ahead, 5 s of leeway, the subject cut off at the IdP token's real issue time."""
    m, edge = edge_mesh(revision, idp)
    try:
        now = int(time.time())
        ahead = idp.realms["acme"].token(groups=["editor"], iat=now + 4)
        assert asyncio.run(edge.verify(ahead)).sub == "alice"
        m.everywhere("revoke_subject", "acme", "alice", now + 1)
        with pytest.raises(errors.TokenRevoked):
            asyncio.run(edge.verify(ahead))
    finally:
        asyncio.run(edge.aclose())
