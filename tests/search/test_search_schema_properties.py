"""Property: with a relationship schema, search answers exactly what the check allows.

Random small tuple sets over the shared schema (folders in folders, cycles included;
documents in folders; groups in groups; direct, group and wildcard viewers; blocks), a
random user, document, page size and decision budget:

* resource search == {every document of the universe the check allows};
* subject search == {every user the tenant's tuples name that the check allows} (a user no
  tuple names is allowed only through a wildcard, and search lists the subjects it holds);
* at any page size and decision budget, without a repeat.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenantguard.decision.core import DecisionCore
from tenantguard.search import Question, Searcher, SearchLimits

from tests.search.schema_world import allowed, core_of, pep, revision

USERS = tuple(f"u{i}" for i in range(5))
DOCS = tuple(f"d{i}" for i in range(5))
FOLDERS = tuple(f"f{i}" for i in range(4))
GROUPS = tuple(f"g{i}" for i in range(3))
REVISION = revision()  # one prepared policy and schema for every example


@st.composite
def tuple_sets(draw: st.DrawFn) -> list[tuple[str, str, str, str]]:
    def one(values: tuple[str, ...]) -> str:
        return draw(st.sampled_from(values))

    shapes = {
        "folder_parent": lambda: (f"folder:{one(FOLDERS)}", "parent", f"folder:{one(FOLDERS)}"),
        "doc_parent": lambda: (f"doc:{one(DOCS)}", "parent", f"folder:{one(FOLDERS)}"),
        "folder_user": lambda: (f"folder:{one(FOLDERS)}", "viewer", f"user:{one(USERS)}"),
        "folder_group": lambda: (f"folder:{one(FOLDERS)}", "viewer", f"group:{one(GROUPS)}#member"),
        "doc_user": lambda: (f"doc:{one(DOCS)}", "viewer", f"user:{one(USERS)}"),
        "doc_anyone": lambda: (f"doc:{one(DOCS)}", "viewer", "user:*"),
        "blocked": lambda: (f"doc:{one(DOCS)}", "blocked", f"user:{one(USERS)}"),
        "member": lambda: (f"group:{one(GROUPS)}", "member", f"user:{one(USERS)}"),
        "nested": lambda: (f"group:{one(GROUPS)}", "member", f"group:{one(GROUPS)}#member"),
    }
    found = set()
    for _ in range(draw(st.integers(0, 30))):
        tenant = draw(st.sampled_from(("acme", "acme", "acme", "globex")))
        found.add((tenant, *shapes[draw(st.sampled_from(sorted(shapes)))]()))
    return sorted(found)


def every_page(fetch: Any, limit: int) -> list[str]:
    results: list[str] = []
    token = None
    for _ in range(200):
        page = fetch(limit=limit, token=token)
        results.extend(page.results)
        token = page.next_token
        if not token:
            return results
    raise AssertionError("search did not end")


def named_users(tuples: list[tuple[str, str, str, str]]) -> set[str]:
    return {s for t, _, _, s in tuples if t == "acme" and s.startswith("user:") and s != "user:*"}


def searcher_for(tuples: list[tuple[str, str, str, str]], budget: int) -> tuple[DecisionCore, Searcher]:
    core = core_of(list(tuples), REVISION)
    return core, Searcher(core, limits=SearchLimits(max_decisions=budget))


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(tuple_sets(), st.sampled_from(USERS), st.integers(1, 4), st.integers(1, 5))
def test_resource_search_is_every_document_the_check_allows(tuples: list[tuple[str, str, str, str]], uid: str,
                                                            limit: int, budget: int) -> None:
    core, searcher = searcher_for(tuples, budget)
    question = Question(pep(uid), {"name": "read"}, {"type": "doc"})
    results = every_page(lambda **kw: searcher.resources(question, **kw), limit)
    assert len(results) == len(set(results)), "a page repeated a result"
    assert set(results) == {f"doc:{d}" for d in DOCS if allowed(core, uid, f"doc:{d}")}


@SETTINGS
@given(tuple_sets(), st.sampled_from(DOCS), st.integers(1, 4), st.integers(1, 5))
def test_subject_search_is_every_named_user_the_check_allows(tuples: list[tuple[str, str, str, str]], doc: str,
                                                             limit: int, budget: int) -> None:
    core, searcher = searcher_for(tuples, budget)
    question = Question(pep(), {"name": "read"}, {"type": "doc", "id": doc})
    results = every_page(lambda **kw: searcher.subjects(question, "acme", **kw), limit)
    assert len(results) == len(set(results)), "a page repeated a result"
    expected = {u for u in named_users(tuples) if allowed(core, u.partition(":")[2], f"doc:{doc}")}
    assert set(results) == expected
    if any(t == ("acme", f"doc:{doc}", "viewer", "user:*") for t in tuples):  # a wildcard: everyone named
        assert expected == named_users(tuples) - {f"user:{u}" for u in USERS
                                                  if ("acme", f"doc:{doc}", "blocked", f"user:{u}") in tuples}
