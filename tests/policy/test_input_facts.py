"""The input facts (``actor_services``, ``scope_limits``) on every path that builds a decision
input: the core (and so every door and the decision record), and a replay, which computes
them afresh. tests/policy/test_deny_rules.py checks them against the bundle's Rego fixture.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tenantguard.decision.core import (
    RELATED_EXTENSION,
    DecisionCore,
    DecisionRecord,
    DecisionRequest,
    PolicyRevision,
    input_facts,
    policy_input,
)
from tenantguard.identity.tokens import Claims
from tenantguard.policy.engine import RegorusEngine
from tenantguard.policy.testrunner import load_bundle_dir
from tenantguard.relations import RelationIndex
from tenantguard.rollout.records import ReplayRecord

BUNDLE = Path(__file__).resolve().parents[2] / "bundles" / "tenantguard"


def exchanged_claims(scope: tuple[str, ...] = ("invoices:read",)) -> Claims:
    """A token billing receives from orders, which had it from edge (an RFC 8693 chain)."""
    now = time.time()
    act = {"sub": "svc:orders", "act": {"sub": "svc:edge"}}
    raw = {"sub": "alice", "tenant_id": "acme", "roles": ["editor"], "act": act, "scope": " ".join(scope)}
    return Claims(iss="sidecar:orders", sub="alice", tenant_id="acme", aud=("billing",), exp=now + 60, iat=now,
                  nbf=now, jti="j-2", roles=("editor",), scope=scope, act=act, kid="k", raw=raw)


def request(claims: Claims | None = None, **subject: Any) -> DecisionRequest:
    body = {"action": {"name": "invoices:read"},
            "resource": {"type": "invoice", "id": "inv-1", "properties": {"project": "p1"}}}
    if subject:
        body["subject"] = subject
    return DecisionRequest.from_wire(body, claims)


def test_the_core_adds_the_facts_from_the_token() -> None:
    doc = policy_input(request(exchanged_claims()), "acme", "user:alice", "billing", {})
    assert doc["actor_chain"] == ["svc:orders", "svc:edge"]
    assert doc["actor_services"] == ["orders", "edge"]
    assert doc["scope_limits"] == [["invoices:read"]]  # the token's and the subject's scope: one list


def test_the_core_adds_the_facts_for_a_pep_stated_subject() -> None:
    pep = request(type="user", id="alice", properties={"tenant_id": "acme", "scope": ["invoices:read", 3]})
    doc = policy_input(pep, "acme", "user:alice", "billing", {})
    assert doc["actor_services"] == [] and doc["scope_limits"] == [["invoices:read"]]


def test_the_decision_record_keeps_the_facts_it_was_decided_with() -> None:
    recorded = DecisionRecord(decision_id="d", time=0.0, service="billing", tenant="acme", subject="user:alice",
                              action="invoices:read", resource="invoice:inv-1", allow=True, reasons=(),
                              bundle_revision="1", relations_seq=0, request=request(exchanged_claims()))
    doc = recorded.recorded_input()
    assert doc is not None and doc["actor_services"] == ["orders", "edge"]
    assert doc["scope_limits"] == [["invoices:read"]]


@pytest.mark.parametrize("recorded_facts", [
    {},  # a record from before the facts
    {"actor_services": ["billing"], "scope_limits": []},  # edited: contradicts the chain and the scope
])
def test_a_replay_computes_the_facts_afresh(recorded_facts: dict[str, Any]) -> None:
    recorded = {"subject": {"type": "user", "id": "alice",
                            "properties": {"tenant_id": "acme", "roles": ["editor"], "scope": "invoices:write"}},
                "action": {"name": "invoices:read"}, "resource": {"type": "invoice", "id": "inv-1"},
                "context": {"service": "billing"}, "token": None, "actor_chain": ["svc:reports"], **recorded_facts}
    record = ReplayRecord(tenant="acme", service="billing", action="invoices:read", subject="user:alice",
                          resource="invoice:inv-1", allow=False, input=recorded)
    doc, rebuilt = record.policy_input(None)
    assert not rebuilt and {k: doc[k] for k in ("actor_services", "scope_limits")} == input_facts(recorded)
    assert doc["actor_services"] == ["reports"] and doc["scope_limits"] == [["invoices:write"]]
    rebuilt_doc, rebuilt = ReplayRecord(tenant="acme", service="billing", action="invoices:read",
                                        subject="user:alice", resource="invoice:inv-1", allow=False,
                                        actor_chain=("svc:edge",)).policy_input(None)
    assert rebuilt and rebuilt_doc["actor_services"] == ["edge"] and rebuilt_doc["scope_limits"] == []


@pytest.fixture(scope="module")
def core() -> DecisionCore:
    modules, data = load_bundle_dir(BUNDLE)
    policy = RegorusEngine().prepare(modules, data, extensions=RELATED_EXTENSION)
    core = DecisionCore("billing", RelationIndex.from_trusted(1, [("acme", "project:p1", "member", "user:alice")]))
    core.activate(PolicyRevision(revision="1", policy=policy))
    return core


@pytest.mark.parametrize(("scope", "reasons"), [
    (("invoices:read",), ()),
    (("invoices:*", "orders:read"), ()),
    (("invoices:write",), ("scope_exceeded",)),
])
def test_a_chained_scoped_token_is_decided_as_before(core: DecisionCore, scope: tuple[str, ...],
                                                     reasons: tuple[str, ...]) -> None:
    decision = core.decide(request(exchanged_claims(scope)))
    assert decision.allow is (reasons == ()) and decision.reasons == reasons


@pytest.mark.parametrize(("request_", "facts"), [
    ({}, {"actor_services": [], "scope_limits": []}),
    ({"actor_chain": ["svc:orders", "svc:edge"]}, {"actor_services": ["orders", "edge"], "scope_limits": []}),
    ({"actor_chain": ("svc:orders",)}, {"actor_services": ["orders"], "scope_limits": []}),
    ({"actor_chain": ["svc:svc:x"]}, {"actor_services": ["svc:x"], "scope_limits": []}),
    ({"actor_chain": ["svc:orders", "svc:"]}, {"actor_services": None, "scope_limits": []}),
    ({"actor_chain": ["svc:orders", "orders"]}, {"actor_services": None, "scope_limits": []}),
    ({"actor_chain": None}, {"actor_services": None, "scope_limits": []}),
    ({"actor_chain": "svc:orders"}, {"actor_services": None, "scope_limits": []}),
    ({"token": {"scope": "a:b  c:*"}, "subject": {"properties": {"scope": "a:b c:*"}}},
     {"actor_services": [], "scope_limits": [["a:b", "c:*"]]}),
    ({"token": {"scope": ""}, "subject": {"properties": {"scope": ["a:b", 4]}}},
     {"actor_services": [], "scope_limits": [[], ["a:b"]]}),
    ({"token": {"scope": None}, "subject": {"properties": {"scope": {"a:b"}}}},
     {"actor_services": [], "scope_limits": [[]]}),
    ({"token": None, "subject": {"properties": {"scope": False}}}, {"actor_services": [], "scope_limits": [[]]}),
    ({"token": "not claims", "subject": {"properties": ["scope"]}}, {"actor_services": [], "scope_limits": []}),
])
def test_input_facts(request_: dict[str, Any], facts: dict[str, Any]) -> None:
    assert input_facts(request_) == facts
