"""The example policy's fast paths are shortcuts only: for any request, `decision` is exactly
`full_decision` (every check, every reason). Hypothesis builds requests near the shapes the
fast branches recognise (allowed direct calls, service calls, scoped tokens, missing roles,
other tenants) and just beside them (wrong types, unknown verbs, chains and scopes that do
not cover, act-as requests), and the real engine evaluates both entrypoints.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenantguard.engine import RegorusEngine
from tenantguard.policytest import load_bundle_dir

BUNDLE = Path(__file__).resolve().parents[2] / "bundles" / "tenantguard"
FAST, FULL = "data.tenantguard.decision", "data.tenantguard.full_decision"
EXCHANGE_FAST, EXCHANGE_FULL = "data.tenantguard.exchange.decision", "data.tenantguard.exchange.full_decision"


@pytest.fixture(scope="module")
def policy() -> Any:
    modules, data = load_bundle_dir(BUNDLE, include_tests=False)
    return RegorusEngine().prepare(modules, data, entrypoints=(FAST, FULL, EXCHANGE_FAST, EXCHANGE_FULL))


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
                                          [4], "", False, None],
    ("action", "name"): ["invoices:write", "invoices:delete", "orders:read", "export_all", "invoices:frobnicate",
                         "invoices:lines:read", ":read", "invoices", *ODD],
    ("resource", "properties", "tenant_id"): ["globex", *ODD, _ABSENT],
    ("resource", "properties", "project"): ["p2", None, "", 7, ["p1"], _ABSENT],
    ("context", "service"): ["orders", "reports", "", 2, _ABSENT],
    ("context", "act_as"): [None, {"tenant_id": "globex", "reason": "SUP-1"}, 1],
    ("token",): [None, {}, _ABSENT],
    ("token", "scope"): ["invoices:read", "invoices:write", ["invoices:*"], ["invoices:read"], "orders:*", [], 5,
                         {"s": "invoices:read"}, None],
    ("actor_chain",): [["svc:orders"], ["svc:edge"], ["svc:orders", "svc:edge"], ["svc:reports"], ["svc:"],
                       ["orders"], [5], ["svc;orders"], ["svc:orders", "svc:"], ["svc:orders", 5], ["svc:orders", "x"],
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


def requests() -> st.SearchStrategy[dict[str, Any]]:
    return near(BASELINE, CHANGES)


@settings(max_examples=1500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_the_decision_is_always_the_full_decision(policy: Any, request: dict[str, Any]) -> None:
    assert policy.evaluate(FAST, request) == policy.evaluate(FULL, request), request


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
    """Honesty check: the generated shapes include allows and both fast denies."""
    seen: set[tuple[bool, tuple[str, ...]]] = set()

    @settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(requests())
    def collect(request: dict[str, Any]) -> None:
        result = policy.evaluate(FAST, request)
        seen.add((result["allow"], tuple(result["reasons"])))

    collect()
    assert (True, ()) in seen and (False, ("missing_role",)) in seen and (False, ("tenant_mismatch",)) in seen
