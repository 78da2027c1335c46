"""A deny rule added anywhere in the package takes effect on every request.

The example bundle's `decision` (and `exchange.decision`) read `deny` and nothing else
decides: no rule body restates the others to answer common requests faster (issue 30).
These tests add a rule in a new file, as a policy author would, and require it to deny
every request hypothesis builds near the common shapes (allowed direct calls, service
calls, scoped tokens, missing roles, other tenants) and just beside them, as drawn and
with the input facts the decision core adds. A fast path that answered any of them
without reading `deny` fails here, whatever its shape.

Also: the input facts (``input_facts``, Python, on the decision path) agree with the
bundle's Rego test fixture ``fx.with_facts``, so the Rego tests exercise what sidecars send.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenantguard.decision.core import RELATED_EXTENSION, input_facts
from tenantguard.policy.engine import RegorusEngine
from tenantguard.policy.testrunner import load_bundle_dir

BUNDLE = Path(__file__).resolve().parents[2] / "bundles" / "tenantguard"
DECISION, EXCHANGE = "data.tenantguard.decision", "data.tenantguard.exchange.decision"
# What a policy author adds, each in a file of its own.
FROZEN = """package tenantguard
import rego.v1
deny contains "frozen" if true
"""
EXCHANGE_FROZEN = """package tenantguard.exchange
import rego.v1
deny contains "frozen" if true
"""
PROBES = """package tenantguard.probes_test
import rego.v1
import data.tenantguard.fixtures_test as fx
rego_facts := object.filter(fx.with_facts(input), ["actor_services", "scope_limits"])
"""
REGO_FACTS = "data.tenantguard.probes_test.rego_facts"


@pytest.fixture(scope="module")
def policy() -> Any:
    modules, data = load_bundle_dir(BUNDLE, include_tests=True)
    return RegorusEngine().prepare({**modules, "probes_test.rego": PROBES}, data, extensions=RELATED_EXTENSION,
                                   entrypoints=(DECISION, EXCHANGE))


@pytest.fixture(scope="module")
def frozen() -> Any:
    modules, data = load_bundle_dir(BUNDLE, include_tests=False)
    extended = {**modules, "frozen.rego": FROZEN, "exchange_frozen.rego": EXCHANGE_FROZEN}
    return RegorusEngine().prepare(extended, data, extensions=RELATED_EXTENSION, entrypoints=(DECISION, EXCHANGE))


def with_facts(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` as the decision core completes it (tenantguard.decision.core.policy_input)."""
    return {**request, **input_facts(request)}


ODD = [7, 1.5, True, None, "", ["acme"], {"x": 1}]
_ABSENT = object()

# Each request starts from a common allowed one and changes up to three fields, so the
# requests stay close to the edges of every check (a strategy drawing every field at
# random almost never produces "everything valid but one thing").
BASELINE: dict[str, Any] = {
    "subject": {"type": "user", "id": "alice",
                "properties": {"tenant_id": "acme", "roles": ["editor"]}},
    "action": {"name": "invoices:read"},
    "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme"}},
    "context": {"service": "billing"},
    "token": {"sub": "alice", "tenant_id": "acme"},
    "actor_chain": [],
    "relations": {"project:p1": ["member"]},
}
# (No project in the baseline: membership is the schema's answer through tg.related, which is
# False outside a sidecar's decision, so a request naming a project is a non-member's.)
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
    ("resource", "properties", "project"): ["p1", "p2", None, "", 7, ["p1"]],
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
# the token's scope is copied to the subject.
SERVICE_CALL: dict[str, Any] = {
    **BASELINE,
    "subject": {"type": "user", "id": "alice",
                "properties": {"tenant_id": "acme", "roles": ["editor"], "scope": "invoices:read"}},
    "token": {"sub": "alice", "tenant_id": "acme", "scope": "invoices:read", "act": {"sub": "svc:orders"}},
    "actor_chain": ["svc:orders"],
}


def requests() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(near(BASELINE, CHANGES), near(SERVICE_CALL, CHANGES))


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_a_deny_rule_in_a_new_file_denies_every_request(frozen: Any, request: dict[str, Any]) -> None:
    for doc in (request, with_facts(request)):
        decision = frozen.evaluate(DECISION, doc)
        assert decision["allow"] is False and "frozen" in decision["reasons"], doc


def test_the_requests_include_the_common_allowed_ones(policy: Any) -> None:
    """Honesty check: without the new rule, the shapes drawn include allowed requests, both
    direct and through a service call, and the usual denies."""
    seen: set[tuple[bool, bool, tuple[str, ...]]] = set()

    @settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(requests())
    def collect(request: dict[str, Any]) -> None:
        completed = with_facts(request)
        result = policy.evaluate(DECISION, completed)
        seen.add((bool(completed["actor_services"]), result["allow"], tuple(result["reasons"])))

    collect()
    assert {(False, True, ()), (False, False, ("missing_role",)), (False, False, ("tenant_mismatch",)),
            (True, True, ()), (True, False, ("missing_role",))} <= seen, seen


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


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(exchanges())
def test_an_exchange_deny_rule_in_a_new_file_denies_every_exchange(frozen: Any, request: dict[str, Any]) -> None:
    decision = frozen.evaluate(EXCHANGE, request)
    assert decision["allow"] is False and "frozen" in decision["reasons"] and decision["scope"] == [], request


def test_the_exchanges_include_allowed_ones(policy: Any) -> None:
    assert policy.evaluate(EXCHANGE, EXCHANGE_BASELINE)["allow"] is True


@settings(max_examples=1000, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_the_input_facts_are_what_the_rego_fixture_computes(policy: Any, request: dict[str, Any]) -> None:
    """``input_facts`` (Python, on the decision path) and ``fx.with_facts`` (Rego, in the
    bundle's tests, built from lib.service_name and lib.scope_set's rules) agree, so the
    Rego tests exercise the input sidecars send."""
    assert policy.evaluate(REGO_FACTS, request) == input_facts(request), request
