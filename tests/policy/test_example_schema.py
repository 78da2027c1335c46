"""The example bundle's project membership, answered by its schema (bundles/tenantguard/schema.fga).

The bundle is built and signed from its directory and loaded as a sidecar loads it, so the
schema ships inside it; decisions run through the real core on a real index holding the
demo's shape of tuples: alice is a member of project p1 only through her team, the team's
membership of a folder and the project sitting in that folder. The Rego tests fix
``project_member``; here the whole chain answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tenantguard.bundle import build_bundle
from tenantguard.client.embedded import load_policy
from tenantguard.decision.core import DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.decision.verdicts import VerdictMemo
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.relations import ChangeBatch, RelationChange, RelationIndex, Relationship

BUNDLE = Path(__file__).resolve().parents[2] / "bundles" / "tenantguard"

TUPLES = (
    "acme/group:finance#member@user:alice",
    "acme/folder:finance#member@group:finance#member",
    "acme/project:p1#folder@folder:finance",
    "acme/folder:company#owner@user:olga",
    "acme/folder:finance#parent@folder:company",
    "acme/project:p2#owner@user:bob",
    "acme/group:audit#member@group:finance#member",
    "acme/project:p3#member@group:audit#member",
    "globex/project:p1#member@user:mallory",
    "acme/project:p4#folder@folder:eng",  # README's tour: carol, a member of the folder p4 sits in
    "acme/folder:eng#member@user:carol",
)


@pytest.fixture(scope="module")
def example() -> PolicyRevision:
    key = SigningKey.generate()
    trust = TrustSet()
    trust.add_public_key(key.public_key, "plane")
    return load_policy(build_bundle(BUNDLE, signing_key=key), trust)


def index_of(*texts: str, seq: int = 1) -> RelationIndex:
    index = RelationIndex()
    index.apply(ChangeBatch(seq, tuple(RelationChange("write", Relationship.parse(t)) for t in texts)))
    return index


def ask(core: DecisionCore, who: str, project: str, *, tenant: str = "acme", roles: tuple[str, ...] = ("editor",),
        ) -> Any:
    return core.decide(DecisionRequest.from_wire({
        "subject": {"type": "user", "id": who, "properties": {"tenant_id": tenant, "roles": list(roles)}},
        "action": {"name": "invoices:read"},
        "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": tenant, "project": project}},
        "context": {"service": "billing"},
    }))


def core_for(example: PolicyRevision, index: RelationIndex) -> DecisionCore:
    core = DecisionCore("billing", index, memo=VerdictMemo())
    core.activate(example)
    return core


def test_the_example_bundle_carries_its_schema_and_asks_it(example: PolicyRevision) -> None:
    assert example.schema is not None and {"group", "folder", "project"} <= set(example.schema.schema.types)
    assert example.asks_schema


def test_membership_through_team_folder_and_project(example: PolicyRevision) -> None:
    core = core_for(example, index_of(*TUPLES))
    assert ask(core, "alice", "p1").allow  # finance team -> finance folder -> p1
    assert ask(core, "olga", "p1").allow  # owner of the company folder above finance
    assert ask(core, "bob", "p2").allow  # owners are members
    assert ask(core, "alice", "p3").allow  # finance is nested in audit, audit is a member of p3
    assert ask(core, "carol", "p4").allow  # a member of the folder the project sits in
    for who, project in (("bob", "p1"), ("alice", "p2"), ("olga", "p3"), ("mallory", "p1"), ("carol", "p1")):
        d = ask(core, who, project)
        assert not d.allow and d.reasons == ("not_project_member",), (who, project)


def test_tenants_do_not_mix(example: PolicyRevision) -> None:
    core = core_for(example, index_of(*TUPLES))
    assert ask(core, "mallory", "p1", tenant="globex").allow
    assert not ask(core, "alice", "p1", tenant="globex").allow  # acme's chain is acme's


def test_leaving_the_team_denies_on_the_next_state(example: PolicyRevision) -> None:
    """The demo's revocation: one delete, far from the project, closes the whole chain."""
    index = index_of(*TUPLES)
    core = core_for(example, index)
    assert ask(core, "alice", "p1").allow
    index.apply(ChangeBatch(2, (RelationChange("delete", Relationship.parse(TUPLES[0])),)))
    d = ask(core, "alice", "p1")
    assert not d.allow and d.reasons == ("not_project_member",) and d.relations_seq == 2
    assert ask(core, "olga", "p1").allow


def test_tenant_admins_need_no_membership(example: PolicyRevision) -> None:
    core = core_for(example, index_of(*TUPLES))
    assert ask(core, "zoe", "p1", roles=("admin",)).allow
