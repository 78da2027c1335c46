"""The core's scope rule: a question outside the relations' cells or object types is ``out_of_scope``.

One rule in :class:`DecisionCore`, so every door (native, AuthZEN, OPA, Envoy, search) gets it;
``tests/feed/test_scoped.py`` asks the doors of a real scoped sidecar.
"""

from __future__ import annotations

from typing import Any

import pytest
from tenantguard.decision.core import RELATED_EXTENSION, DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.decision.verdicts import VerdictMemo
from tenantguard.feed import topology
from tenantguard.policy.engine import RegorusEngine
from tenantguard.relations import CellRelations, ChangeBatch, RelationScope

CELLS = 4
IN = next(f"t{i}" for i in range(100) if topology.cell_of(f"t{i}", CELLS) == "c1")
OUT = next(f"t{i}" for i in range(100) if topology.cell_of(f"t{i}", CELLS) == "c2")

POLICY = """package t
import rego.v1
decision := {"allow": true} if input.resource.type == "invoice"
decision := {"allow": "member" in input.relations[sprintf("project:%s", [input.resource.id])]} if {
	input.resource.type == "project"
}
decision := {"allow": tg.related(sprintf("document:%s", [input.resource.id]), "viewer", "user:alice")} if {
	input.resource.type == "group"
}
"""


def revision() -> PolicyRevision:
    policy = RegorusEngine().prepare({"p.rego": POLICY}, {}, extensions=RELATED_EXTENSION)
    return PolicyRevision(revision="r", policy=policy, entrypoint="data.t.decision")


def relations(types: frozenset[str] | None = None) -> CellRelations:
    cells = CellRelations(RelationScope(CELLS, frozenset({"c1"}), types))
    changes = [{"op": "write", "rel": {"tenant": IN, "object": obj, "relation": rel, "subject": "user:alice"}}
               for obj, rel in (("project:p1", "member"), ("document:d1", "viewer"), ("group:g1", "member"))]
    cells.apply("c1", ChangeBatch.from_wire({"seq": 1, "changes": changes}))
    return cells


def ask(tenant: str, rtype: str, rid: str = "p1") -> DecisionRequest:
    return DecisionRequest.from_wire({
        "subject": {"type": "user", "id": "alice", "properties": {"tenant_id": tenant}},
        "action": {"name": "read"}, "resource": {"type": rtype, "id": rid}})


@pytest.fixture(params=[None, 64], ids=["no-memo", "memo"])
def memo(request: Any) -> VerdictMemo | None:
    return VerdictMemo(request.param) if request.param else None


def test_a_tenant_of_a_cell_not_held_is_out_of_scope(memo: VerdictMemo | None) -> None:
    core = DecisionCore("billing", relations(), memo=memo)
    core.activate(revision())
    assert core.decide(ask(IN, "project")).allow
    denied = core.decide(ask(OUT, "project"))
    assert not denied.allow and denied.reasons == ("out_of_scope",)
    assert core.decide(ask(OUT, "invoice")).reasons == ("out_of_scope",)  # even where no relation is read


def test_scope_types_keep_their_tuples_only_and_deny_other_resource_types(memo: VerdictMemo | None) -> None:
    cells = relations(frozenset({"project", "group"}))
    assert cells.count() == 2  # the document tuple was dropped at apply
    core = DecisionCore("billing", cells, memo=memo)
    core.activate(revision())
    assert core.decide(ask(IN, "project")).allow
    assert core.decide(ask(IN, "document", "d1")).reasons == ("out_of_scope",)
    assert core.decide(ask(IN, "invoice")).reasons == ("out_of_scope",)  # a type the scope does not name


def test_tg_related_about_a_type_out_of_scope_denies_the_decision_out_of_scope(memo: VerdictMemo | None) -> None:
    core = DecisionCore("billing", relations(frozenset({"project", "group"})), memo=memo)
    core.activate(revision())
    d = core.decide(ask(IN, "group", "d1"))  # in scope itself, but its policy asks about document:d1
    assert not d.allow and d.reasons == ("out_of_scope",)
    unscoped = DecisionCore("billing", relations(), memo=memo)
    unscoped.activate(revision())
    assert unscoped.decide(ask(IN, "group", "d1")).allow  # the same question, with documents held


def test_the_decisions_sequence_is_its_cells() -> None:
    cells = relations()
    core = DecisionCore("billing", cells)
    core.activate(revision())
    assert core.decide(ask(IN, "project")).relations_seq == 1 == cells.seq_of(IN)
    assert cells.seq_of(OUT) is None


def test_a_deny_before_the_policy_reports_the_tenants_cell_sequence() -> None:
    """Two cells at different sequences: a kill-switch deny or one with no bundle reports the
    tenant's cell sequence, not the sum of the cells (explain replays the record's cell to it)."""
    cells = CellRelations(RelationScope(CELLS, frozenset({"c1", "c2"})))
    for seq in (1, 2, 3):
        change = {"op": "write", "rel": {"tenant": OUT, "object": f"project:p{seq}", "relation": "member",
                                         "subject": "user:alice"}}
        cells.apply("c2", ChangeBatch.from_wire({"seq": seq, "changes": [change]}))
    cells.apply("c1", ChangeBatch.from_wire({"seq": 1, "changes": []}))
    assert cells.applied_seq == 4 and cells.seqs() == {"c1": 1, "c2": 3}
    core = DecisionCore("billing", cells)
    assert core.decide(ask(IN, "project")).reasons == ("no_active_bundle",)
    assert core.decide(ask(IN, "project")).relations_seq == 1
    assert core.decide(ask(OUT, "project")).relations_seq == 3
    core.activate(revision())
    core.revocations.revoke_tenant(IN)
    denied = core.decide(ask(IN, "project"))
    assert denied.reasons == ("tenant_revoked",) and denied.relations_seq == 1
