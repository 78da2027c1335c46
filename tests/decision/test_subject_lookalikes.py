"""A principal named like a userset. The core asks the relations about ``<type>:<id>``, so a
subject whose id is ``boss#manager`` (or ``eng#member``, stated as a group) was looked up as the
userset ``user:boss#manager`` ("boss's managers") and held everything granted to it. A user
who can choose the ``sub`` an IdP puts in its token (a username claim), or whose id a PEP
forwards, could name themselves after any userset. Real bundle, real keys, real verifier.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tenantguard import errors
from tenantguard.decision.core import DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import TokenVerifier, VerifyOptions, mint
from tenantguard.relations import RelationIndex
from tenantguard.search import Question, Searcher

TUPLES = [("acme", "project:p9", "member", "user:boss#manager"),  # boss's managers are members of p9
          ("acme", "project:p2", "member", "group:eng#member"),
          ("acme", "group:eng", "member", "user:bob")]


@pytest.fixture()
def core(example_revision: PolicyRevision) -> DecisionCore:
    c = DecisionCore("billing", RelationIndex.from_trusted(3, TUPLES))
    c.activate(example_revision)
    return c


def invoice(project: str, **subject: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"action": {"name": "invoices:read"}, "resource": {
        "type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": project}}}
    if subject:
        body["subject"] = subject
    return body


@pytest.mark.parametrize("sub", ["boss#manager", "#", "a#b#c", "eng#member"])
def test_a_token_naming_a_userset_as_its_subject_is_refused(sub: str) -> None:
    edge = SigningKey.generate()
    trust = TrustSet()
    trust.add_public_key(edge.public_key, "edge")
    token = mint(edge, issuer="edge", sub=sub, tenant_id="acme", audience="billing", roles=["editor"],
                 now=time.time(), check_claims=False)  # an issuer that is not tenantguard's mint
    with pytest.raises(errors.ClaimInvalid):
        TokenVerifier(trust, VerifyOptions(audience="billing")).verify(token)


@pytest.mark.parametrize(("kind", "ident", "project"), [("user", "boss#manager", "p9"), ("group", "eng#member", "p2")])
def test_a_stated_subject_naming_a_userset_is_denied(core: DecisionCore, kind: str, ident: str,
                                                     project: str) -> None:
    """A tokenless PEP stating the id: denied subject_invalid, never the userset's grants."""
    stated = {"type": kind, "id": ident, "properties": {"tenant_id": "acme", "roles": ["editor"]}}
    decision = core.decide(DecisionRequest.from_wire(invoice(project, **stated)))
    assert not decision.allow and decision.reasons == ("subject_invalid",)
    bob = {"type": "user", "id": "bob", "properties": {"tenant_id": "acme", "roles": ["editor"]}}
    assert core.decide(DecisionRequest.from_wire(invoice("p2", **bob))).allow  # the genuine member is
    # and search proposes nothing for such a subject
    question = Question(stated, {"name": "invoices:read"}, {"type": "project"})
    assert Searcher(core).resources(question).results == ()
