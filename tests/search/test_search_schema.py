"""Search with a relationship schema in the bundle: the schema proposes, the policy decides.

A user who reaches documents only through a folder hierarchy and nested groups finds them
(resource search), is found on them (subject search), an excluded user is not, pages of any
size concatenate to the one-page answer, and the schema's walk is bounded by the search's
limits (a typed error, never a short list presented as whole).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tenantguard.relations.reads import TupleMeta
from tenantguard.schema.engine import Limits
from tenantguard.search import Question, Searcher, SearchLimitExceeded, SearchLimits

from tests.search.schema_world import (
    POLICY,
    TUPLES,
    UNDER_ROOT,
    allowed,
    core_of,
    engine,
    pep,
    revision,
)


def docs_of(searcher: Searcher, uid: str, *, limit: int | None = None, tenant: str = "acme",
            **context: Any) -> list[str]:
    """Every page of a resource search, concatenated."""
    question = Question(pep(uid, tenant), {"name": "read"}, {"type": "doc"}, context)
    results: list[str] = []
    token = None
    for _ in range(100):
        page = searcher.resources(question, limit=limit, token=token)
        results.extend(page.results)
        token = page.next_token
        if not token:
            return results
    raise AssertionError("no last page")


def readers_of(searcher: Searcher, doc: str, *, limit: int | None = None) -> list[str]:
    question = Question(pep(), {"name": "read"}, {"type": "doc", "id": doc})
    results: list[str] = []
    token = None
    for _ in range(100):
        page = searcher.subjects(question, "acme", limit=limit, token=token)
        results.extend(page.results)
        token = page.next_token
        if not token:
            return results
    raise AssertionError("no last page")


def test_documents_reached_only_through_the_hierarchy_are_found_and_each_is_allowed() -> None:
    core = core_of(TUPLES)
    searcher = Searcher(core)
    found = docs_of(searcher, "alice")
    assert sorted(found) == UNDER_ROOT  # three folders deep, through eng's membership
    assert all(allowed(core, "alice", d) for d in found)
    assert sorted(docs_of(searcher, "bob")) == ["doc:far", "doc:solo"]  # a direct grant, and one folder


def test_a_blocked_user_is_left_out_and_the_check_agrees() -> None:
    core = core_of(TUPLES)
    searcher = Searcher(core)
    found = docs_of(searcher, "mallory")  # eng <- ops membership, blocked on d3
    assert sorted(found) == ["doc:d1", "doc:d2", "doc:d4", "doc:d5"]
    assert not allowed(core, "mallory", "doc:d3")  # proposed by the walk (it ignores exclusion), denied


def test_subject_search_finds_readers_through_groups_and_folders_but_not_the_blocked() -> None:
    searcher = Searcher(core_of(TUPLES))
    assert sorted(readers_of(searcher, "d1")) == ["user:alice", "user:mallory"]
    assert readers_of(searcher, "d3") == ["user:alice"]
    assert readers_of(searcher, "far") == ["user:bob"]


def test_results_never_cross_the_tenant() -> None:
    """globex's alice views globex's folder:leaf, whose names acme reuses: acme's alice
    gets acme's documents only, and globex's alice only g1."""
    searcher = Searcher(core_of(TUPLES))
    assert "doc:g1" not in docs_of(searcher, "alice")
    assert docs_of(searcher, "alice", tenant="globex") == ["doc:g1"]


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_small_pages_concatenate_to_the_one_page_answer(limit: int) -> None:
    searcher = Searcher(core_of(TUPLES))
    whole = searcher.resources(Question(pep("mallory"), {"name": "read"}, {"type": "doc"}), limit=100)
    assert whole.next_token == ""
    paged = docs_of(searcher, "mallory", limit=limit)
    assert paged == list(whole.results) and len(set(paged)) == len(paged)
    assert readers_of(searcher, "d1", limit=limit) == readers_of(searcher, "d1")


def test_pages_that_stop_at_the_decision_budget_go_on_without_losing_or_repeating() -> None:
    searcher = Searcher(core_of(TUPLES), limits=SearchLimits(max_decisions=1))
    first = searcher.resources(Question(pep("mallory"), {"name": "read"}, {"type": "doc"}), limit=10)
    assert first.decisions == 1 and first.next_token  # one candidate decided per request
    assert sorted(docs_of(searcher, "mallory", limit=10)) == ["doc:d1", "doc:d2", "doc:d4", "doc:d5"]


def test_the_schema_walk_is_bounded_by_max_fanout_as_a_typed_error() -> None:
    """The index walk for alice visits two nodes, within the bound; the schema's walk
    through 40 documents in the hierarchy does not: 422, never the documents found so far."""
    many = [*TUPLES, *(("acme", f"doc:x{i}", "parent", "folder:leaf") for i in range(40))]
    searcher = Searcher(core_of(many), limits=SearchLimits(max_fanout=30))
    with pytest.raises(SearchLimitExceeded) as caught:
        searcher.resources(Question(pep("alice"), {"name": "read"}, {"type": "doc"}), limit=1000)
    assert caught.value.detail["limit"] == "max_fanout" and caught.value.http_status == 422
    assert sorted(docs_of(Searcher(core_of(many)), "alice")) == sorted(UNDER_ROOT + [f"doc:x{i}" for i in range(40)])


def test_the_engines_own_step_budget_is_the_same_typed_error() -> None:
    many = [*TUPLES, *(("acme", f"doc:x{i}", "parent", "folder:leaf") for i in range(40))]
    # the decisions' checks fit in 500 steps; the walk over 45 documents does not fit in 50
    small = engine(Limits(max_steps=50))
    searcher = Searcher(core_of(many, revision(small)))
    with pytest.raises(SearchLimitExceeded) as caught:
        searcher.resources(Question(pep("alice"), {"name": "read"}, {"type": "doc"}), limit=1000)
    assert caught.value.detail == {"limit": "max_fanout", "maximum": 50}


def test_the_walk_proposes_through_expired_and_conditional_tuples_and_the_decision_applies_them() -> None:
    tuples = [*TUPLES,
              ("acme", "folder:old", "viewer", "user:dana", TupleMeta(expires_at=time.time() - 60)),
              ("acme", "doc:archive", "parent", "folder:old"),
              ("acme", "folder:lab", "viewer", "user:dana", TupleMeta(condition="in_office")),
              ("acme", "doc:notes", "parent", "folder:lab")]
    searcher = Searcher(core_of(tuples))
    assert docs_of(searcher, "dana") == []  # expired, and the condition lacks its ip
    assert docs_of(searcher, "dana", ip="10.1.2.3") == ["doc:notes"]
    assert docs_of(searcher, "dana", ip="192.168.0.1") == []


def test_a_wildcard_grant_is_found_for_anyone_and_broadens_subject_search() -> None:
    tuples = [*TUPLES, ("acme", "doc:handbook", "viewer", "user:*")]
    searcher = Searcher(core_of(tuples))
    assert "doc:handbook" in docs_of(searcher, "nobody")  # a user no tuple names
    readers = readers_of(searcher, "handbook")  # every user the tenant's tuples hold, never "user:*"
    assert sorted(readers) == ["user:alice", "user:bob", "user:mallory"]


def test_without_a_policy_that_reads_permissions_the_schema_proposes_nothing() -> None:
    """The schema grants only through ``input.permissions``: a policy that cannot read them is
    answered as before (its candidates are the index walk's)."""
    related = POLICY.replace("decision if input.action.name in input.permissions",
                             'decision if "parent" in input.relations[concat(":", ["doc", input.resource.id])]')
    rev = revision(policy=related)
    assert rev.schema is not None and not rev.asks_permissions
    assert docs_of(Searcher(core_of(TUPLES, rev)), "alice") == []


def test_a_resource_type_the_schema_does_not_define_walks_the_index_only() -> None:
    tuples = [*TUPLES, ("acme", "invoice:i1", "viewer", "user:alice")]
    searcher = Searcher(core_of(tuples))
    page = searcher.resources(Question(pep("alice"), {"name": "read"}, {"type": "invoice"}))
    assert page.results == () and page.decisions == 1  # proposed by the index, denied: no permissions
