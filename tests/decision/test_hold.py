"""The decision hold: while a typed error is held, the core denies everything with its code, search
raises it, the exchanger refuses with ``temporarily_unavailable``; releasing it restores all three.
The SDK client reads the sidecar's 503 body back into the same typed error."""

from __future__ import annotations

import pytest
from tenantguard.client.errors import error_from_body
from tenantguard.decision.core import DecisionCore, PolicyRevision
from tenantguard.decision.hold import DecisionHold
from tenantguard.errors import NotReady, RevocationsNotSynced
from tenantguard.exchange import ExchangeRequest, TemporarilyUnavailable, TokenExchanger
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import TokenVerifier, VerifyOptions, mint
from tenantguard.relations import RelationIndex
from tenantguard.search import Question, Searcher

from tests.harness.decision_core import claims, decide, question


@pytest.fixture()
def core(example_revision: PolicyRevision) -> DecisionCore:
    core = DecisionCore("billing", RelationIndex.from_trusted(1, [("acme", "project:p1", "member", "user:alice")]))
    core.activate(example_revision)
    return core


def test_a_held_core_denies_everything_with_the_held_code_until_released(core: DecisionCore) -> None:
    changes: list[str | None] = []
    core.hold.on_change = lambda: changes.append(core.hold.current.code if core.hold.current else None)
    assert decide(core, question(), claims()).allow
    core.hold.hold(RevocationsNotSynced("replaying"))
    denied = decide(core, question(), claims())
    assert not denied.allow and denied.reasons == ("revocations_not_synced",)
    core.hold.release(RevocationsNotSynced.code)
    assert decide(core, question(), claims()).allow
    assert changes == ["revocations_not_synced", None]


def test_the_first_reason_held_is_reported_and_each_is_released_alone() -> None:
    hold = DecisionHold()
    hold.hold(RevocationsNotSynced("a"))
    hold.hold(NotReady("b"))
    assert hold.current is not None and hold.current.code == "revocations_not_synced"
    hold.release("revocations_not_synced")
    assert hold.current is not None and hold.current.code == "not_ready"
    hold.release("unknown")  # nothing held under that code: nothing changes
    hold.release("not_ready")
    assert hold.current is None
    hold.check()  # nothing held: no error


def test_search_raises_the_held_error(core: DecisionCore) -> None:
    searcher = Searcher(core)
    ask = Question({"type": "user", "id": "alice", "properties": {"tenant_id": "acme"}}, {"name": "invoices:read"},
                   {"type": "project", "properties": {"tenant_id": "acme"}})
    core.hold.hold(RevocationsNotSynced("replaying"))
    with pytest.raises(RevocationsNotSynced) as raised:
        searcher.resources(ask)
    assert raised.value.http_status == 503 and raised.value.to_dict()["error"] == "revocations_not_synced"
    core.hold.release(RevocationsNotSynced.code)
    searcher.resources(ask)  # answers again


async def test_the_exchanger_refuses_while_held(core: DecisionCore) -> None:
    edge = SigningKey.generate()
    trust = TrustSet()
    trust.add_public_key(edge.public_key, "edge")
    verifier = TokenVerifier(trust, VerifyOptions(audience="billing"))
    exchanger = TokenExchanger("billing", SigningKey.generate(), verifier, lambda: core.active, hold=core.hold)
    token = mint(edge, issuer="edge", sub="alice", tenant_id="acme", audience="billing")
    form = ExchangeRequest.from_form([("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
                                      ("subject_token", token), ("audience", "orders"),
                                      ("subject_token_type", "urn:ietf:params:oauth:token-type:access_token")])
    core.hold.hold(RevocationsNotSynced("replaying"))
    with pytest.raises(TemporarilyUnavailable) as raised:
        await exchanger.exchange(form)
    assert raised.value.http_status == 503 and raised.value.reason == "revocations_not_synced"


def test_the_client_reads_the_503_back_as_the_typed_error() -> None:
    error = error_from_body(503, {"error": "revocations_not_synced", "message": "replaying"})
    assert isinstance(error, RevocationsNotSynced) and error.retryable
