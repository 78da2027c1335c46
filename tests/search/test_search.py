"""Search in the library: pinned state across writes, page tokens, limits, filters, depth."""

from __future__ import annotations

from pathlib import Path

import pytest
from tenantguard.decision.core import RELATED_EXTENSION, DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.policy.engine import RegorusEngine, reads_input_relations
from tenantguard.relations import ChangeBatch, RelationChange, RelationIndex, Relationship
from tenantguard.search import (
    PageTokenExpired,
    PageTokenInvalid,
    Question,
    Searcher,
    SearchLimitExceeded,
    SearchLimits,
)

from tests.harness.example_bundle import example_revision

REPO = Path(__file__).resolve().parents[2]
RELATED = """package tg
import rego.v1
default decision := false
decision if tg.related(concat(":", [input.resource.type, input.resource.id]), "viewer",
                       concat(":", [input.subject.type, input.subject.id]))
"""


def index_of(*texts: str, seq: int = 1) -> RelationIndex:
    rels = [Relationship.parse(t) for t in texts]
    return RelationIndex.from_trusted(seq, [(r.tenant, r.object, r.relation, r.subject) for r in rels])


def core_with(policy: str, index: RelationIndex) -> DecisionCore:
    prepared = RegorusEngine().prepare({"p.rego": policy}, {}, extensions=RELATED_EXTENSION,
                                       entrypoints=("data.tg.decision",))
    core = DecisionCore("svc", index)
    core.activate(PolicyRevision("r1", prepared, entrypoint="data.tg.decision"))
    return core


def write(index: RelationIndex, *texts: str, op: str = "write") -> None:
    index.apply(ChangeBatch(index.applied_seq + 1, tuple(RelationChange(op, Relationship.parse(t))  # type: ignore[arg-type]
                                                         for t in texts)))


ALICE = {"type": "user", "id": "alice", "properties": {"tenant_id": "acme"}}
DOCS = Question(ALICE, {"name": "read"}, {"type": "doc"})


def test_pages_keep_the_state_they_started_from_while_writes_happen() -> None:
    index = index_of(*(f"acme/doc:d{i}#viewer@user:alice" for i in range(6)))
    core = core_with(RELATED, index)
    searcher = Searcher(core)
    first = searcher.resources(DOCS, limit=3)
    write(index, "acme/doc:d0#viewer@user:alice", "acme/doc:d5#viewer@user:alice", op="delete")
    write(index, "acme/doc:d9#viewer@user:alice")
    second = searcher.resources(DOCS, limit=3, token=first.next_token)
    assert second.relations_seq == first.relations_seq == 1 and second.next_token == ""
    assert sorted(first.results + second.results) == [f"doc:d{i}" for i in range(6)]  # the state at seq 1
    fresh = searcher.resources(DOCS, limit=10)  # a new search sees the writes, and no denied resource
    assert fresh.relations_seq == 3 and sorted(fresh.results) == ["doc:d1", "doc:d2", "doc:d3", "doc:d4", "doc:d9"]
    for obj in fresh.results:
        assert core.decide(DecisionRequest.from_wire({"subject": ALICE, "action": {"name": "read"},
                                                      "resource": {"type": "doc", "id": obj[4:]}})).allow


def test_a_token_whose_state_is_gone_is_409_page_token_expired() -> None:
    now = [0.0]
    index = index_of(*(f"acme/doc:d{i}#viewer@user:alice" for i in range(4)))
    searcher = Searcher(core_with(RELATED, index), limits=SearchLimits(pinned_ttl=10), clock=lambda: now[0])
    first = searcher.resources(DOCS, limit=2)
    write(index, "acme/doc:d7#viewer@user:alice")
    now[0] = 11.0
    with pytest.raises(PageTokenExpired) as caught:
        searcher.resources(DOCS, limit=2, token=first.next_token)
    assert caught.value.http_status == 409 and caught.value.detail["pinned_seq"] == 1
    assert caught.value.detail["current_seq"] == 2


def test_tokens_are_bound_to_the_question_the_caller_and_this_process() -> None:
    index = index_of(*(f"acme/doc:d{i}#viewer@user:alice" for i in range(4)), "acme/doc:d0#viewer@user:bob")
    core = core_with(RELATED, index)
    searcher = Searcher(core)
    token = searcher.resources(DOCS, limit=1).next_token
    bob = Question({**ALICE, "id": "bob"}, {"name": "read"}, {"type": "doc"})
    with pytest.raises(PageTokenInvalid):
        searcher.resources(bob, limit=1, token=token)  # another subject cannot continue alice's list
    body, _, mac = token.partition(".")
    with pytest.raises(PageTokenInvalid):
        searcher.resources(DOCS, limit=1, token=body[:-2] + "AA." + mac)
    with pytest.raises(PageTokenInvalid):
        Searcher(core).resources(DOCS, limit=1, token=token)  # another process's key
    with pytest.raises(PageTokenInvalid):
        searcher.resources(DOCS, limit=1, token="not-a-token")


def test_limits_are_typed_errors() -> None:
    index = index_of(*(f"acme/doc:d{i}#viewer@user:alice" for i in range(50)))
    limits = SearchLimits(default_page_size=10, max_page_size=10, max_fanout=20)
    searcher = Searcher(core_with(RELATED, index), limits=limits)
    with pytest.raises(SearchLimitExceeded) as page:
        searcher.resources(DOCS, limit=11)
    assert page.value.detail["limit"] == "max_page_size" and page.value.http_status == 422
    first = searcher.resources(DOCS, limit=10)  # 11 nodes visited: within the bound
    with pytest.raises(SearchLimitExceeded) as fanout:
        searcher.resources(DOCS, limit=10, token=first.next_token)
    assert fanout.value.detail["limit"] == "max_fanout"


def test_usersets_nest_as_deep_as_check_follows_and_no_deeper() -> None:
    index = index_of("acme/group:g1#member@user:alice", "acme/group:g2#member@group:g1#member",
                     "acme/group:g3#member@group:g2#member", "acme/doc:deep#viewer@group:g3#member",
                     "acme/group:g4#member@group:g3#member", "acme/doc:deeper#viewer@group:g4#member")
    core = core_with(RELATED, index)
    assert Searcher(core).resources(DOCS).results == ("doc:deep",)
    assert not core.decide(DecisionRequest.from_wire({"subject": ALICE, "action": {"name": "read"},
                                                      "resource": {"type": "doc", "id": "deeper"}})).allow
    who = Searcher(core).subjects(Question({"type": "user"}, {"name": "read"}, {"type": "doc", "id": "deep"}), "acme")
    assert who.results == ("user:alice",)


def test_another_tenant_is_never_answered() -> None:
    index = index_of("acme/doc:d1#viewer@user:alice", "globex/doc:d2#viewer@user:alice")
    searcher = Searcher(core_with(RELATED, index))
    assert searcher.resources(DOCS).results == ("doc:d1",)
    cross = Question(ALICE, {"name": "read"}, {"type": "doc", "properties": {"tenant_id": "globex"}})
    assert searcher.resources(cross).results == ()


@pytest.fixture(scope="module")
def example() -> PolicyRevision:
    """The example bundle with its schema (project membership: schema.fga, asked through tg.related)."""
    return example_revision()


def test_filter_for_an_attribute_the_graph_does_not_hold(example: PolicyRevision) -> None:
    """The example policy grants documents through their project; the index holds projects."""
    index = index_of("acme/project:p1#member@user:alice", "acme/group:eng#member@user:alice",
                     "acme/project:p2#owner@group:eng#member", "acme/project:p3#viewer@user:alice",
                     "acme/project:p4#member@user:bob", "globex/project:p9#member@user:alice")
    core = DecisionCore("docs", index)
    core.activate(example)
    searcher = Searcher(core)

    def question(roles: list[str]) -> Question:
        subject = {"type": "user", "id": "alice", "properties": {"tenant_id": "acme", "roles": roles}}
        return Question(subject, {"name": "documents:read"}, {"type": "document"})

    viewer = searcher.resource_filter(question(["viewer"]), "project")
    assert viewer.values == ("p1", "p2") and viewer.include_null and not viewer.any_value  # p3: not a member relation
    assert searcher.resource_filter(question([]), "project").empty
    admin = searcher.resource_filter(question(["admin"]), "project")
    assert admin.any_value and admin.allows("p4")  # tenant admins are exempt from project membership
    for project in ("p1", "p2", "p3", "p4", "p9", None):  # the filter is the check, value by value
        props = {"project": project} if project else {}
        decision = core.decide(DecisionRequest.from_wire({"subject": question(["viewer"]).subject,
                                                          "action": {"name": "documents:read"},
                                                          "resource": {"type": "document", "properties": props}}))
        assert decision.allow == viewer.allows(project), project


def test_only_policies_that_may_read_input_relations_get_them() -> None:
    assert reads_input_relations({"a.rego": "x := input.relations"})
    assert reads_input_relations({"a.rego": "x := input"})
    assert reads_input_relations({"a.rego": 'x := input["relations"]'})
    assert reads_input_relations({"a.rego": "x := input . relations"})
    assert not reads_input_relations({"a.rego": "x := input.resource.id\ny := input.subject"})
    assert not reads_input_relations({"a.rego": RELATED})


def test_a_page_stops_at_its_time_budget_and_the_next_goes_on() -> None:
    """Each decision's input carries the subject's relations, so a count of decisions does not
    bound a page's time: a page also ends at ``max_seconds`` (with a token, after at least one
    decision), and a filter that cannot finish in time is a typed 422. The clock here steps one
    second per reading, so the budget is reached after the same decision on every run."""
    ticks = [0.0]

    def clock() -> float:
        ticks[0] += 1.0
        return ticks[0]

    index = index_of(*(f"acme/doc:d{i:02}#viewer@user:alice" for i in range(12)))
    searcher = Searcher(core_with(RELATED, index), limits=SearchLimits(max_seconds=3.5), clock=clock)
    first = searcher.resources(DOCS, limit=100)
    assert first.partial and first.next_token and 1 <= len(first.results) < 12
    seen, token = list(first.results), first.next_token
    for _ in range(20):
        if not token:
            break
        page = searcher.resources(DOCS, limit=100, token=token)
        assert page.results, "every page decides at least one candidate"
        seen.extend(page.results)
        token = page.next_token
    assert sorted(seen) == [f"doc:d{i:02}" for i in range(12)]
    with pytest.raises(SearchLimitExceeded) as caught:
        searcher.resource_filter(Question(ALICE, {"name": "read"}, {"type": "document"}), "project", via="doc")
    assert caught.value.detail["limit"] == "max_seconds" and caught.value.http_status == 422
    with pytest.raises(ValueError):
        SearchLimits(max_seconds=0)


async def test_search_runner_bounds_pages_running_and_queued() -> None:
    """Past ``workers + waiting`` pages a search is refused at once (503 ``unavailable``,
    retryable), not queued without bound; a slot comes back only when its page has ended."""
    import asyncio
    import threading

    from tenantguard.errors import Unavailable
    from tenantguard.search import SearchRunner

    runner = SearchRunner(workers=1, waiting=1)
    release = threading.Event()
    try:
        first = asyncio.ensure_future(runner.run(release.wait))
        second = asyncio.ensure_future(runner.run(lambda: "queued"))
        while runner.in_flight < 2:
            await asyncio.sleep(0)
        with pytest.raises(Unavailable) as caught:
            await runner.run(lambda: "refused")
        assert caught.value.http_status == 503 and caught.value.retryable
        first.cancel()  # the caller hangs up: the page still holds its worker until it ends
        await asyncio.sleep(0)
        with pytest.raises(Unavailable):
            await runner.run(lambda: "still refused")
        release.set()
        assert await second == "queued"
        assert await runner.run(lambda: "served") == "served" and runner.in_flight == 0
    finally:
        release.set()
        runner.close()
