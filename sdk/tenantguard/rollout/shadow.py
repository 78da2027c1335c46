"""Shadow evaluation: a candidate revision judged beside the active one, off the decision path.

The decision core hands each decided question to :meth:`ShadowEvaluator.offer` (O(1):
a sampling draw, a token-bucket check, a bounded deque append; never blocks, never
raises). A worker (:meth:`ShadowEvaluator.run` on the serving loop, or
:meth:`process` in a loop of one's own) rebuilds the exact policy input from the same
immutable relations state and evaluates the candidate with the core's own
:func:`~tenantguard.decision.core.evaluate_input`. The answer the caller got never waits on
it: regorus holds the GIL per evaluation, so the worker runs between requests on the
serving loop and its CPU share is bounded by ``sample_rate`` and ``max_per_second``.

Agreements and disagreements are counted (by direction); the latest disagreements are
kept as examples (bounded) and reported on ``tg.status.<service>`` and ``/v1/status``.
A shadow is never active: it arrives as its own signed event type (``bundle.shadow``)
and is held here, never in the bundle store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from tenantguard.decision.core import (
    Decision,
    DecisionRequest,
    PolicyRevision,
    TenantRelations,
    evaluate_input,
    scope_types,
)
from tenantguard.decision.verdicts import Verdict
from tenantguard.errors import TenantGuardError
from tenantguard.rollout.impact import ALLOW_TO_DENY, DENY_TO_ALLOW, HIGH_RISK_REASONS

log = logging.getLogger(__name__)

MAX_RATE: Final = 1000.0  # evaluations per second, whatever the announce asks for
DEFAULT_RATE: Final = 50.0
DEFAULT_QUEUE: Final = 256
MAX_EXAMPLES: Final = 20
REPORTED_EXAMPLES: Final = 5


class InputBuilder(Protocol):
    """What the shadow needs from the core: the policy input of a decided question."""

    def policy_input(self, view: TenantRelations, request: DecisionRequest, tenant: str,
                     subject: str, with_relations: bool = True) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class ShadowSettings:
    """How much of the traffic a shadow sees; from the signed announce, capped here."""

    sample_rate: float = 1.0
    max_per_second: float = DEFAULT_RATE

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> ShadowSettings:
        """From an event payload (events carry integers only): ``sample_ppm`` (parts per million of
        decisions judged) and ``max_per_second``; anything missing or odd falls back to the defaults."""
        ppm, per_second = raw.get("sample_ppm", 1_000_000), raw.get("max_per_second", int(DEFAULT_RATE))
        ppm = ppm if isinstance(ppm, int) and not isinstance(ppm, bool) else 1_000_000
        per_second = per_second if isinstance(per_second, int) and not isinstance(per_second, bool) \
            else int(DEFAULT_RATE)
        return cls(min(1.0, max(0.0, ppm / 1_000_000)), min(MAX_RATE, max(0.0, float(per_second))))

    def to_wire(self) -> dict[str, int]:
        return {"sample_ppm": round(self.sample_rate * 1_000_000), "max_per_second": int(self.max_per_second)}


class ShadowEvaluator:
    """One candidate at a time; counters reset when it changes. Not thread-safe: one loop."""

    def __init__(self, core: InputBuilder, *, queue_size: int = DEFAULT_QUEUE,
                 clock: Any = time.monotonic, chance: Any = random.random) -> None:
        self._core = core
        self._queue: deque[tuple[DecisionRequest, Decision, TenantRelations, PolicyRevision]] = deque()
        self._queue_size = queue_size
        self._clock, self._chance = clock, chance
        self._wake = asyncio.Event()
        self.candidate: PolicyRevision | None = None
        self.settings = ShadowSettings()
        self.scope: str | None = None
        self._reset()

    def _reset(self) -> None:
        self.offered = self.evaluated = self.agreed = 0
        self.sampled_out = self.rate_limited = self.dropped = self.errors = 0
        self.disagreed = {ALLOW_TO_DENY: 0, DENY_TO_ALLOW: 0}
        self.examples: deque[dict[str, Any]] = deque(maxlen=MAX_EXAMPLES)
        self.since = time.time()
        self._tokens = self.settings.max_per_second
        self._refilled = self._clock()

    def set_candidate(self, candidate: PolicyRevision | None, settings: ShadowSettings | None = None,
                      scope: str | None = None) -> None:
        """Judge ``candidate`` from now on (None stops); what is queued for the old one is dropped."""
        self.candidate, self.scope = candidate, scope
        self.settings = settings or ShadowSettings()
        self._queue.clear()
        self._reset()

    # -- the decision path ---------------------------------------------------------------

    def offer(self, request: DecisionRequest, decision: Decision, view: TenantRelations) -> None:
        """Called by the core after a decision that reached the policy: O(1), never blocks."""
        candidate = self.candidate
        if candidate is None:
            return
        self.offered += 1
        if self.settings.sample_rate < 1.0 and self._chance() >= self.settings.sample_rate:
            self.sampled_out += 1
            return
        now = self._clock()
        per_second = self.settings.max_per_second
        self._tokens = min(per_second, self._tokens + (now - self._refilled) * per_second)
        self._refilled = now
        if self._tokens < 1.0:
            self.rate_limited += 1
            return
        if len(self._queue) >= self._queue_size:
            self.dropped += 1
            return
        self._tokens -= 1.0
        self._queue.append((request, decision, view, candidate))
        self._wake.set()

    # -- the worker ----------------------------------------------------------------------

    def process(self, limit: int | None = None) -> int:
        """Judge up to ``limit`` queued decisions (all when None); how many were judged."""
        done = 0
        while self._queue and (limit is None or done < limit):
            self._judge(*self._queue.popleft())
            done += 1
        return done

    async def run(self) -> None:
        """Forever, on the serving loop: one evaluation per loop iteration, so requests interleave."""
        while True:
            if not self._queue:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=1.0)
                continue
            self.process(1)
            await asyncio.sleep(0)

    def _judge(self, request: DecisionRequest, decision: Decision, view: TenantRelations,
               candidate: PolicyRevision) -> None:
        if candidate is not self.candidate or decision.tenant is None or decision.subject is None:
            return  # the candidate changed while this waited
        active_allow = decision.allow or (bool(decision.reasons) and set(decision.reasons) <= HIGH_RISK_REASONS)
        try:
            input_doc = self._core.policy_input(view, request, decision.tenant, decision.subject,
                                                getattr(candidate.policy, "reads_relations", True), candidate)
            types = scope_types(getattr(self._core, "relations", None))
            verdict = evaluate_input(candidate, view, input_doc, decision.tenant, types)
        except TenantGuardError as exc:
            verdict = Verdict(False, (exc.code,))
        except Exception:
            self.errors += 1
            log.exception("shadow evaluation of %s failed", candidate.revision)
            verdict = Verdict(False, ("internal_error",))
        self.evaluated += 1
        if verdict.allow == active_allow:
            self.agreed += 1
            return
        direction = ALLOW_TO_DENY if active_allow else DENY_TO_ALLOW
        self.disagreed[direction] += 1
        self.examples.append({
            "direction": direction, "decision_id": decision.decision_id, "tenant": decision.tenant,
            "subject": decision.subject, "action": str(request.action.get("name", "")),
            "resource": f"{request.resource.get('type', '')}:{request.resource.get('id', '')}",
            "active": {"revision": decision.bundle_revision, "allow": decision.allow,
                       "reasons": list(decision.reasons)},
            "shadow": {"revision": candidate.revision, "allow": verdict.allow, "reasons": list(verdict.reasons)}})

    # -- reporting -----------------------------------------------------------------------

    @property
    def pending(self) -> int:
        return len(self._queue)

    def stats(self, *, examples: int = MAX_EXAMPLES) -> dict[str, Any] | None:
        """None when no shadow runs; else the counters and the latest ``examples`` disagreements."""
        if self.candidate is None:
            return None
        return {"revision": self.candidate.revision, "scope": self.scope, "since": round(self.since, 3),
                "sample_rate": self.settings.sample_rate, "max_per_second": self.settings.max_per_second,
                "offered": self.offered, "evaluated": self.evaluated, "agreed": self.agreed,
                "disagreed": {**self.disagreed, "total": sum(self.disagreed.values())},
                "sampled_out": self.sampled_out, "rate_limited": self.rate_limited, "dropped": self.dropped,
                "pending": self.pending, "errors": self.errors, "examples": list(self.examples)[-examples:]}
