"""The impact gate: replay the plane's decision sample against a candidate before it is published.

A flip is the policy change alone: the baseline is each scope's active bundle evaluated on the
same rebuilt input. ``report`` answers the flips; ``enforce`` also refuses undeclared ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from tenantguard.bundle import Bundle
from tenantguard.errors import BundleMalformed, TenantGuardError
from tenantguard.feed import topology as topo
from tenantguard.relations import RelationIndex
from tenantguard.rollout import (
    ImpactAnalyzer,
    ImpactReport,
    ImpactUndeclared,
    ReplayRecord,
    manifest_expectations,
    prepare_revision,
)

from .core import BundleCore

IMPACT_MODES: Final = ("off", "report", "enforce")
IMPACT_GROUPS_SHOWN: Final = 50


@dataclass(frozen=True, slots=True)
class ImpactGate:
    """How a publish is checked against the plane's decision sample (docs/operations.md).

    ``mode``: ``off``, ``report`` (replay and answer the report) or ``enforce`` (also refuse,
    409 ``impact_undeclared_flips``, when undeclared flips exceed ``max_undeclared``).
    """

    mode: str = "off"
    max_undeclared: int = 0
    sample: int = 5000

    def stricter(self, mode: str | None, max_undeclared: int | None) -> ImpactGate:
        """A request may ask for more checking than the plane's setting, never for less."""
        if mode is not None and mode not in IMPACT_MODES:
            raise BundleMalformed(f"impact must be one of {', '.join(IMPACT_MODES)}")
        chosen = max(self.mode, mode or "off", key=IMPACT_MODES.index)
        if max_undeclared is None:
            limit = self.max_undeclared
        elif self.mode == "enforce":
            limit = min(self.max_undeclared, max_undeclared)  # a request may only tighten the plane's bound
        else:
            limit = max_undeclared
        return ImpactGate(chosen, max(0, limit), self.sample)



class ImpactChecks(BundleCore):
    """The impact gate's replay (a mixin of :class:`~policy_plane.bundles.service.BundleService`)."""

    gate: ImpactGate
    _sample: Callable[[], Iterable[Mapping[str, Any]]]  # the decision records kept by this replica (newest last)

    async def impact(self, bundle: Bundle, scopes: list[str], gate: ImpactGate) -> ImpactReport:
        """Replay this replica's decision sample against ``bundle``; refuse when ``gate`` enforces.

        The sample is the plane's in-memory decision ring (records of the services the
        scopes reach). Records carry no policy input today, so inputs are rebuilt from
        subject, action, resource and tenant, with relations from the plane's own index
        (its current state), and the baseline is each scope's active bundle evaluated on
        the same rebuilt input: a flip is the policy change alone.
        """
        records = self._sample_for(scopes, gate.sample)
        index = self.state.index
        report = await asyncio.to_thread(self._replay, bundle, scopes, records, index)
        if gate.mode == "enforce" and not report.ok(gate.max_undeclared):
            raise ImpactUndeclared(f"the candidate flips {report.undeclared} recorded decisions nobody declared "
                                   f"(at most {gate.max_undeclared} allowed); declare them in "
                                   "metadata.expected_flips or fix the policy",
                                   report=report.to_wire(max_groups=IMPACT_GROUPS_SHOWN))
        return report

    def _sample_for(self, scopes: list[str], limit: int) -> list[ReplayRecord]:
        reach_all = topo.BUNDLE_SCOPE_ALL in scopes
        out: list[ReplayRecord] = []
        for raw in reversed(list(self._sample())):
            if len(out) >= limit:
                break
            if not reach_all and raw.get("service") not in scopes:
                continue
            try:
                out.append(ReplayRecord.from_wire(raw))
            except TenantGuardError:
                continue  # a record the sidecars sent in another shape: not replayable
        return out

    def _replay(self, bundle: Bundle, scopes: list[str], records: list[ReplayRecord],
                index: RelationIndex) -> ImpactReport:
        candidate = prepare_revision(bundle)
        expected = manifest_expectations(bundle)
        baselines: dict[str, Any] = {}
        for scope in {*scopes, topo.BUNDLE_SCOPE_ALL}:
            store = self.state.stores.get(scope)  # read only: this runs in a worker thread
            active = store.active if store is not None else None
            if active is not None:
                baselines[scope] = prepare_revision(active.bundle)
        fallback = baselines.get(topo.BUNDLE_SCOPE_ALL)
        analyzers: dict[str, ImpactAnalyzer] = {}
        merged = ImpactReport(bundle.revision, "active", relations_seq=index.applied_seq, expected=expected)
        for record in records:
            baseline = baselines.get(record.service, fallback)
            if baseline is None:
                merged.skipped["no_baseline"] = merged.skipped.get("no_baseline", 0) + 1
                continue
            key = baseline.revision
            if key not in analyzers:
                analyzers[key] = ImpactAnalyzer(candidate, baseline=baseline, relations=index, expected=expected)
            analyzers[key].add(record)
        for analyzer in analyzers.values():
            _merge(merged, analyzer.report)
        return merged


def _merge(into: ImpactReport, part: ImpactReport) -> None:
    """Add one baseline's replay to the combined report (each scope may run another revision)."""
    into.replayed += part.replayed
    into.agreed += part.agreed
    into.reasons_changed += part.reasons_changed
    into.reconstructed += part.reconstructed
    into.declared += part.declared
    into.undeclared += part.undeclared
    into.groups_dropped += part.groups_dropped
    for key, value in part.skipped.items():
        into.skipped[key] = into.skipped.get(key, 0) + value
    for key, value in part.flips.items():
        into.flips[key] += value
    for key, group in part.groups.items():
        mine = into.groups.get(key)
        if mine is None:
            into.groups[key] = group
            continue
        mine.count += group.count
        mine.examples = (mine.examples + group.examples)[:3]
