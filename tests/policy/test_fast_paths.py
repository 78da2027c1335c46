"""The example policy's fast paths are shortcuts only: for any request, `decision` is exactly
`full_decision` (every check, every reason). Hypothesis builds requests near the shapes the
fast branches recognise (allowed direct calls, service calls, scoped tokens, missing roles,
other tenants) and just beside them (wrong types, unknown verbs, chains and scopes that do
not cover, act-as requests), and the real engine evaluates both entrypoints: on each request
as drawn, and with the input facts the decision core adds (``input_facts``: the chain's
service names and the scopes as lists), which is what a sidecar sends.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenantguard.decision.core import input_facts
from tenantguard.policy.engine import RegorusEngine
from tenantguard.policy.testrunner import load_bundle_dir

BUNDLE = Path(__file__).resolve().parents[2] / "bundles" / "tenantguard"
FAST, FULL = "data.tenantguard.decision", "data.tenantguard.full_decision"
EXCHANGE_FAST, EXCHANGE_FULL = "data.tenantguard.exchange.decision", "data.tenantguard.exchange.full_decision"
# Probes: which path answered (the fast branches never read full_decision), and the input
# facts as the bundle's Rego test fixture computes them (fixtures_test.rego, with_facts).
PROBES = """package tenantguard.probes_test
import rego.v1
import data.tenantguard.fixtures_test as fx
fast_only := d if {
    d := data.tenantguard.decision with data.tenantguard.full_decision as "full"
}
rego_facts := object.filter(fx.with_facts(input), ["actor_services", "scope_limits"])
"""
FAST_ONLY, REGO_FACTS = "data.tenantguard.probes_test.fast_only", "data.tenantguard.probes_test.rego_facts"


@pytest.fixture(scope="module")
def policy() -> Any:
    modules, data = load_bundle_dir(BUNDLE, include_tests=True)
    modules = {**modules, "probes_test.rego": PROBES}
    return RegorusEngine().prepare(modules, data, entrypoints=(FAST, FULL, EXCHANGE_FAST, EXCHANGE_FULL))


def with_facts(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` as the decision core completes it (tenantguard.decision.core.policy_input)."""
    return {**request, **input_facts(request)}


ODD = [7, 1.5, True, None, "", ["acme"], {"x": 1}]
_ABSENT = object()

# Each request starts from one the fast paths take and changes up to three fields, so the
# requests stay close to every fast branch's edges (a strategy drawing every field at
# random almost never produces "everything valid but one thing").
BASELINE: dict[str, Any] = {
    "subject": {"type": "user", "id": "alice",
                "properties": {"tenant_id": "acme", "roles": ["editor"]}},
    "action": {"name": "invoices:read"},
    "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}},
    "context": {"service": "billing"},
    "token": {"sub": "alice", "tenant_id": "acme"},
    "actor_chain": [],
    "relations": {"project:p1": ["member"]},
}
CHANGES: dict[tuple[str, ...], list[Any]] = {
    ("subject", "type"): ["service", 1, _ABSENT],
    ("subject", "id"): ["svc:orders", "", 9],
    ("subject", "properties", "tenant_id"): ["globex", *ODD, _ABSENT],
    ("subject", "properties", "roles"): [["viewer"], ["admin"], ["support"], [], ["viewer", 3], "editor", {"editor"},
                                          _ABSENT],
    ("subject", "properties", "scope"): ["invoices:read", "invoices:write", "orders:* invoices:*", ["invoices:read"],
                                          "invoices:* ", " invoices:read", ["invoices:*", 4], {"s": "invoices:read"},
                                          [4], "", " ", "*", "invoices:re*", "invoices:read:*", False, None],
    ("action", "name"): ["invoices:write", "invoices:delete", "orders:read", "export_all", "invoices:frobnicate",
                         "invoices:lines:read", ":read", "invoices", *ODD],
    ("resource", "properties", "tenant_id"): ["globex", *ODD, _ABSENT],
    ("resource", "properties", "project"): ["p2", None, "", 7, ["p1"], _ABSENT],
    ("context", "service"): ["orders", "reports", "", 2, _ABSENT],
    ("context", "act_as"): [None, {"tenant_id": "globex", "reason": "SUP-1"}, 1],
    ("token",): [None, {}, _ABSENT],
    ("token", "scope"): ["invoices:read", "invoices:write", ["invoices:*"], ["invoices:read"], "orders:*", [], 5,
                         "", "invoices:read  orders:*", {"s": "invoices:read"}, None],
    ("actor_chain",): [["svc:orders"], ["svc:edge"], ["svc:orders", "svc:edge"], ["svc:reports"], ["svc:"],
                       ["orders"], [5], ["svc;orders"], ["svc:orders", "svc:"], ["svc:orders", 5], ["svc:orders", "x"],
                       ["svc:edge", "svc:reports"], ["svc:reports", "svc:orders"], ["svc:svc:orders"],
                       ["svc:orders"] * 4, ["svc:orders"] * 5, None, "svc:orders", {}, {"0": "svc:orders"}, _ABSENT],
    ("relations",): [{}, {"project:p1": ["viewer"]}, {"project:p1": ["owner"]}, {"project:p1": "member"},
                     {"project:p2": ["member"]}, None, _ABSENT],
}


def _apply(base: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    value = value if value is _ABSENT else copy.deepcopy(value)
    node = base
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    if value is _ABSENT:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value


@st.composite
def near(draw: st.DrawFn, baseline: dict[str, Any], changes: dict[tuple[str, ...], list[Any]]) -> dict[str, Any]:
    """``baseline`` with up to three of ``changes`` applied."""
    request = copy.deepcopy(baseline)
    for path in draw(st.lists(st.sampled_from(sorted(changes)), max_size=3, unique=True)):
        _apply(request, path, draw(st.sampled_from(changes[path])))
    return request


# What a sidecar sends for a call that came through orders with a scoped, exchanged token:
# the third fast branch's shape (the token's scope is copied to the subject).
SERVICE_CALL: dict[str, Any] = {
    **BASELINE,
    "subject": {"type": "user", "id": "alice",
                "properties": {"tenant_id": "acme", "roles": ["editor"], "scope": "invoices:read"}},
    "token": {"sub": "alice", "tenant_id": "acme", "scope": "invoices:read", "act": {"sub": "svc:orders"}},
    "actor_chain": ["svc:orders"],
}


def requests() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(near(BASELINE, CHANGES), near(SERVICE_CALL, CHANGES))


@settings(max_examples=1500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_the_decision_is_always_the_full_decision(policy: Any, request: dict[str, Any]) -> None:
    assert policy.evaluate(FAST, request) == policy.evaluate(FULL, request), request


@settings(max_examples=1500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_with_the_input_facts_the_decision_is_always_the_full_decision(policy: Any, request: dict[str, Any]) -> None:
    """The input as the core builds it: the third branch reads the facts, the complete rules
    read actor_chain and the scopes; they must agree."""
    completed = with_facts(request)
    assert policy.evaluate(FAST, completed) == policy.evaluate(FULL, completed), completed


@settings(max_examples=1000, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_the_input_facts_are_what_the_rego_fixture_computes(policy: Any, request: dict[str, Any]) -> None:
    """``input_facts`` (Python, on the decision path) and ``fx.with_facts`` (Rego, in the
    bundle's tests, built from lib.service_name and lib.scope_set's rules) agree, so the
    Rego tests exercise the input sidecars send."""
    assert policy.evaluate(REGO_FACTS, request) == input_facts(request), request


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


EXCHANGE_BASELINE: dict[str, Any] = {
    "subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme"}},
    "actor": {"service": "orders"}, "audience": "billing", "scope": ["invoices:read"], "actor_chain": ["svc:edge"],
}
EXCHANGE_CHANGES: dict[tuple[str, ...], list[Any]] = {
    ("subject", "properties", "tenant_id"): [*ODD, _ABSENT],
    ("subject", "properties", "scope"): ["invoices:read", "orders:read", "invoices:read invoices:write",
                                          " invoices:read", ["invoices:*"], ["invoices:read", "invoices:write"], [],
                                          {"s": "invoices:read"}, False, None, 4],
    ("actor", "service"): ["edge", "reports", "billing", "nowhere", *ODD, _ABSENT],
    ("audience",): ["orders", "exports", "identity", "nowhere", *ODD, _ABSENT],
    ("scope",): [["invoices:write"], ["invoices:read", "invoices:write"], ["invoices:read", "invoices:read"],
                 ["invoices:read", ""], [""], ["orders:*"], [], [5], "invoices:read", {"s": "invoices:read"}, None,
                 _ABSENT],
    ("actor_chain",): [[], ["svc:edge", "svc:orders"], ["svc:edge"] * 3, ["svc:edge"] * 4, None, {}, _ABSENT],
}


def exchanges() -> st.SearchStrategy[dict[str, Any]]:
    return near(EXCHANGE_BASELINE, EXCHANGE_CHANGES)


@settings(max_examples=800, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(exchanges())
def test_the_exchange_decision_is_always_the_full_one(policy: Any, request: dict[str, Any]) -> None:
    assert policy.evaluate(EXCHANGE_FAST, request) == policy.evaluate(EXCHANGE_FULL, request), request


def test_the_strategies_reach_every_fast_branch(policy: Any) -> None:
    """Honesty check: the generated shapes include every fast answer (allowed and
    missing_role, directly and through a service call; tenant_mismatch), each answered by a
    fast branch, not by the complete rules."""
    seen: set[tuple[bool, bool, tuple[str, ...]]] = set()

    @settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(requests())
    def collect(request: dict[str, Any]) -> None:
        completed = with_facts(request)
        result = policy.evaluate(FAST_ONLY, completed)
        if result != "full":
            seen.add((bool(completed["actor_services"]), result["allow"], tuple(result["reasons"])))

    collect()
    assert {(False, True, ()), (False, False, ("missing_role",)), (False, False, ("tenant_mismatch",)),
            (True, True, ()), (True, False, ("missing_role",))} <= seen, seen
