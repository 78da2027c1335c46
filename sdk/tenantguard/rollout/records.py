"""Recorded decisions, the input of impact analysis: one JSON object per line (JSONL).

The format (``"v": 1``) is a superset of the decision-log record
(:meth:`tenantguard.decision.core.DecisionRecord.to_wire`), so a decision-log export can be
fed in as it is; :func:`from_decision_log` is the adapter, and :func:`read_records`
applies it to every line. Members::

    v                1 (absent in a decision-log export: read as 1)
    decision_id      optional, shown in examples
    time             optional, epoch seconds
    tenant           the subject's tenant                         required
    service          the service whose sidecar decided            required
    action           the action name (a string, or {"name": ...}) required
    subject          "type:id"                                    required without input
    resource         "type:id"                                    required without input
    allow            the recorded result                          required
    reasons          the recorded reasons                         default []
    high_risk        whether the policy marked it high-risk       default false
    bundle_revision  the revision that decided                    optional
    relations_seq    the relations state it was decided at        default 0
    actor_chain      nearest first                                default []
    input            the policy input exactly as the policy saw it (decision-input.md):
                     subject, action, resource, context, token (the verified CLAIMS, never
                     the raw token), actor_chain, relations; the input facts
                     (actor_services, scope_limits) are recomputed.  optional, see below

Without ``input`` (today's decision log holds none), the input is rebuilt from
``subject``, ``action``, ``resource`` and ``tenant``: no roles, no scope, no resource
properties but the tenant, no context but the service, relations from a relations file
(``--relations``) or none. A replay of such a record is faithful only for policies that
decide on those members; the report counts rebuilt inputs (``reconstructed``).
Everything is bounded: line size, record count, I-JSON (``tenantguard.util.jsonlimits``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tenantguard.decision.core import input_facts
from tenantguard.errors import InvalidInput, JsonInvalid, TenantGuardError
from tenantguard.errors import ReplayRecordInvalid as RecordInvalid
from tenantguard.relations import RelationIndex, Relationship, index_from_snapshot_bytes
from tenantguard.util.jsonlimits import loads

FORMAT_VERSION: Final = 1
# 2: a decision-log record (tenantguard.decisionlog): the policy input without relations
# (replayed from --relations or the relations state) and the token reduced to jti/iss/kid.
READABLE_VERSIONS: Final = (FORMAT_VERSION, 2)
MAX_LINE_BYTES: Final = 256 * 1024
MAX_RECORDS: Final = 1_000_000
MAX_RELATIONS_FILE: Final = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReplayRecord:
    """One recorded decision, enough to ask a candidate policy the same question."""

    tenant: str
    service: str
    action: str
    subject: str
    resource: str
    allow: bool
    reasons: tuple[str, ...] = ()
    high_risk: bool = False
    bundle_revision: str | None = None
    relations_seq: int = 0
    decision_id: str | None = None
    time: float | None = None
    actor_chain: tuple[str, ...] = ()
    input: Mapping[str, Any] | None = None

    @classmethod
    def from_wire(cls, raw: Any) -> ReplayRecord:
        """Parse our format or a decision-log export record (the same members, no ``input``)."""
        if not isinstance(raw, Mapping):
            raise RecordInvalid("a record must be a JSON object")
        version = raw.get("v", FORMAT_VERSION)
        if version not in READABLE_VERSIONS:
            raise RecordInvalid(f"record format v{version!r:.20} is not supported "
                                f"(v{', v'.join(map(str, READABLE_VERSIONS))})")
        policy_input = raw.get("input")
        if policy_input is not None and not _valid_input(policy_input):
            raise RecordInvalid("input must be an object with subject, action and resource objects")
        action = raw.get("action")
        if isinstance(action, Mapping):
            action = action.get("name")
        if action is None and policy_input is not None:
            action = policy_input["action"].get("name")
        subject = raw.get("subject") or (_typed_id(policy_input["subject"]) if policy_input else None)
        resource = raw.get("resource") or (_typed_id(policy_input["resource"]) if policy_input else None)
        tenant = raw.get("tenant")
        if tenant is None and policy_input is not None:
            tenant = (policy_input["subject"].get("properties") or {}).get("tenant_id")
        service = raw.get("service")
        if service is None and policy_input is not None:
            service = (policy_input.get("context") or {}).get("service")
        for name, value in (("tenant", tenant), ("service", service), ("action", action), ("subject", subject),
                            ("resource", resource)):
            if not isinstance(value, str) or not value:
                raise RecordInvalid(f"{name} must be a non-empty string", field=name)
        allow = raw.get("allow")
        if not isinstance(allow, bool):
            raise RecordInvalid("allow must be a boolean", field="allow")
        reasons = raw.get("reasons") or []
        chain = raw.get("actor_chain") or []
        seq = raw.get("relations_seq") or 0
        revision = raw.get("bundle_revision")
        if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
            raise RecordInvalid("reasons must be a list of strings", field="reasons")
        if not isinstance(chain, list) or not all(isinstance(a, str) for a in chain):
            raise RecordInvalid("actor_chain must be a list of strings", field="actor_chain")
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise RecordInvalid("relations_seq must be a non-negative integer", field="relations_seq")
        if revision is not None and not isinstance(revision, str):
            raise RecordInvalid("bundle_revision must be a string", field="bundle_revision")
        when = raw.get("time")
        decision_id = raw.get("decision_id")
        return cls(tenant=tenant, service=service, action=action, subject=subject, resource=resource,  # type: ignore[arg-type]
                   allow=allow, reasons=tuple(reasons), high_risk=raw.get("high_risk") is True,
                   bundle_revision=revision, relations_seq=seq,
                   decision_id=decision_id if isinstance(decision_id, str) else None,
                   time=float(when) if isinstance(when, int | float) and not isinstance(when, bool) else None,
                   actor_chain=tuple(chain), input=policy_input)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "v": FORMAT_VERSION, "decision_id": self.decision_id, "time": self.time, "tenant": self.tenant,
            "service": self.service, "action": self.action, "subject": self.subject, "resource": self.resource,
            "allow": self.allow, "reasons": list(self.reasons), "high_risk": self.high_risk,
            "bundle_revision": self.bundle_revision, "relations_seq": self.relations_seq,
            "actor_chain": list(self.actor_chain)}
        if self.input is not None:
            wire["input"] = self.input
        return wire

    def policy_input(self, relations: RelationIndex | None) -> tuple[dict[str, Any], bool]:
        """The input to replay and whether it was rebuilt (no recorded ``input``).

        A recorded input is used as it is (its ``relations`` are what the policy saw);
        a rebuilt one takes the subject's relations from ``relations`` when given. Either
        way the input facts are computed afresh from the input's own members, as the
        decision core computes them (a record from before they existed has none, and a
        record edited by hand must not carry facts that contradict its members).
        """
        if self.input is not None:
            doc = dict(self.input)
            resource = dict(doc["resource"])
            resource["properties"] = {"tenant_id": self.tenant, **(resource.get("properties") or {})}
            doc["resource"] = resource
            if "relations" not in doc:  # a decision-log record: the relations are replayed, not recorded
                doc["relations"] = (relations.relations_of(self.tenant, self.subject)
                                    if relations is not None else {})
            doc.update(input_facts(doc))
            return doc, False
        subject_type, _, subject_id = self.subject.partition(":")
        resource_type, _, resource_id = self.resource.partition(":")
        doc = {
            "subject": {"type": subject_type, "id": subject_id, "properties": {"tenant_id": self.tenant}},
            "action": {"name": self.action},
            "resource": {"type": resource_type, "id": resource_id, "properties": {"tenant_id": self.tenant}},
            "context": {"service": self.service},
            "token": None,
            "actor_chain": list(self.actor_chain),
            "relations": relations.relations_of(self.tenant, self.subject) if relations is not None else {},
        }
        doc.update(input_facts(doc))
        return doc, True


def from_decision_log(record: Mapping[str, Any]) -> ReplayRecord:
    """Adapter for one decision-log record (``DecisionRecord.to_wire()`` or an export line).

    What the log keeps today (decision_id, time, service, tenant, subject, action,
    resource, allow, reasons, bundle_revision, relations_seq, actor_chain, act_as) maps
    member for member; an ``input`` member, when the log starts keeping one, is used as
    the recorded policy input. Unknown members are ignored.
    """
    return ReplayRecord.from_wire(record)


def read_records(lines: Iterable[bytes | str], *, limit: int = MAX_RECORDS,
                 max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[ReplayRecord]:
    """Parse JSONL, one record per non-blank line; stop after ``limit`` records.

    A bad line raises :class:`RecordInvalid` naming the line: a CI gate that silently
    skipped what it could not read would pass changes it never checked.
    """
    count = 0
    for number, line in enumerate(lines, start=1):
        data = line.encode() if isinstance(line, str) else line
        if not data.strip():
            continue
        if len(data) > max_line_bytes:
            raise RecordInvalid(f"line {number} is longer than {max_line_bytes} bytes", line=number)
        if count >= limit:
            return
        try:
            yield ReplayRecord.from_wire(loads(data))
        except JsonInvalid as exc:
            raise RecordInvalid(f"line {number}: {exc.message}", line=number) from None
        except RecordInvalid as exc:
            raise RecordInvalid(f"line {number}: {exc.message}", line=number, **exc.detail) from None
        count += 1


def read_records_file(path: str | Path, *, limit: int = MAX_RECORDS) -> list[ReplayRecord]:
    with Path(path).open("rb") as handle:
        return list(read_records(handle, limit=limit))


def write_records(records: Iterable[ReplayRecord]) -> str:
    return "".join(json.dumps(r.to_wire(), sort_keys=True, separators=(",", ":")) + "\n" for r in records)


def load_relations(path: str | Path) -> RelationIndex:
    """A relations state to replay at: a plane snapshot (``tg-snapshots`` object, its
    signature checked by whoever fetched it), or a tuples file
    ``{"seq": N, "relationships": ["acme/project:p1#member@user:alice", ...]}``."""
    path = Path(path)
    if path.stat().st_size > MAX_RELATIONS_FILE:
        raise RecordInvalid(f"relations file {path} exceeds {MAX_RELATIONS_FILE} bytes")
    data = path.read_bytes()
    if data.startswith(b'{"format":'):
        try:
            return index_from_snapshot_bytes(data)
        except TenantGuardError as exc:
            raise RecordInvalid(f"relations snapshot {path}: {exc.message}") from None
    try:
        doc = loads(data, max_bytes=MAX_RELATIONS_FILE)
    except JsonInvalid as exc:
        raise RecordInvalid(f"relations file {path}: {exc.message}") from None
    if isinstance(doc, dict) and isinstance(doc.get("relations"), list) and "consistency_token" in doc:
        doc = _listed_page(path, doc)
    if not isinstance(doc, dict) or not isinstance(doc.get("relationships"), list):
        raise RecordInvalid('a relations file is {"seq": N, "relationships": [...]}, the output of `tenantguard '
                            'relation list`, or a snapshot')
    seq = doc.get("seq", 0)
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise RecordInvalid("relations file 'seq' must be a non-negative integer")
    tuples = []
    for i, item in enumerate(doc["relationships"]):
        try:
            rel = Relationship.parse(item) if isinstance(item, str) else Relationship.from_wire(item)
        except (InvalidInput, TypeError, AttributeError) as exc:
            raise RecordInvalid(f"relations file entry {i}: {exc}") from None
        tuples.append((rel.tenant, rel.object, rel.relation, rel.subject, rel.meta))  # meta kept: never plain
    return RelationIndex.from_trusted(seq, tuples)


def _listed_page(path: Path, page: Mapping[str, Any]) -> dict[str, Any]:
    """``tenantguard relation list`` output as a tuples file, so an operator can replay a decision-log
    export at the plane's current relations without fetching a snapshot; refused when it is one page
    of several (replaying at part of a tenant's tuples would report flips that are not there)."""
    if page.get("next_cursor"):
        raise RecordInvalid(f"relations file {path} is one page of `tenantguard relation list` and more follow "
                            "(next_cursor): list with --limit 1000, or give a plane snapshot")
    return {"seq": page["consistency_token"], "relationships": page["relations"]}


def _valid_input(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(value.get(k), Mapping)
                                              for k in ("subject", "action", "resource"))


def _typed_id(doc: Mapping[str, Any]) -> str | None:
    kind, ident = doc.get("type"), doc.get("id")
    return f"{kind}:{ident}" if isinstance(kind, str) and isinstance(ident, str) else None
