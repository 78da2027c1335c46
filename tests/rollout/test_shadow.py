"""Shadow evaluation in the core: sampled, rate-limited, bounded, never touching the answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tenantguard.bundle import content_revision
from tenantguard.decision.core import DecisionCore, DecisionRequest
from tenantguard.relations import RelationIndex
from tenantguard.rollout import ShadowEvaluator, ShadowSettings, load_bundle, prepare_revision
from tenantguard.rollout.shadow import MAX_EXAMPLES, MAX_RATE


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def ask(core: DecisionCore, sub: str, project: str = "p1") -> bool:
    return core.decide(DecisionRequest.from_wire({
        "subject": {"type": "user", "id": sub, "properties": {"tenant_id": "acme", "roles": ["editor"]}},
        "action": {"name": "invoices:read"},
        "resource": {"type": "invoice", "id": "inv-1", "properties": {"project": project}}})).allow


@pytest.fixture(scope="module")
def revisions(candidates: dict[str, Path]) -> dict[str, object]:
    return {name: prepare_revision(load_bundle(path)) for name, path in candidates.items()}


@pytest.fixture()
def core(revisions: dict) -> DecisionCore:
    index = RelationIndex.from_trusted(4, [("acme", "project:p1", "member", "user:alice"),
                                           ("acme", "project:p1", "owner", "user:olga")])
    core = DecisionCore("orders", index)
    core.activate(revisions["baseline"])
    return core


def test_disagreements_are_counted_by_direction_with_examples_and_the_answer_is_untouched(
        core: DecisionCore, revisions: dict, candidates: dict[str, Path]) -> None:
    shadow = ShadowEvaluator(core, clock=Clock())
    shadow.set_candidate(revisions["lockout"], ShadowSettings(1.0, 100), scope="all")
    core.observer = shadow.offer
    assert ask(core, "alice") and ask(core, "olga") and not ask(core, "dan")  # the active answers
    assert shadow.pending == 3 and shadow.evaluated == 0  # judged later, off the path
    assert shadow.process() == 3
    stats = shadow.stats()
    assert stats is not None
    assert (stats["evaluated"], stats["agreed"], stats["disagreed"]["allow->deny"],
            stats["disagreed"]["deny->allow"]) == (3, 2, 1, 0)
    (example,) = stats["examples"]
    assert example["subject"] == "user:alice" and example["active"]["allow"] and not example["shadow"]["allow"]
    assert example["shadow"]["reasons"] == ["not_project_member"]
    assert example["shadow"]["revision"] == content_revision(candidates["lockout"])  # lockout-<12 hex>


def test_the_rate_limit_the_sample_rate_and_the_queue_bound_what_a_shadow_costs(
        core: DecisionCore, revisions: dict) -> None:
    clock = Clock()
    shadow = ShadowEvaluator(core, clock=clock, queue_size=100)
    shadow.set_candidate(revisions["lockout"], ShadowSettings(1.0, 5))  # 5 per second, a burst of 5
    core.observer = shadow.offer
    for _ in range(10):
        ask(core, "alice")
    assert (shadow.offered, shadow.pending, shadow.rate_limited, shadow.dropped) == (10, 5, 5, 0)
    clock.now += 0.4  # two more tokens
    for _ in range(10):
        ask(core, "alice")
    assert (shadow.pending, shadow.rate_limited) == (7, 13)
    small = ShadowEvaluator(core, clock=clock, queue_size=3)
    small.set_candidate(revisions["lockout"], ShadowSettings(1.0, 1000))
    core.observer = small.offer
    for _ in range(10):
        ask(core, "alice")
    assert (small.pending, small.dropped, small.rate_limited) == (3, 7, 0)
    draws = iter([0.9, 0.1] * 10)
    sampled = ShadowEvaluator(core, clock=clock, chance=lambda: next(draws))
    sampled.set_candidate(revisions["lockout"], ShadowSettings(0.5, 1000))
    core.observer = sampled.offer
    for _ in range(10):
        ask(core, "alice")
    assert (sampled.sampled_out, sampled.pending) == (5, 5)
    assert ShadowSettings.from_wire({"sample_ppm": 5_000_000, "max_per_second": 10**9}) == ShadowSettings(1.0, MAX_RATE)
    assert ShadowSettings.from_wire({"sample_ppm": "x", "max_per_second": True}) == ShadowSettings()


def test_examples_are_bounded_and_a_new_candidate_starts_afresh(core: DecisionCore, revisions: dict) -> None:
    shadow = ShadowEvaluator(core, clock=Clock(), queue_size=1000)
    shadow.set_candidate(revisions["lockout"], ShadowSettings(1.0, 1000))
    core.observer = shadow.offer
    for _ in range(MAX_EXAMPLES + 10):
        ask(core, "alice")
    shadow.process()
    assert shadow.disagreed["allow->deny"] == MAX_EXAMPLES + 10 and len(shadow.examples) == MAX_EXAMPLES
    ask(core, "alice")
    shadow.set_candidate(revisions["baseline"])  # what was queued for the old candidate is dropped
    assert shadow.pending == 0 and shadow.evaluated == 0 and shadow.examples.maxlen == MAX_EXAMPLES
    shadow.set_candidate(None)
    ask(core, "alice")
    assert shadow.stats() is None and shadow.offered == 0


def test_an_observer_that_raises_changes_no_decision(core: DecisionCore) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("observer bug")

    core.observer = broken
    assert ask(core, "alice") and not ask(core, "dan")


async def test_the_worker_judges_between_requests_on_the_loop(core: DecisionCore, revisions: dict) -> None:
    shadow = ShadowEvaluator(core)
    shadow.set_candidate(revisions["lockout"], ShadowSettings(1.0, 1000))
    core.observer = shadow.offer
    worker = asyncio.get_running_loop().create_task(shadow.run())
    try:
        for _ in range(5):
            ask(core, "alice")
        async with asyncio.timeout(10):
            while shadow.evaluated < 5:
                await asyncio.sleep(0.01)
    finally:
        worker.cancel()
    assert shadow.disagreed["allow->deny"] == 5
