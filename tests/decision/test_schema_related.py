"""``tg.related`` answered by the bundle's schema: permissions on objects other than the resource.

A policy that needs the subject's permission on the resource's project (or folder) names
that object itself: ``tg.related("project:p1", "member", "user:anne")``. With a schema in
the revision, the schema engine answers for the types it defines (hierarchies, nested
groups, exclusion, conditions, expiry) on the decision's one relations state; the index
answers the rest, as without a schema. An answer a boolean cannot carry (a condition
missing its parameters, an engine limit, an unknown relation) denies the decision with its
code, whatever the policy would have made of True or False. Real Rego, real index, real engine.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tenantguard.decision.core import RELATED_EXTENSION, DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.decision.permissions import schema_engine
from tenantguard.decision.verdicts import VerdictMemo
from tenantguard.policy.engine import RegorusEngine
from tenantguard.relations import ChangeBatch, RelationChange, RelationIndex, Relationship
from tenantguard.relations.reads import TupleMeta
from tenantguard.schema import load

SCHEMA = """\
model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define parent: [folder]
    define member: [user, group#member, user with on_vpn] or member from parent
    define banned: [user]
type project
  relations
    define folder: [folder]
    define member: [user, group#member] or member from folder
    define contributor: member but not banned from folder
condition on_vpn(ip: ipaddress) {
  ip.in_cidr("10.0.0.0/8")
}
"""

# Allowed when the subject is a member of the invoice's project; denied when tg.related
# says the subject is banned. Either use of a boolean must fail closed on a non-boolean answer.
POLICY = """\
package t

import rego.v1

subject := concat(":", [input.subject.type, input.subject.id])

project := concat(":", ["project", input.resource.properties.project])

default decision := {"allow": false, "reasons": ["not_project_member"]}

decision := {"allow": true} if {
    tg.related(project, input.resource.properties.ask, subject)
    not blocked
}

decision := {"allow": false, "reasons": ["blocked"]} if blocked

blocked if tg.related("team:blocklist", "member", subject)
"""

TUPLES = [
    ("acme", "folder:eng", "member", "group:platform#member"),
    ("acme", "group:platform", "member", "group:sre#member"),
    ("acme", "group:sre", "member", "user:anne"),
    ("acme", "folder:infra", "parent", "folder:eng"),
    ("acme", "project:p1", "folder", "folder:infra"),
    ("acme", "project:p2", "member", "user:bob"),
    ("acme", "folder:infra", "banned", "user:anne"),
    ("acme", "team:blocklist", "member", "user:mallory"),  # a type the schema does not define: the index answers
    ("acme", "project:p1", "member", "user:mallory"),
    ("globex", "project:p1", "member", "user:bob"),
]


def revision(policy: str = POLICY, schema: str | None = SCHEMA) -> PolicyRevision:
    prepared = RegorusEngine().prepare({"t.rego": policy}, {}, extensions=RELATED_EXTENSION,
                                       entrypoints=("data.t.decision",))
    return PolicyRevision(revision="r1", policy=prepared, entrypoint="data.t.decision",
                          schema=None if schema is None else schema_engine(load(schema, "schema.fga")))


def core_with(tuples: list[Any], rev: PolicyRevision | None = None) -> DecisionCore:
    core = DecisionCore("invoices", RelationIndex.from_trusted(1, tuples), memo=VerdictMemo())
    core.activate(rev or revision())
    return core


def ask(core: DecisionCore, who: str, project: str = "p1", relation: str = "member", **context: Any) -> Any:
    return core.decide(DecisionRequest.from_wire({
        "subject": {"type": "user", "id": who, "properties": {"tenant_id": "acme"}},
        "action": {"name": "invoices:read"},
        "resource": {"type": "invoice", "id": "inv-1",
                     "properties": {"tenant_id": "acme", "project": project, "ask": relation}},
        "context": context,
    }))


@pytest.fixture()
def core() -> DecisionCore:
    return core_with(TUPLES)


def test_a_member_through_folders_and_nested_teams_is_allowed(core: DecisionCore) -> None:
    """anne: sre -> platform -> member of folder eng -> parent of infra -> p1's folder."""
    assert ask(core, "anne").allow
    assert ask(core, "bob", "p2").allow
    assert not ask(core, "bob").allow  # bob is a member of p2 (and of globex's p1), not of acme's p1
    assert ask(core, "anne").allow  # asked again: the memo gives the same answer


def test_without_the_schema_the_same_tuples_grant_only_what_is_written() -> None:
    """The same policy and tuples with no schema: tg.related reads tuples and groups only, so
    the folder hierarchy grants nothing; the schema is what answers it."""
    plain = core_with(TUPLES, revision(schema=None))
    assert not ask(plain, "anne").allow
    assert ask(plain, "bob", "p2").allow


def test_exclusion_through_an_arrow(core: DecisionCore) -> None:
    assert not ask(core, "anne", relation="contributor").allow  # a member, but banned from p1's folder
    assert ask(core, "bob", "p2", relation="contributor").allow


def test_a_type_the_schema_does_not_define_is_answered_from_the_tuples(core: DecisionCore) -> None:
    """``team:blocklist`` is no schema type: the index answers it, so mallory, a member of p1,
    is denied by the deny rule reading it."""
    d = ask(core, "mallory")
    assert not d.allow and d.reasons == ("blocked",)


def test_a_removed_team_membership_denies_on_the_next_state() -> None:
    index = RelationIndex.from_trusted(1, TUPLES)
    core = DecisionCore("invoices", index, memo=VerdictMemo())
    core.activate(revision())
    assert ask(core, "anne").allow
    index.apply(ChangeBatch(2, (RelationChange("delete", Relationship.parse("acme/group:sre#member@user:anne")),)))
    later = ask(core, "anne")
    assert not later.allow and later.relations_seq == 2


def test_a_condition_without_its_parameters_denies_with_its_own_code() -> None:
    """dana is a folder member only on the VPN. Without ``ip`` the answer is conditional: the
    decision denies ``condition_unresolved`` (not a quiet False a deny rule could read as
    "not banned"); with an address the condition decides."""
    core = core_with([*TUPLES, ("acme", "folder:eng", "member", "user:dana", TupleMeta(condition="on_vpn"))])
    missing = ask(core, "dana")
    assert not missing.allow and missing.reasons == ("condition_unresolved",)
    assert ask(core, "dana", ip="10.1.2.3").allow
    assert not ask(core, "dana", ip="192.168.0.1").allow


def test_a_conditional_answer_in_a_deny_rule_fails_closed_too() -> None:
    """The same conditional tuple read by a deny rule: False there would allow; it denies."""
    policy = POLICY.replace('blocked if tg.related("team:blocklist", "member", subject)',
                            'blocked if tg.related("folder:eng", "member", subject)')
    core = core_with([*TUPLES, ("acme", "project:p1", "member", "user:dana"),
                      ("acme", "folder:eng", "member", "user:dana", TupleMeta(condition="on_vpn"))],
                     revision(policy))
    d = ask(core, "dana")
    assert not d.allow and d.reasons == ("condition_unresolved",)
    assert not ask(core, "dana", ip="10.1.2.3").allow  # on the VPN: a folder member, so blocked
    assert ask(core, "dana", ip="192.168.0.1").allow  # off it: not blocked, and a direct member of p1


def test_an_expiring_membership_stops_granting_at_its_time_despite_the_memo() -> None:
    expires = time.time() + 1.5
    core = core_with([*TUPLES, ("acme", "project:p3", "member", "user:carl", TupleMeta(expires_at=expires))])
    assert core.active is not None and core.active.asks_schema
    assert ask(core, "carl", "p3").allow
    time.sleep(max(0.0, expires - time.time()) + 0.05)
    later = ask(core, "carl", "p3")  # same question, same relations state
    assert not later.allow and later.relations_seq == 1


def test_an_unknown_relation_on_a_schema_type_denies_with_its_code(core: DecisionCore) -> None:
    d = ask(core, "anne", relation="owner")
    assert not d.allow and d.reasons == ("unknown_relation",)


def test_a_subject_type_the_schema_does_not_define_holds_nothing(core: DecisionCore) -> None:
    d = core.decide(DecisionRequest.from_wire({
        "subject": {"type": "robot", "id": "r2", "properties": {"tenant_id": "acme"}},
        "action": {"name": "invoices:read"},
        "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1",
                                                                      "ask": "member"}}}))
    assert not d.allow and d.reasons == ("not_project_member",)


def test_an_engine_limit_denies_with_its_code() -> None:
    chain = [("acme", f"group:g{i}", "member", f"group:g{i + 1}#member") for i in range(40)]
    core = core_with([*chain, ("acme", "group:g40", "member", "user:zed"),
                      ("acme", "project:deep", "member", "group:g0#member")])
    d = ask(core, "zed", "deep")
    assert not d.allow and d.reasons == ("resolution_too_complex",)


def test_outside_a_decision_the_builtin_answers_false() -> None:
    """Unbound (a Rego test, a tool): no tenant, so no relation, schema or not."""
    from tenantguard.decision.core import related_builtin

    assert related_builtin("project:p1", "member", "user:anne") is False
