"""The verdict memo: repeated questions reuse the policy's verdict, and nothing else.

Every test here tries to get a stale or someone else's verdict out of the memo: after a
relation is deleted, after a bundle swap or a resync, for other claims, for a question
that only looks the same, under a kill switch, for a policy that reads the clock, and
from threads racing relation changes.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from tenantguard.decision.core import RELATED_EXTENSION, DecisionCore, DecisionRecord, DecisionRequest, PolicyRevision
from tenantguard.decision.verdicts import MAX_KEY_CHARS, VerdictMemo, projected_key, question_key
from tenantguard.policy.engine import RegorusEngine, impure_builtins
from tenantguard.policy.testrunner import load_bundle_dir
from tenantguard.relations import ChangeBatch, RelationIndex

from tests.harness.decision_core import Confirmer, claims, decide, question

from .conftest import REPO

MEMBER = {"tenant": "acme", "object": "project:p1", "relation": "member", "subject": "user:alice"}


def batch(seq: int, op: str) -> ChangeBatch:
    return ChangeBatch.from_wire({"seq": seq, "changes": [{"op": op, "rel": MEMBER}]})


def revision(source: str, name: str = "r") -> PolicyRevision:
    policy = RegorusEngine().prepare({"p.rego": "package t\nimport rego.v1\n" + source}, {},
                                     extensions=RELATED_EXTENSION)
    return PolicyRevision(revision=name, policy=policy, entrypoint="data.t.decision")


MEMBERS_ONLY = revision('decision := {"allow": tg.related("project:p1", "member", concat(":", '
                        '[input.subject.type, input.subject.id]))}\n', "members")


@pytest.fixture()
def memo() -> VerdictMemo:
    return VerdictMemo(64)


@pytest.fixture()
def records() -> list[DecisionRecord]:
    return []


@pytest.fixture()
def core(example_revision: PolicyRevision, index: RelationIndex, memo: VerdictMemo,
         records: list[DecisionRecord]) -> DecisionCore:
    core = DecisionCore("billing", index, memo=memo, on_decision=records.append)
    core.activate(example_revision)
    return core


@pytest.fixture()
def index() -> RelationIndex:
    return RelationIndex.from_trusted(3, [("acme", "project:p1", "member", "user:alice")])


def test_a_repeated_question_reuses_the_verdict_with_a_fresh_id_and_record(
        core: DecisionCore, memo: VerdictMemo, records: list[DecisionRecord]) -> None:
    alice = claims()
    first, second = decide(core, question(), alice), decide(core, question(), alice)
    assert first.allow and second.allow and first.reasons == second.reasons
    assert (memo.misses, memo.hits) == (1, 1)
    assert first.decision_id != second.decision_id
    assert [r.decision_id for r in records] == [first.decision_id, second.decision_id]


def test_a_deleted_relation_is_never_answered_from_the_memo(index: RelationIndex, memo: VerdictMemo) -> None:
    core = DecisionCore("billing", index, memo=memo)
    core.activate(MEMBERS_ONLY)
    alice = claims()
    assert decide(core, question(), alice).allow
    assert decide(core, question(), alice).allow and memo.hits == 1
    index.apply(batch(4, "delete"))
    denied = decide(core, question(), alice)
    assert not denied.allow and denied.relations_seq == 4
    index.apply(batch(5, "write"))
    assert decide(core, question(), alice).allow


def test_a_bundle_swap_or_a_resynchronised_index_empties_the_memo(index: RelationIndex, memo: VerdictMemo) -> None:
    core = DecisionCore("billing", index, memo=memo)
    core.activate(MEMBERS_ONLY)
    alice = claims()
    assert decide(core, question(), alice).allow
    core.activate(revision('decision := {"allow": false, "reasons": ["closed"]}\n', "closed"))
    assert decide(core, question(), alice).reasons == ("closed",)
    core.activate(MEMBERS_ONLY)
    assert decide(core, question(), alice).allow
    # a resync: another index object at the same sequence, without the tuple
    core.relations = RelationIndex.from_trusted(index.applied_seq, [])
    assert not decide(core, question(), alice).allow
    assert memo.hits == 0 and memo.epochs == 4


def test_other_claims_never_share_a_verdict(core: DecisionCore, memo: VerdictMemo) -> None:
    write = question(action="invoices:write")
    assert decide(core, write, claims(roles=("editor",))).allow
    viewer = claims(roles=("viewer",))
    assert not decide(core, write, viewer).allow
    assert not decide(core, write, viewer).allow
    # equal content as far as the bundle reads it, another object (the verifier re-verified
    # the token; another kid, which no rule reads): the projected key finds the verdict
    assert decide(core, write, claims(roles=("editor",))).allow
    assert (memo.hits, memo.misses, memo.projected_hits) == (2, 2, 1)


def test_a_question_that_only_looks_the_same_is_evaluated(index: RelationIndex, memo: VerdictMemo) -> None:
    core = DecisionCore("billing", index, memo=memo)
    core.activate(revision('decision := {"allow": true, "reasons": [], "k": input.context}\n', "reads-context"))
    alice = claims()
    assert decide(core, question(context={"k": {"1": True}}), alice).allow
    assert memo.misses == 1
    for lookalike in ({1: True}, {"1": 1}, ("1",), {"1": True, "2": None}):
        decide(core, question(context={"k": lookalike}), alice)
    assert memo.hits == 0
    assert question_key({}, {"name": "a"}, {"type": "t", "p": (1,)}, {}) is None
    assert question_key({}, {"name": "a"}, {"type": "t", "p": {1: 2}}, {}) is None
    assert question_key({}, {"name": "a"}, {"type": "t", "p": [1]}, {}) is not None


def test_big_questions_are_not_kept_and_the_memo_stays_bounded(core: DecisionCore, memo: VerdictMemo) -> None:
    alice = claims()
    big = question(context={"blob": "x" * MAX_KEY_CHARS})
    assert decide(core, big, alice).allow and decide(core, big, alice).allow
    assert memo.hits == memo.misses == len(memo) == 0
    for i in range(memo.size + 10):
        decide(core, question(context={"i": i}), alice)
    assert len(memo) == memo.size


def test_the_kill_switch_and_high_risk_confirmation_run_on_every_hit(
        example_revision: PolicyRevision, index: RelationIndex, memo: VerdictMemo) -> None:
    confirmer = Confirmer(True)
    core = DecisionCore("billing", index, memo=memo, confirmer=confirmer)
    core.activate(example_revision)
    admin = claims(roles=("admin",))
    for _ in range(3):
        assert decide(core, question(action="export_all"), admin).allow
    assert confirmer.calls == 3 and memo.hits == 2
    confirmer.answer = False
    assert decide(core, question(action="export_all"), admin).reasons == ("high_risk_denied",)
    core.revocations.revoke_tenant("acme")
    assert decide(core, question(), claims()).reasons == ("tenant_revoked",)


def test_a_cross_tenant_deny_is_remembered_as_a_deny(core: DecisionCore, memo: VerdictMemo) -> None:
    alice = claims()
    for _ in range(2):
        d = decide(core, question(tenant="globex"), alice)
        assert not d.allow and d.reasons == ("tenant_mismatch",) and not d.act_as
    assert memo.hits == 1


def test_a_policy_that_reads_the_clock_is_evaluated_every_time(index: RelationIndex, memo: VerdictMemo) -> None:
    clocked = revision('decision := {"allow": true, "reasons": [sprintf("%d", [time.now_ns()])]}\n')
    assert not clocked.policy.pure and clocked.policy.impure_builtins == ("time.now_ns",)
    core = DecisionCore("billing", index, memo=memo)
    core.activate(clocked)
    reasons = {decide(core, question(), claims()).reasons for _ in range(5)}
    assert len(reasons) == 5 and memo.hits == memo.misses == 0


@pytest.mark.parametrize("source", [
    "x := time.now_ns()", "x := rand.intn(\"k\", 10)", "x := uuid.rfc4122(\"k\")",
    "x := http.send({})", "x := io.jwt.decode_verify(input.t, {})", "x := opa.runtime()",
    "# mentions time.now_ns in a comment",
])
def test_clock_chance_and_network_builtins_make_a_policy_impure(source: str) -> None:
    assert impure_builtins({"p.rego": source})
    assert not impure_builtins({"p.rego": "x := time.parse_rfc3339_ns(input.t)\ny := uuid.parse(input.u)"})


def test_a_failing_evaluation_is_not_remembered(index: RelationIndex, memo: VerdictMemo) -> None:
    failing = revision('decision := {"allow": to_number(input.context.n) > 0}\n')
    core = DecisionCore("billing", index, memo=memo)
    core.activate(failing)
    for _ in range(2):
        d = decide(core, question(context={"n": "not a number"}), claims())
        assert not d.allow and d.reasons != ("policy_denied",)
    assert memo.hits == 0
    assert decide(core, question(context={"n": "3"}), claims()).allow


def test_threads_racing_relation_changes_never_see_a_stale_verdict(index: RelationIndex, memo: VerdictMemo) -> None:
    """alice is a member at odd sequences only; every answer must match its own sequence."""
    core = DecisionCore("billing", index, memo=memo)
    core.activate(MEMBERS_ONLY)
    alice = claims()
    wrong: list[tuple[int, bool]] = []
    seen: set[int] = set()
    done = threading.Event()

    def ask() -> None:
        request = DecisionRequest.from_wire(question(), alice)
        while not done.is_set():
            d = core.decide(request)
            seen.add(d.relations_seq)
            if d.allow != (d.relations_seq % 2 == 1):
                wrong.append((d.relations_seq, d.allow))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for seq in range(4, 204):
            index.apply(batch(seq, "delete" if seq % 2 == 0 else "write"))
            while seq not in seen:  # let the askers decide on this state before the next change
                threading.Event().wait(0.0005)
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert wrong == []
    assert memo.hits > 0 and memo.epochs >= 200


class CountingPolicy:
    """A policy object from another engine: it does not say whether it is pure."""

    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, entrypoint: str, input: Any) -> Any:
        self.calls += 1
        return True


def test_a_policy_that_does_not_say_it_is_pure_is_evaluated_every_time(index: RelationIndex,
                                                                       memo: VerdictMemo) -> None:
    policy = CountingPolicy()
    core = DecisionCore("billing", index, memo=memo)
    core.activate(PolicyRevision(revision="other", policy=policy))
    assert all(decide(core, question(), claims()).allow for _ in range(3))
    assert policy.calls == 3 and memo.hits == memo.misses == 0


# ---------------------------------------------------------------- the projected key


def test_a_question_differing_only_in_what_no_rule_reads_reuses_the_verdict(
        core: DecisionCore, memo: VerdictMemo) -> None:
    """The example bundle reads neither the resource id nor the token's jti or kid: other
    ids and every new token (each exchange mints one) are the same question to it."""
    assert decide(core, question(), claims()).allow
    for n in range(5):
        other = question()
        other["resource"]["id"] = f"inv-{n}"
        assert decide(core, other, claims()).allow  # another token object, another kid
    assert (memo.misses, memo.hits, memo.projected_hits) == (1, 5, 5)
    # a member the bundle reads is a new question: evaluated, and denied
    assert decide(core, question(project="p2"), claims()).reasons == ("not_project_member",)
    assert memo.misses == 2


def test_a_rule_added_in_a_new_file_widens_the_key_with_no_other_change(
        index: RelationIndex, memo: VerdictMemo) -> None:
    """Another file reading the resource id: the key now holds it, so a verdict for inv-1 is
    never reused for the frozen inv-9."""
    modules, data = load_bundle_dir(REPO / "bundles" / "tenantguard")
    frozen = 'package tenantguard\nimport rego.v1\ndeny contains "frozen" if input.resource.id == "inv-9"\n'
    policy = RegorusEngine().prepare({**modules, "zz_frozen.rego": frozen}, data, extensions=RELATED_EXTENSION)
    assert ("resource", "id") in policy.input_paths
    core = DecisionCore("billing", index, memo=memo)
    core.activate(PolicyRevision(revision="2", policy=policy))
    assert decide(core, question(), claims()).allow
    assert decide(core, question(), claims()).allow and memo.projected_hits == 1
    nine = question()
    nine["resource"]["id"] = "inv-9"
    assert decide(core, nine, claims()).reasons == ("frozen",)
    assert decide(core, nine, claims()).reasons == ("frozen",)


def test_a_policy_reading_the_whole_input_has_no_projected_key(index: RelationIndex, memo: VerdictMemo) -> None:
    core = DecisionCore("billing", index, memo=memo)
    core.activate(revision('decision := {"allow": count(object.keys(input)) > 0}\n', "whole"))
    assert decide(core, question(), claims()).allow
    other = question()
    other["resource"]["id"] = "inv-2"
    assert decide(core, other, claims()).allow
    assert memo.hits == 0 and memo.misses == 2


def test_projected_key_tells_absent_null_and_values_below_a_non_object_apart() -> None:
    paths = (("resource", "properties", "project"),)
    keys = {projected_key("acme", "user:alice", doc, paths) for doc in (
        {"resource": {"properties": {"project": "p1"}}},
        {"resource": {"properties": {"project": None}}},
        {"resource": {"properties": {}}},
        {"resource": {}},
        {"resource": {"properties": "p1"}},
        {"resource": {"properties": ["p1"]}},
        {"resource": None},
        {},
    )}
    assert len(keys) == 8 and None not in keys
    same = {"resource": {"id": "a", "properties": {"project": "p1", "host": "x"}}}
    assert projected_key("acme", "user:alice", same, paths) == projected_key(
        "acme", "user:alice", {"resource": {"properties": {"project": "p1"}}}, paths)
    assert projected_key("acme", "user:bob", same, paths) != projected_key("acme", "user:alice", same, paths)
    assert projected_key("acme", "user:alice", same, ((),)) is None
    assert projected_key("acme", "user:alice", {"resource": {"properties": {"project": (1,)}}}, paths) is None
