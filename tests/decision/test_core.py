"""The decision core on real Rego: built-in checks, fail-closed paths, act-as, high risk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tenantguard.decision.core import (
    RELATED_EXTENSION,
    DecisionCore,
    DecisionRecord,
    PolicyRevision,
    interpret,
)
from tenantguard.identity.tokens import is_tenant_name
from tenantguard.policy.engine import RegorusEngine
from tenantguard.relations import RelationIndex

from tests.harness.decision_core import Confirmer, claims, decide, question

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def index() -> RelationIndex:
    return RelationIndex.from_trusted(3, [("acme", "project:p1", "member", "user:alice"),
                                          ("globex", "project:p1", "member", "user:alice")])


@pytest.fixture()
def core(example_revision: PolicyRevision, index: RelationIndex) -> DecisionCore:
    core = DecisionCore("billing", index)
    core.activate(example_revision)
    return core


def test_allow_carries_revision_sequence_and_id(core: DecisionCore) -> None:
    d = decide(core, question(), claims())
    assert d.allow and d.bundle_revision == "1" and d.relations_seq == 3 and len(d.decision_id) == 32
    assert d.tenant == "acme" and d.subject == "user:alice"


def test_no_bundle_denies(index: RelationIndex) -> None:
    d = decide(DecisionCore("billing", index), question(), claims())
    assert not d.allow and d.reasons == ("no_active_bundle",)


def test_resource_tenant_mismatch_is_denied_before_policy(core: DecisionCore) -> None:
    d = decide(core, question(tenant="globex"), claims())
    assert not d.allow and d.reasons == ("tenant_mismatch",)



# With a token, who the subject is (type, id, tenant) comes from the token alone.
IMPERSONATIONS: list[tuple[str, dict[str, Any], str]] = [
    ("as a group with the same id", {"type": "group", "id": "alice"}, "subject_mismatch"),
    ("as a group, id left out", {"type": "group"}, "subject_mismatch"),
    ("as a service", {"type": "service", "id": "svc:orders"}, "subject_mismatch"),
    ("as a userset", {"type": "group", "id": "alice#member"}, "subject_mismatch"),
    ("type in another case", {"type": "User", "id": "alice"}, "subject_mismatch"),
    ("another user", {"type": "user", "id": "bob"}, "subject_mismatch"),
    ("another tenant", {"type": "user", "id": "alice", "properties": {"tenant_id": "globex"}}, "tenant_mismatch"),
]


@pytest.mark.parametrize(("label", "subject", "reason"), IMPERSONATIONS, ids=[i[0] for i in IMPERSONATIONS])
def test_a_token_fixes_the_subjects_type_id_and_tenant(example_revision: PolicyRevision, label: str,
                                                       subject: dict[str, Any], reason: str) -> None:
    """``acme/project:p8#member@group:alice``: alice's token must not be asked as group:alice."""
    index = RelationIndex.from_trusted(3, [("acme", "project:p8", "member", "group:alice")])
    core = DecisionCore("billing", index)
    core.activate(example_revision)
    assert decide(core, question(project="p8"), claims(roles=("viewer",))).reasons == ("not_project_member",)
    d = decide(core, question(project="p8", subject=subject), claims(roles=("viewer",)))
    assert not d.allow and d.reasons == (reason,), label


def test_with_a_token_the_policy_sees_the_tokens_subject_only(index: RelationIndex) -> None:
    """Members a body adds (top-level, or properties named like claims) never reach the policy."""
    policy = RegorusEngine().prepare(
        {"p.rego": "package t\nimport rego.v1\n"
                   "decision := {\"allow\": false, \"reasons\": [json.marshal(input.subject)]}\n"}, {})
    core = DecisionCore("billing", index)
    core.activate(PolicyRevision(revision="r", policy=policy, entrypoint="data.t.decision"))
    stated = {"type": "user", "id": "alice", "relation": "member", "tenant_id": "globex",
              "properties": {"sub": "bob", "iss": "edge", "act": {"sub": "svc:admin"}, "roles": ["admin"],
                             "scope": "*", "department": "finance"}}
    d = decide(core, question(subject=stated), claims(scope=("invoices:read",)))
    import json

    assert json.loads(d.reasons[0]) == {
        "type": "user", "id": "alice",
        "properties": {"tenant_id": "acme", "roles": ["editor"], "scope": "invoices:read", "department": "finance"}}


def test_without_a_token_the_pep_states_the_subject_type(index: RelationIndex, core: DecisionCore) -> None:
    """Same pod, no token: the service is trusted for the subject it names (type included)."""
    d = decide(core, question(subject={"type": "service", "id": "svc:orders", "properties": {"tenant_id": "acme"}}),
               None)
    assert d.subject == "service:svc:orders"


def test_missing_resource_tenant_defaults_to_the_subjects_own(core: DecisionCore) -> None:
    body = question()
    del body["resource"]["properties"]["tenant_id"]
    assert decide(core, body, claims()).allow


def test_kill_switch_denies_the_whole_tenant(core: DecisionCore) -> None:
    core.revocations.revoke_tenant("acme")
    d = decide(core, question(), claims())
    assert not d.allow and d.reasons == ("tenant_revoked",)


def test_act_as_requires_the_policy_grant_a_reason_and_a_confirmation(core: DecisionCore) -> None:
    support = claims(sub="sam", tenant="tg_support", roles=("support",))
    body = question(tenant="acme", context={"act_as": {"tenant_id": "acme", "reason": "ticket 4711"}})
    d = decide(core, body, support)
    assert not d.allow and d.act_as and d.high_risk  # cross-tenant access is high risk
    assert d.reasons == ("high_risk_unconfirmed",)
    core.confirmer = Confirmer(True)
    d = decide(core, body, support)
    assert d.allow and d.act_as
    no_reason = question(tenant="acme", context={"act_as": {"tenant_id": "acme", "reason": " "}})
    assert not decide(core, no_reason, support).allow
    not_support = claims(sub="eve", tenant="tg_support", roles=("editor",))
    assert not decide(core, body, not_support).allow


@pytest.mark.parametrize(("answer", "allow", "reason"), [
    (True, True, None), (False, False, "high_risk_denied"), (ConnectionError("plane down"), False,
                                                              "high_risk_unconfirmed"),
])
def test_high_risk_actions_need_a_confirmation(example_revision: PolicyRevision, index: RelationIndex,
                                              answer: Any, allow: bool, reason: str | None) -> None:
    confirmer = Confirmer(answer)
    core = DecisionCore("billing", index, confirmer=confirmer)
    core.activate(example_revision)
    d = decide(core, question(action="export_all"), claims(roles=("admin",)))
    assert d.allow is allow and d.high_risk and confirmer.calls == 1
    if reason:
        assert d.reasons == (reason,)


class BrokenPolicy:
    def evaluate(self, entrypoint: str, input: Any) -> Any:
        raise RuntimeError("engine exploded")


def test_any_policy_failure_fails_closed(index: RelationIndex) -> None:
    core = DecisionCore("billing", index)
    core.activate(PolicyRevision(revision="x", policy=BrokenPolicy()))
    d = decide(core, question(), claims())
    assert not d.allow and d.reasons == ("internal_error",)


@pytest.mark.parametrize(("result", "expected"), [
    (True, (True, (), False)),
    (False, (False, ("policy_denied",), False)),
    (None, (False, ("policy_undefined",), False)),
    ("yes", (False, ("policy_result_invalid",), False)),
    ({"allow": "true"}, (False, ("policy_result_invalid",), False)),
    ({"allow": True, "reasons": ["b", "a"], "high_risk": True}, (True, ("a", "b"), True)),
    ({"allow": False}, (False, ("policy_denied",), False)),
])
def test_interpret_only_trusts_a_boolean_allow(result: Any, expected: Any) -> None:
    assert interpret(result) == expected


def test_related_builtin_is_bound_to_the_decisions_tenant(index: RelationIndex) -> None:
    """A policy using tg.related cannot see another tenant's tuples, even with colliding ids."""
    policy = RegorusEngine().prepare(
        {"p.rego": "package t\nimport rego.v1\n"
                   "decision := {\"allow\": tg.related(\"project:p1\", \"member\", \"user:alice\")}\n"},
        {}, extensions=RELATED_EXTENSION)
    core = DecisionCore("billing", index)
    core.activate(PolicyRevision(revision="r", policy=policy, entrypoint="data.t.decision"))
    assert decide(core, question(), claims()).allow
    assert not decide(core, question(tenant="initech"), claims(tenant="initech")).allow
    index.apply(__import__("tenantguard.relations", fromlist=["ChangeBatch"]).ChangeBatch.from_wire(
        {"seq": 4, "changes": [{"op": "delete", "rel": {"tenant": "acme", "object": "project:p1",
                                                        "relation": "member", "subject": "user:alice"}}]}))
    assert not decide(core, question(), claims()).allow  # globex still has the tuple; acme no longer


def test_every_decision_is_recorded_without_the_token(core: DecisionCore) -> None:
    records: list[DecisionRecord] = []
    core.on_decision = records.append
    decide(core, question(), claims())
    decide(core, question(tenant="globex"), claims())
    assert [r.allow for r in records] == [True, False]
    wire = records[1].to_wire()
    assert wire["reasons"] == ["tenant_mismatch"] and wire["tenant"] == "acme" and wire["service"] == "billing"
    assert set(wire["token"]) == {"jti", "iss", "kid"}  # which token, never the token
    assert set(wire["input"]["token"]) <= {"jti", "iss", "kid", "scope"} and "relations" not in wire["input"]
    assert wire["path"] == "data.tenantguard.decision" and wire["v"] == 2
    assert all("eyJ" not in str(v) for v in wire.values())


def test_a_failing_log_sink_never_changes_the_decision(core: DecisionCore) -> None:
    def boom(record: DecisionRecord) -> None:
        raise OSError("disk full")

    core.on_decision = boom
    assert decide(core, question(), claims()).allow


def test_every_tenant_the_example_bundle_names_can_be_a_tokens_tenant() -> None:
    """The act-as grant named its home tenant ``tg-support``, which no verified token can carry
    (tenant names are ``[a-z][a-z0-9_]*``): the grant could never apply to a real caller."""
    config = json.loads((Path(__file__).resolve().parents[2] / "bundles/tenantguard/data.json").read_text())
    grants = config["tenantguard"]["config"]["act_as"]
    named = [g["home_tenant"] for g in grants] + [t for g in grants for t in g["tenants"] if t != "*"]
    assert named and all(is_tenant_name(t) for t in named), named
