"""Impact analysis: replaying recorded decisions against a candidate finds every flip, and only flips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tenantguard.decision.core import DecisionCore, DecisionRecord, DecisionRequest
from tenantguard.errors import ReplayRecordInvalid
from tenantguard.relations import RelationIndex
from tenantguard.rollout import (
    ALLOW_TO_DENY,
    DENY_TO_ALLOW,
    ExpectedFlip,
    ImpactAnalyzer,
    ReplayRecord,
    analyze,
    from_decision_log,
    load_bundle,
    load_relations,
    manifest_expectations,
    parse_expectations,
    prepare_revision,
    read_records,
    write_records,
)
from tenantguard.rollout.impact import RecordedRelations

from .conftest import record


def records(*lines: dict[str, object]) -> list[ReplayRecord]:
    return list(read_records(json.dumps(line) for line in lines))


@pytest.fixture(scope="module")
def policies(candidates: dict[str, Path]) -> dict[str, object]:
    return {name: prepare_revision(load_bundle(path)) for name, path in candidates.items()}


def test_a_lockout_flips_members_allow_to_deny_grouped_by_tenant_and_reason(policies: dict) -> None:
    sample = records(record("alice"), record("bob", tenant="globex"), record("olga", held=("owner",)),
                     record("dan", held=(), allow=False, reasons=("not_project_member",)))
    report = analyze(policies["lockout"], sample, baseline=policies["baseline"])
    assert (report.replayed, report.agreed, report.flips[ALLOW_TO_DENY], report.flips[DENY_TO_ALLOW]) == (4, 2, 2, 0)
    groups = {(k.tenant, k.direction, k.reason): g for k, g in report.groups.items()}
    assert set(groups) == {("acme", ALLOW_TO_DENY, "not_project_member"),
                           ("globex", ALLOW_TO_DENY, "not_project_member")}
    example = groups[("acme", ALLOW_TO_DENY, "not_project_member")].examples[0]
    assert example["subject"] == "user:alice" and example["before"]["allow"] and not example["after"]["allow"]
    assert report.undeclared == 2 and not report.ok()
    # the same bundle against itself: nothing flips
    assert analyze(policies["baseline"], sample, baseline=policies["baseline"]).flipped == 0


def test_against_recorded_results_built_in_denies_are_skipped_and_high_risk_counts_as_allowed(policies: dict) -> None:
    sample = records(record("alice"),
                     record("eve", allow=False, reasons=("tenant_revoked",)),  # decided before the policy ran
                     record("hal", allow=False, reasons=("high_risk_unconfirmed",)))  # the policy allowed it
    report = analyze(policies["lockout"], sample)
    assert report.baseline == "recorded" and report.skipped == {"not_policy": 1}
    assert report.replayed == 2 and report.flips[ALLOW_TO_DENY] == 2
    assert {e["subject"] for g in report.groups.values() for e in g.examples} == {"user:alice", "user:hal"}


def test_deny_to_allow_is_a_flip_too(policies: dict) -> None:
    sample = records(record("dan", allow=False, reasons=("not_project_member",)))
    report = analyze(policies["baseline"], sample)  # the recording denied; the candidate allows a member
    assert report.flips[DENY_TO_ALLOW] == 1
    (key,) = report.groups
    assert (key.direction, key.reason) == (DENY_TO_ALLOW, "not_project_member")


def test_declared_flips_pass_the_gate_and_undeclared_ones_do_not(policies: dict, candidates: dict) -> None:
    sample = records(record("alice"), record("bob", tenant="globex"))
    declared = manifest_expectations(load_bundle(candidates["declared"]))
    assert declared == (ExpectedFlip(direction=ALLOW_TO_DENY, tenant="acme", action="invoices:*"),)
    report = analyze(policies["declared"], sample, baseline=policies["baseline"], expected=declared)
    assert (report.declared, report.undeclared) == (1, 1)  # globex was not declared
    globex = next(g for k, g in report.groups.items() if k.tenant == "globex")
    assert not globex.declared
    assert report.ok(max_undeclared=1) and not report.ok()
    everything = parse_expectations({"expected_flips": [{"direction": "*"}]})
    assert analyze(policies["lockout"], sample, baseline=policies["baseline"], expected=everything).ok()


def test_expectations_are_validated() -> None:
    for bad in ([{"direction": "sideways"}], [{"tenant": ""}], [{"tenants": "acme"}], "nope", [1]):
        with pytest.raises(Exception) as caught:
            parse_expectations(bad)
        assert getattr(caught.value, "code", None) == "invalid_request"


def test_groups_and_examples_are_bounded(policies: dict) -> None:
    sample = records(*(record(f"u{i}", tenant=f"t{i % 7}") for i in range(40)))
    analyzer = ImpactAnalyzer(policies["lockout"], baseline=policies["baseline"], max_groups=3, max_examples=2)
    report = analyzer.add_all(sample)
    assert len(report.groups) == 3 and all(len(g.examples) <= 2 for g in report.groups.values())
    assert report.flipped == 40 and report.undeclared == 40  # counted even beyond the groups shown
    assert report.groups_dropped == 40 - sum(g.count for g in report.groups.values())
    assert report.to_wire(max_groups=1)["groups_not_shown"] == 2 + report.groups_dropped


def test_tg_related_during_a_replay_never_answers_for_another_subject() -> None:
    view = RecordedRelations("user:alice", {"project:p1": ["member"]}, 3)
    assert view.check("project:p1", "member", "user:alice")
    assert not view.check("project:p1", "member", "user:mallory")
    assert not view.check("project:p1", "owner", "user:alice")
    assert view.relations_of("user:mallory") == {}


def test_a_decision_log_record_feeds_in_and_replays_at_a_relations_state(policies: dict, tmp_path: Path) -> None:
    """A decision-log record carries the policy input without relations: the replay takes them
    from the relations state it is given (here a tuples file), and roles come from the record."""
    index = RelationIndex.from_trusted(9, [("acme", "project:p1", "member", "user:alice")])
    logged: list[DecisionRecord] = []
    core = DecisionCore("orders", index, on_decision=logged.append)
    core.activate(policies["baseline"])  # type: ignore[arg-type]
    core.decide(DecisionRequest.from_wire({
        "subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme", "roles": ["editor"]}},
        "action": {"name": "invoices:read"}, "resource": {"type": "invoice", "id": "inv-1"}}))
    export = logged[0].to_wire()
    replay = from_decision_log(export)
    assert (replay.tenant, replay.service, replay.subject, replay.allow) == ("acme", "orders", "user:alice", True)
    assert replay.input is not None and "relations" not in replay.input
    relations = tmp_path / "relations.json"
    relations.write_text(json.dumps({"seq": 9, "relationships": ["acme/project:p1#member@user:alice"]}))
    loaded = load_relations(relations)
    doc, rebuilt = replay.policy_input(loaded)
    assert not rebuilt and doc["relations"] == {"project:p1": ["member"]}
    assert doc["subject"]["properties"] == {"tenant_id": "acme", "roles": ["editor"]}  # recorded, not rebuilt
    report = ImpactAnalyzer(policies["baseline"], baseline=policies["baseline"], relations=loaded).add_all([replay])
    assert (report.reconstructed, report.flipped, report.relations_seq) == (0, 0, 9)


def test_the_format_round_trips_and_bad_lines_are_refused_with_their_number() -> None:
    sample = records(record("alice"), record("bob", with_input=False))
    assert [r.to_wire() for r in read_records(write_records(sample).splitlines())] == [r.to_wire() for r in sample]
    good = json.dumps(record("alice"))
    cases = {"not json": "replay_record_invalid", json.dumps({**record("a"), "allow": "yes"}): "allow",
             json.dumps({**record("a"), "v": 3}): "v3", json.dumps({**record("a", with_input=False),
                                                                   "tenant": None}): "tenant"}
    for line, needle in cases.items():
        with pytest.raises(ReplayRecordInvalid) as caught:
            list(read_records([good, "", line]))
        assert caught.value.detail["line"] == 3 and (needle in caught.value.message or needle == caught.value.code)
    with pytest.raises(ReplayRecordInvalid):
        list(read_records(["x" * 300_000]))
    assert len(list(read_records([good] * 5, limit=2))) == 2


def test_a_tuples_file_keeps_conditions_and_expiry_so_a_replay_never_grants_through_them(tmp_path: Path) -> None:
    """A `relation list` page fed to impact keeps each tuple's meta: replayed as plain, a
    conditional grant would show as allowed (the live sidecar never grants through it)."""
    relations = tmp_path / "relations.json"
    relations.write_text(json.dumps({"seq": 3, "relationships": [
        {"tenant": "acme", "object": "project:p1", "relation": "member", "subject": "user:alice",
         "condition": {"name": "ip_ok", "context": {"cidr": "10/8"}}},
        "acme/project:p2#member@user:alice[expiration:2099-01-01T00:00:00Z]",
        "acme/project:p3#member@user:alice"]}))
    loaded = load_relations(relations)
    assert loaded.count() == 3
    assert loaded.relations_of("acme", "user:alice") == {"project:p3": ["member"]}
    assert [r.meta is not None for r in loaded.list("acme")] == [True, True, False]
