"""Impact analysis: replay recorded decisions against a candidate bundle, report every flip.

A flip is a recorded question whose outcome the candidate changes: ``allow->deny`` (a
lock-out) or ``deny->allow`` (a widening). The comparison is policy against policy on
the same input and the same relations state, through the core's own
:func:`~tenantguard.decision.core.evaluate_input`:

* with a baseline bundle, both are evaluated on each input, so only the policy change
  shows (relations drift since the recording cannot cause a flip);
* without one, the candidate is compared with the recorded result. Records decided
  before the policy ran (``no_active_bundle``, ``tenant_revoked``, ...) are skipped; a
  ``high_risk_unconfirmed``/``high_risk_denied`` deny counts as a policy allow, since the
  policy allowed it and the sidecar's confirmation refused it.

Flips are grouped by (direction, tenant, service, action, reason) with a few examples
each; groups and examples are bounded. A flip is *declared* when an
:class:`ExpectedFlip` (an ``--expect`` file, or ``metadata.expected_flips`` in the
candidate's ``.manifest``) matches it; a gate fails on undeclared flips.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tenantguard.bundle import Bundle, Verifier, build_bundle, content_revision, verify_bundle
from tenantguard.decision.core import DEFAULT_DECISION_ENTRYPOINT, RELATED_EXTENSION, PolicyRevision, evaluate_input
from tenantguard.decision.permissions import schema_engine, with_permissions_of
from tenantguard.decision.verdicts import Verdict
from tenantguard.errors import InvalidInput, TenantGuardError
from tenantguard.policy.engine import RegorusEngine
from tenantguard.relations import RelationIndex
from tenantguard.relations.reads import Fact, MemoryReads
from tenantguard.rollout.records import ReplayRecord

log = logging.getLogger(__name__)

ALLOW_TO_DENY: Final = "allow->deny"
DENY_TO_ALLOW: Final = "deny->allow"
DIRECTIONS: Final = (ALLOW_TO_DENY, DENY_TO_ALLOW)
# Decided by a built-in check before the policy ran: a policy change cannot move them.
NOT_POLICY_REASONS: Final = frozenset({
    "no_active_bundle", "tenant_revoked", "tenant_unknown", "subject_mismatch", "relations_stale", "internal_error"})
# The policy allowed; the sidecar's confirmation of a high-risk action refused.
HIGH_RISK_REASONS: Final = frozenset({"high_risk_unconfirmed", "high_risk_denied"})
DEFAULT_MAX_GROUPS: Final = 1000
DEFAULT_MAX_EXAMPLES: Final = 3
MAX_EXPECTATIONS: Final = 1000


# --------------------------------------------------------------------------- expectations


@dataclass(frozen=True, slots=True)
class ExpectedFlip:
    """Flips the author declares intended; each member is a glob (``*`` or absent: any)."""

    direction: str = "*"
    tenant: str = "*"
    service: str = "*"
    action: str = "*"
    reason: str = "*"

    @classmethod
    def from_wire(cls, raw: Any) -> ExpectedFlip:
        if not isinstance(raw, Mapping):
            raise InvalidInput("an expected flip is an object of direction, tenant, service, action, reason")
        unknown = set(raw) - {"direction", "tenant", "service", "action", "reason"}
        if unknown:
            raise InvalidInput(f"unknown members in an expected flip: {', '.join(sorted(unknown))}")
        values = {k: raw.get(k, "*") for k in ("direction", "tenant", "service", "action", "reason")}
        if not all(isinstance(v, str) and 0 < len(v) <= 256 for v in values.values()):
            raise InvalidInput("expected flip members must be non-empty strings")
        if values["direction"] not in (*DIRECTIONS, "*"):
            raise InvalidInput(f"direction must be {ALLOW_TO_DENY!r}, {DENY_TO_ALLOW!r} or '*'")
        return cls(**values)

    def matches(self, key: GroupKey) -> bool:
        return all(fnmatch.fnmatchcase(value, pattern) for value, pattern in (
            (key.direction, self.direction), (key.tenant, self.tenant), (key.service, self.service),
            (key.action, self.action), (key.reason, self.reason)))

    def to_wire(self) -> dict[str, str]:
        return {"direction": self.direction, "tenant": self.tenant, "service": self.service, "action": self.action,
                "reason": self.reason}


def parse_expectations(raw: Any) -> tuple[ExpectedFlip, ...]:
    """``[{...}, ...]`` or ``{"expected_flips": [...]}`` (an ``--expect`` file, or the manifest's metadata)."""
    if isinstance(raw, Mapping):
        raw = raw.get("expected_flips", [])
    if not isinstance(raw, list) or len(raw) > MAX_EXPECTATIONS:
        raise InvalidInput(f"expected_flips must be a list of at most {MAX_EXPECTATIONS} objects")
    return tuple(ExpectedFlip.from_wire(item) for item in raw)


def manifest_expectations(bundle: Bundle) -> tuple[ExpectedFlip, ...]:
    return parse_expectations(bundle.manifest.metadata.get("expected_flips") or [])


# --------------------------------------------------------------------------- policies


def prepare_revision(bundle: Bundle, decision: str | None = None) -> PolicyRevision:
    """Compile ``bundle`` as a sidecar would (``tg.related`` registered, entrypoint checked)."""
    meta = bundle.manifest.metadata.get("decision")
    entrypoint = decision or (meta if isinstance(meta, str) and meta else DEFAULT_DECISION_ENTRYPOINT)
    policy = RegorusEngine().prepare(bundle.modules, bundle.data, extensions=RELATED_EXTENSION,
                                     entrypoints=(entrypoint,))
    return PolicyRevision(revision=bundle.revision, policy=policy, entrypoint=entrypoint,
                          schema=schema_engine(bundle.schema))


def load_bundle(path: str | Path, verifier: Verifier | None = None) -> Bundle:
    """A bundle directory (built unsigned in memory) or an archive (verified when ``verifier``).

    A directory gets the revision ``bundle build DIR`` would give it (``content_revision``), so a
    report tells two versions of one source apart; ``candidate-<12 hex>`` when its ``.manifest``
    names no revision.
    """
    path = Path(path)
    if path.is_dir():
        archive = build_bundle(path, content_revision(path, base=_dir_revision(path)), serial=0)
        return verify_bundle(archive, None, require_signature=False)
    return verify_bundle(path, verifier, require_signature=verifier is not None)


def _dir_revision(path: Path) -> str:
    import json

    try:
        revision = json.loads((path / ".manifest").read_text()).get("revision")
    except (OSError, ValueError, AttributeError):
        revision = None
    return revision if isinstance(revision, str) and revision else "candidate"


# --------------------------------------------------------------------------- relations during a replay


class RecordedRelations:
    """``tg.related`` from a recorded input's ``relations`` (the subject's own, all it holds).

    Also the tuple reads a schema walks (``RelationReads``): the recorded relations as the
    subject's own tuples, so a revision with a schema answers ``tg.related`` over them (an
    owner recorded is a member where the schema says so). Whatever the record does not hold
    (a folder above the project, other subjects) is unknown to a replay and reads as absent."""

    __slots__ = ("_held", "_reads", "_subject", "seq")

    def __init__(self, subject: str, held: Mapping[str, Any], seq: int) -> None:
        self._subject, self._held, self.seq = subject, held, seq
        self._reads: MemoryReads | None = None

    def check(self, object: str, relation: str, subject: str) -> bool:
        if subject != self._subject:
            return False  # not recorded: a replay cannot know it, and never guesses "yes"
        relations = self._held.get(object)
        return isinstance(relations, list) and relation in relations

    def relations_of(self, subject: str) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self._held.items()} if subject == self._subject else {}

    def _tuples(self) -> MemoryReads:
        if self._reads is None:
            self._reads = MemoryReads((obj, relation, self._subject, None)
                                      for obj, relations in self._held.items() if isinstance(relations, list)
                                      for relation in relations if isinstance(relation, str))
        return self._reads

    def subjects(self, object: str, relation: str) -> Iterator[Fact]:
        return self._tuples().subjects(object, relation)

    def find(self, object: str, relation: str, subject: str) -> Fact | None:
        return self._tuples().find(object, relation, subject)

    def usersets(self, object: str, relation: str) -> Iterator[Fact]:
        return self._tuples().usersets(object, relation)

    def objects(self, object_type: str, relation: str, subject: str) -> Iterator[Fact]:
        return self._tuples().objects(object_type, relation, subject)


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True, slots=True, order=True)
class GroupKey:
    direction: str
    tenant: str
    service: str
    action: str
    reason: str


@dataclass(slots=True)
class FlipGroup:
    key: GroupKey
    declared: bool
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        return {"direction": self.key.direction, "tenant": self.key.tenant, "service": self.key.service,
                "action": self.key.action, "reason": self.key.reason, "declared": self.declared,
                "count": self.count, "examples": self.examples}


@dataclass(slots=True)
class ImpactReport:
    """What a replay found; ``undeclared`` is what a gate fails on."""

    candidate: str
    baseline: str  # a revision, or "recorded"
    replayed: int = 0
    agreed: int = 0
    reasons_changed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    reconstructed: int = 0
    relations_missing: int = 0  # recorded inputs without relations, replayed with none (no --relations)
    flips: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DIRECTIONS, 0))
    declared: int = 0
    undeclared: int = 0
    groups: dict[GroupKey, FlipGroup] = field(default_factory=dict)
    groups_dropped: int = 0  # flips beyond max_groups distinct groups (still counted above)
    relations_seq: int | None = None
    expected: tuple[ExpectedFlip, ...] = ()

    @property
    def flipped(self) -> int:
        return sum(self.flips.values())

    def ok(self, max_undeclared: int = 0) -> bool:
        return self.undeclared <= max_undeclared

    def to_wire(self, *, max_groups: int | None = None) -> dict[str, Any]:
        groups = sorted(self.groups.values(), key=lambda g: (g.declared, -g.count, g.key))
        shown = groups if max_groups is None else groups[:max_groups]
        return {"candidate": self.candidate, "baseline": self.baseline, "replayed": self.replayed,
                "agreed": self.agreed, "reasons_changed": self.reasons_changed, "skipped": dict(self.skipped),
                "reconstructed": self.reconstructed, "relations_missing": self.relations_missing,
                "relations_seq": self.relations_seq,
                "flips": {**self.flips, "total": self.flipped}, "declared": self.declared,
                "undeclared": self.undeclared, "groups": [g.to_wire() for g in shown],
                "groups_not_shown": len(groups) - len(shown) + self.groups_dropped,
                "expected": [e.to_wire() for e in self.expected]}

    def render(self) -> str:
        """Plain text for a terminal or a CI log."""
        lines = [f"impact of {self.candidate} against {self.baseline}: {self.replayed} decisions replayed, "
                 f"{self.flipped} flipped ({self.flips[ALLOW_TO_DENY]} allow->deny, "
                 f"{self.flips[DENY_TO_ALLOW]} deny->allow), {self.undeclared} undeclared"]
        if self.skipped:
            lines.append("skipped: " + ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items())))
        if self.reconstructed:
            lines.append(f"{self.reconstructed} inputs rebuilt from the record (no recorded input: "
                         "no roles or properties; relations from --relations)")
        if self.relations_missing:
            lines.append(f"{self.relations_missing} records hold no relations (a decision-log record keeps its input "
                         "without them) and were replayed with none: a policy that reads relations flips them. "
                         "Give --relations (`tenantguard relation list --tenant T --limit 1000 > relations.json`, "
                         "or a plane snapshot), or --baseline to compare two bundles on the same inputs")
        for group in sorted(self.groups.values(), key=lambda g: (g.declared, -g.count, g.key)):
            k = group.key
            tag = "expected  " if group.declared else "UNDECLARED"
            lines.append(f"  {tag} {k.direction:<11} {group.count:>6}  tenant={k.tenant} service={k.service} "
                         f"action={k.action} reason={k.reason}")
            for example in group.examples:
                lines.append(f"             e.g. {example['subject']} on {example['resource']}"
                             + (f" (decision {example['decision_id']})" if example.get("decision_id") else ""))
        if self.groups_dropped:
            lines.append(f"  ... {self.groups_dropped} flips in groups beyond the limit")
        return "\n".join(lines)


# --------------------------------------------------------------------------- the replay


class ImpactAnalyzer:
    """Feed records with :meth:`add`; read :attr:`report`. One thread (the engine wants that)."""

    def __init__(self, candidate: PolicyRevision, *, baseline: PolicyRevision | None = None,
                 relations: RelationIndex | None = None, expected: Iterable[ExpectedFlip] = (),
                 max_groups: int = DEFAULT_MAX_GROUPS, max_examples: int = DEFAULT_MAX_EXAMPLES) -> None:
        self.candidate = candidate
        self.baseline = baseline
        self.relations = relations
        self.expected = tuple(expected)
        self.max_groups = max_groups
        self.max_examples = max_examples
        self.report = ImpactReport(candidate.revision, baseline.revision if baseline else "recorded",
                                   relations_seq=relations.applied_seq if relations is not None else None,
                                   expected=self.expected)

    def add_all(self, records: Iterable[ReplayRecord]) -> ImpactReport:
        for record in records:
            self.add(record)
        return self.report

    def add(self, record: ReplayRecord) -> None:
        report = self.report
        if self.baseline is None and record.reasons and not record.allow \
                and (set(record.reasons) & NOT_POLICY_REASONS
                     or (record.input is None and "tenant_mismatch" in record.reasons)):
            report.skipped["not_policy"] = report.skipped.get("not_policy", 0) + 1
            return
        input_doc, rebuilt = record.policy_input(self.relations)
        report.reconstructed += rebuilt
        report.relations_missing += (record.input is not None and "relations" not in record.input
                                     and self.relations is None)
        view = self._view(record, input_doc)
        reads = view if self.relations is not None else None
        after = _verdict(self.candidate, view, input_doc, record.tenant, reads)
        if self.baseline is not None:
            before = _verdict(self.baseline, view, input_doc, record.tenant, reads)
        else:
            high_risk_refused = not record.allow and bool(record.reasons) \
                and set(record.reasons) <= HIGH_RISK_REASONS
            before = Verdict(record.allow or high_risk_refused, () if high_risk_refused else record.reasons)
        report.replayed += 1
        if before.allow == after.allow:
            report.agreed += 1
            report.reasons_changed += before.reasons != after.reasons
            return
        direction = ALLOW_TO_DENY if before.allow else DENY_TO_ALLOW
        reason = ",".join(after.reasons if before.allow else before.reasons) or "-"
        key = GroupKey(direction, record.tenant, record.service, record.action, reason)
        report.flips[direction] += 1
        group = report.groups.get(key)
        if group is None:
            declared = any(e.matches(key) for e in self.expected)
            if len(report.groups) >= self.max_groups:
                report.groups_dropped += 1
                report.declared += declared
                report.undeclared += not declared
                return
            group = report.groups[key] = FlipGroup(key, declared)
        group.count += 1
        if group.declared:
            report.declared += 1
        else:
            report.undeclared += 1
        if len(group.examples) < self.max_examples:
            group.examples.append({"decision_id": record.decision_id, "subject": record.subject,
                                   "resource": record.resource, "before": _brief(before), "after": _brief(after),
                                   "bundle_revision": record.bundle_revision,
                                   "relations_seq": record.relations_seq})

    def _view(self, record: ReplayRecord, input_doc: Mapping[str, Any]) -> Any:
        if self.relations is not None:
            return self.relations.tenant(record.tenant)
        held = input_doc.get("relations")
        return RecordedRelations(record.subject, held if isinstance(held, Mapping) else {}, record.relations_seq)


def _verdict(revision: PolicyRevision, view: Any, input_doc: Mapping[str, Any], tenant: str,
             reads: Any = None) -> Verdict:
    """As the core does it: an evaluation error is a deny with the error's code. With the
    tenant's tuples (``reads``), a revision with a schema answers ``input.permissions`` itself,
    so a changed permission's flips show; without them the recorded permissions are replayed."""
    try:
        if revision.asks_permissions and reads is not None:
            input_doc = with_permissions_of(revision.schema, reads, input_doc)
        return evaluate_input(revision, view, input_doc, tenant)
    except TenantGuardError as exc:
        return Verdict(False, (exc.code,))
    except Exception:
        log.exception("replay: evaluation failed")
        return Verdict(False, ("internal_error",))


def _brief(verdict: Verdict) -> dict[str, Any]:
    return {"allow": verdict.allow, "reasons": list(verdict.reasons)}


def analyze(candidate: PolicyRevision, records: Iterable[ReplayRecord], **options: Any) -> ImpactReport:
    """One call: replay ``records`` against ``candidate`` (see :class:`ImpactAnalyzer`)."""
    return ImpactAnalyzer(candidate, **options).add_all(records)
