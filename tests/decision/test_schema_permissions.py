"""A bundle's relationship schema in decisions: the policy reads ``input.permissions``.

Real Rego (regorus), a real index with conditional and expiring tuples, the real engine.
The policy allows an action the schema grants and denies a blocked subject through its own
rule, so schema permissions and RBAC-style rules combine.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tenantguard.decision.core import RELATED_EXTENSION, DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.decision.permissions import schema_engine
from tenantguard.decision.verdicts import VerdictMemo
from tenantguard.policy.engine import RegorusEngine
from tenantguard.relations import RelationIndex
from tenantguard.relations.reads import TupleMeta
from tenantguard.rollout import ALLOW_TO_DENY, DENY_TO_ALLOW, ReplayRecord, analyze
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
    define viewer: [user, group#member, user with in_office] or viewer from parent
type doc
  relations
    define parent: [folder]
    define blocked: [user]
    define editor: [user]
    define read: viewer but not blocked
    define viewer: [user, user:*] or editor or viewer from parent
    define write: editor but not blocked
condition in_office(ip: ipaddress) {
  ip.in_cidr("10.0.0.0/8")
}
"""

POLICY = """\
package t

import rego.v1

default decision := {"allow": false, "reasons": ["not_permitted"]}

decision := {"allow": true} if {
    count(deny) == 0
    input.action.name in input.permissions
}

decision := {"allow": false, "reasons": sort([r | some r in deny])} if count(deny) > 0

deny contains "conditional" if input.conditional_permissions[input.action.name]
"""


def revision(policy: str = POLICY, schema: str = SCHEMA) -> PolicyRevision:
    prepared = RegorusEngine().prepare({"t.rego": policy}, {}, extensions=RELATED_EXTENSION,
                                       entrypoints=("data.t.decision",))
    return PolicyRevision(revision="r1", policy=prepared, entrypoint="data.t.decision",
                          schema=schema_engine(load(schema, "schema.fga")))


def ask(core: DecisionCore, who: str, action: str, doc: str, **context: Any) -> Any:
    return core.decide(DecisionRequest.from_wire({
        "subject": {"type": "user", "id": who, "properties": {"tenant_id": "acme"}},
        "action": {"name": action},
        "resource": {"type": "doc", "id": doc},
        "context": context,
    }))


TUPLES = [
    ("acme", "folder:root", "viewer", "group:eng#member"),
    ("acme", "group:eng", "member", "group:core#member"),
    ("acme", "group:core", "member", "user:anne"),
    ("acme", "folder:plans", "parent", "folder:root"),
    ("acme", "doc:roadmap", "parent", "folder:plans"),
    ("acme", "doc:roadmap", "editor", "user:bob"),
    ("acme", "doc:roadmap", "blocked", "user:bob"),
    ("acme", "doc:handbook", "viewer", "user:*"),
    ("globex", "doc:roadmap", "editor", "user:anne"),
]


@pytest.fixture()
def core() -> DecisionCore:
    c = DecisionCore("docs", RelationIndex.from_trusted(1, TUPLES), memo=VerdictMemo())
    c.activate(revision())
    return c


def test_a_folder_viewer_reads_documents_below_through_nested_groups(core: DecisionCore) -> None:
    assert ask(core, "anne", "read", "roadmap").allow
    assert not ask(core, "anne", "write", "roadmap").allow  # viewer, not editor
    assert ask(core, "anne", "read", "roadmap").allow  # the memo gives the same answer


def test_exclusion_and_wildcards_answer_as_the_schema_says(core: DecisionCore) -> None:
    bob = ask(core, "bob", "write", "roadmap")
    assert not bob.allow and bob.reasons == ("not_permitted",)  # editor, but blocked
    assert ask(core, "erin", "read", "handbook").allow  # user:* views the handbook
    assert not ask(core, "erin", "read", "roadmap").allow


def test_permissions_are_the_tenants_own(core: DecisionCore) -> None:
    """globex's tuple naming anne an editor does not reach acme's question."""
    assert not ask(core, "anne", "write", "roadmap").allow


def test_a_condition_without_its_context_is_conditional_and_never_an_allow() -> None:
    index = RelationIndex.from_trusted(1, [*TUPLES, ("acme", "folder:plans", "viewer", "user:dana",
                                                     TupleMeta(condition="in_office"))])
    c = DecisionCore("docs", index, memo=VerdictMemo())
    c.activate(revision())
    missing = ask(c, "dana", "read", "roadmap")
    assert not missing.allow and missing.reasons == ("conditional",)
    assert ask(c, "dana", "read", "roadmap", ip="10.2.3.4").allow
    assert not ask(c, "dana", "read", "roadmap", ip="192.168.1.1").allow


def test_an_expiring_tuple_stops_granting_at_its_time_without_a_write() -> None:
    expires = time.time() + 2.0
    index = RelationIndex.from_trusted(1, [*TUPLES, ("acme", "doc:memo", "editor", "user:carl",
                                                     TupleMeta(expires_at=expires))])
    c = DecisionCore("docs", index, memo=VerdictMemo())
    c.activate(revision())
    assert ask(c, "carl", "write", "memo").allow
    time.sleep(max(0.0, expires - time.time()) + 0.05)
    later = ask(c, "carl", "write", "memo")  # same question, same relations state: the memo must not answer
    assert not later.allow and later.relations_seq == 1


def test_a_policy_that_never_reads_permissions_does_not_pay_for_them() -> None:
    plain = revision(policy='package t\n\nimport rego.v1\n\ndecision := {"allow": input.action.name == "read"}\n')
    assert not plain.asks_permissions
    assert revision().asks_permissions


def test_an_engine_limit_fails_the_decision_closed_with_its_code() -> None:
    chain = [("acme", f"group:g{i}", "member", f"group:g{i + 1}#member") for i in range(40)]
    index = RelationIndex.from_trusted(1, [*chain, ("acme", "group:g40", "member", "user:zed"),
                                           ("acme", "doc:deep", "viewer", "group:g0#member")])
    schema = SCHEMA.replace("define viewer: [user, user:*] or editor",
                            "define viewer: [user, user:*, group#member] or editor")
    c = DecisionCore("docs", index)
    c.activate(revision(schema=schema))
    d = ask(c, "zed", "read", "deep")
    assert not d.allow and d.reasons == ("resolution_too_complex",), d.reasons


def test_bundle_impact_reports_the_flips_of_a_changed_permission() -> None:
    """Narrowing ``read`` to editors flips anne (a folder viewer) and no one else; replayed
    without the tuples, the recorded permissions stand and nothing can be judged to flip."""
    index = RelationIndex.from_trusted(1, TUPLES)
    baseline = revision()
    candidate = revision(schema=SCHEMA.replace("define read: viewer but not blocked",
                                               "define read: editor but not blocked"))
    core = DecisionCore("docs", index)
    core.activate(baseline)
    records = []
    for who, action, doc in (("anne", "read", "roadmap"), ("bob", "write", "roadmap"), ("erin", "read", "handbook")):
        request = DecisionRequest.from_wire({
            "subject": {"type": "user", "id": who, "properties": {"tenant_id": "acme"}},
            "action": {"name": action}, "resource": {"type": "doc", "id": doc}})
        decision = core.decide(request)
        doc_input = core.policy_input(index.tenant("acme"), request, "acme", f"user:{who}", False, baseline)
        records.append(ReplayRecord(tenant="acme", service="docs", action=action, subject=f"user:{who}",
                                    resource=f"doc:{doc}", allow=decision.allow, reasons=decision.reasons,
                                    relations_seq=1, input=doc_input))
    assert [r.allow for r in records] == [True, False, True]
    report = analyze(candidate, records, baseline=baseline, relations=index)
    assert (report.replayed, report.flips[ALLOW_TO_DENY], report.flips[DENY_TO_ALLOW]) == (3, 2, 0)
    flipped = sorted(e["subject"] for g in report.groups.values() for e in g.examples)
    assert flipped == ["user:anne", "user:erin"]  # erin read the public handbook as a viewer, not an editor
    blind = analyze(candidate, records, baseline=baseline)
    assert blind.flipped == 0
