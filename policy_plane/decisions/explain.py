"""Explain a decision: what the built-in checks saw, which relations and rules were involved,
and a re-evaluation against the decision's own bundle revision and relations state.

Honest by construction, each part says where it comes from:

* built-in checks: the record's tenant and reasons (what the sidecar decided), and the
  plane's revocations *now* (kill switch, token jti/kid) - the plane does not keep the
  revocation state as of an earlier moment;
* the bundle: the scope's active revision, else the revision's object in ``tg-bundles``
  (verified again); ``revision_available: false`` when neither holds it;
* relations: the plane's index when it is at the record's sequence, else one rebuilt from
  the relations stream (from sequence 1, or from the snapshot when it is not newer than
  the record) up to that sequence; ``relations_available: false`` once the batches have
  aged out (the stream keeps them ``--relations-max-age``);
* the re-evaluation runs :func:`tenantguard.decision.core.evaluate_input`, the code a sidecar
  runs, on the recorded input (``input.token`` holds jti/iss/kid/scope only; masked
  members are gone), with ``tg.related`` and ``input.relations`` traced;
* rules: regorus reports line coverage, not a proof tree; the rules named are those
  whose source mentions a reason and whose lines were evaluated.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from tenantguard.bundle import Bundle, verify_bundle
from tenantguard.decision.core import (
    DEFAULT_DECISION_ENTRYPOINT,
    RELATED_EXTENSION,
    PolicyRevision,
    bound_relations,
    evaluate_input,
)
from tenantguard.decision.permissions import condition_context, schema_engine
from tenantguard.errors import InvalidInput, TenantGuardError
from tenantguard.feed import topology as topo
from tenantguard.feed.events import verify_batch
from tenantguard.policy.engine import RegorusEngine, new_regorus_engine
from tenantguard.relations import RelationIndex
from tenantguard.relations.snapshot import index_from_snapshot_bytes

from ..errors import NotFound
from ..publisher import Publisher
from ..state import PlaneState
from .store import DecisionStore

log = logging.getLogger(__name__)

MAX_REPLAY_BATCHES: Final = 200_000
CACHE: Final = 4
BUILTIN_REASONS: Final = frozenset({
    "tenant_revoked", "subject_mismatch", "tenant_unknown", "no_active_bundle", "tenant_not_served",
    "relations_stale", "high_risk_unconfirmed", "high_risk_denied", "internal_error"})
_TOKEN_CLAIM_REF: Final = re.compile(r"input\.token\.([A-Za-z_][A-Za-z0-9_]*)")
RECORDED_TOKEN_MEMBERS: Final = frozenset({"jti", "iss", "kid", "scope"})


class TracedRelations:
    """A tenant's relations view that notes what the policy asked of it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.seq = inner.seq
        self.related: list[dict[str, Any]] = []
        self.relations_of_subject: dict[str, list[str]] | None = None

    def relations_of(self, subject: str) -> Mapping[str, list[str]]:
        found = self._inner.relations_of(subject)
        self.relations_of_subject = {k: list(v) for k, v in found.items()}
        return found

    def check(self, object: str, relation: str, subject: str) -> bool:
        answer = bool(self._inner.check(object, relation, subject))
        self.note_related(object, relation, subject, answer)
        return answer

    def note_related(self, object: str, relation: str, subject: str, answer: bool) -> None:
        """Keep one ``tg.related`` answer (the schema's answers are noted here too)."""
        if len(self.related) < 200:
            self.related.append({"object": object, "relation": relation, "subject": subject, "answer": answer})

    # The tuple reads a schema walks (tenantguard.relations.reads.RelationReads), untraced.
    def subjects(self, object: str, relation: str) -> Any:
        return self._inner.subjects(object, relation)

    def find(self, object: str, relation: str, subject: str) -> Any:
        return self._inner.find(object, relation, subject)

    def usersets(self, object: str, relation: str) -> Any:
        return self._inner.usersets(object, relation)

    def objects(self, object_type: str, relation: str, subject: str) -> Any:
        return self._inner.objects(object_type, relation, subject)


@dataclass(slots=True)
class _Revision:
    bundle: Bundle
    revision: PolicyRevision
    source: str


@dataclass
class Explainer:
    state: PlaneState
    publisher: Publisher
    store: DecisionStore
    _bundles: OrderedDict[tuple[str, str], _Revision] = field(default_factory=OrderedDict)
    _indexes: OrderedDict[tuple[str, int], RelationIndex] = field(default_factory=OrderedDict)
    # One rebuild at a time per replica: each holds a whole index and replays up to
    # MAX_REPLAY_BATCHES signed batches; the next request may then find it in the cache.
    _rebuilding: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def explain_id(self, decision_id: str, *, tenant: str | None = None,
                         service: str | None = None) -> dict[str, Any]:
        record = await self.store.find(decision_id, tenant=tenant, service=service)
        if record is None:
            raise NotFound(f"no decision record {decision_id!r:.140} within the window and the scanned stream "
                           "(give --tenant/--service to narrow the scan)", decision_id=decision_id)
        return await self.explain_record(record)

    async def explain_record(self, record: dict[str, Any]) -> dict[str, Any]:
        """The explanation of one (validated) record; see the module docstring."""
        out: dict[str, Any] = {"record": record, "builtin_checks": self._builtins(record)}
        service, revision = record["service"], record.get("bundle_revision")
        loaded = await self._revision(service, revision, record.get("path")) if revision else None
        out["bundle"] = {"revision": revision, "revision_available": loaded is not None,
                         "source": loaded.source if loaded else None}
        cell = self.state.index.cell(str(record.get("tenant") or ""))  # a record's seq is its tenant's cell's
        index, relations_note = await self._relations_at(int(record.get("relations_seq") or 0), cell)
        out["relations_state"] = {"seq": record.get("relations_seq"), "relations_available": index is not None,
                                  "source": relations_note}
        limits = []
        if record.get("input") is None:
            limits.append("the record has no input (too large, or an old record): nothing to re-evaluate")
        if record.get("erased"):
            limits.append(f"masked or redacted input members are missing: {', '.join(record['erased'][:20])}")
        if loaded is not None:
            unrecorded = sorted({m for src in loaded.bundle.modules.values() for m in _TOKEN_CLAIM_REF.findall(src)}
                                - RECORDED_TOKEN_MEMBERS)
            if unrecorded and record.get("token") is not None:
                limits.append("the policy reads token claims a record does not keep (replayed as undefined): "
                              + ", ".join(f"input.token.{m}" for m in unrecorded))
        out["limits"] = limits
        if loaded is None or index is None or record.get("input") is None or record.get("tenant") is None:
            out["reevaluation"] = None
            if record.get("tenant") is None:
                limits.append("the decision was denied before a tenant was known; the policy never ran")
            return out
        out["reevaluation"] = await asyncio.to_thread(self._replay, loaded, index, record)
        return out

    def _builtins(self, record: dict[str, Any]) -> dict[str, Any]:
        revoked = self.state.revocation_list
        tenant = record.get("tenant")
        token = record.get("token") or {}
        builtin = [r for r in record["reasons"] if r in BUILTIN_REASONS]
        return {
            "tenant": {"value": tenant, "from": "token" if token else "the caller (PEP key, --tenant or local PEP)"},
            "decided_by_builtin": builtin or None,
            "kill_switch": {"at_decision": "tenant_revoked" in record["reasons"],
                            "now": tenant is not None and tenant in revoked.tenants},
            "revocation": {"jti_revoked_now": bool(token.get("jti")) and token.get("jti") in revoked.jtis,
                           "kid_revoked_now": bool(token.get("kid")) and token.get("kid") in revoked.kids,
                           "ancestor_revoked_now": any(j in revoked.jtis for j in token.get("chain") or ())
                           or any(k in revoked.kids for k in token.get("chain_kids") or ()),
                           "token": token or None},
            "tenant_match": {"act_as": record.get("act_as", False),
                             "denied_tenant_mismatch": "tenant_mismatch" in record["reasons"]},
        }

    # ------------------------------------------------------------------ bundle revision

    async def _revision(self, service: str, revision: str, path: str | None) -> _Revision | None:
        for scope in (service, topo.BUNDLE_SCOPE_ALL):
            key = (scope, revision)
            if key in self._bundles:
                self._bundles.move_to_end(key)
                return self._bundles[key]
            active = self.state.stores.get(scope)
            archive: bytes | None = None
            source = ""
            if active is not None and active.active is not None and active.active.bundle.revision == revision:
                archive, source = active.active.archive, f"active bundle of scope {scope}"
            else:
                try:
                    archive = await self.publisher.get_object(topo.BUCKET_BUNDLES, f"bundles/{scope}/{revision}",
                                                              max_bytes=self.state.max_bundle_bytes)
                    source = f"object bundles/{scope}/{revision} in {topo.BUCKET_BUNDLES}"
                except TenantGuardError:
                    continue
            try:
                loaded = await asyncio.to_thread(self._prepare, archive, path)
            except TenantGuardError as exc:
                log.warning("bundle %s of scope %s cannot be replayed: %s", revision, scope, exc)
                continue
            self._bundles[key] = _Revision(loaded[0], loaded[1], source)
            while len(self._bundles) > CACHE:
                self._bundles.popitem(last=False)
            return self._bundles[key]
        return None

    def _prepare(self, archive: bytes, path: str | None) -> tuple[Bundle, PolicyRevision]:
        bundle = verify_bundle(archive, self.state.bundle_verifier, limits=self.state.bundle_limits)
        meta = bundle.manifest.metadata.get("decision")
        entrypoint = path or (meta if isinstance(meta, str) else None) or DEFAULT_DECISION_ENTRYPOINT
        policy = RegorusEngine().prepare(bundle.modules, bundle.data, extensions=RELATED_EXTENSION)
        return bundle, PolicyRevision(revision=bundle.revision, policy=policy, entrypoint=entrypoint,
        schema=schema_engine(bundle.schema))

    # ------------------------------------------------------------------ relations state

    async def _relations_at(self, seq: int, cell: str = topo.DEFAULT_CELL) -> tuple[RelationIndex | None, str]:
        current = self.state.index.index(cell)
        if current.applied_seq == seq:
            return current, "the plane's index (at that sequence now)"
        if (cell, seq) in self._indexes:
            self._indexes.move_to_end((cell, seq))
            return self._indexes[(cell, seq)], "rebuilt from the relations stream"
        if seq > current.applied_seq:
            return None, f"this replica is at sequence {current.applied_seq}, behind the record"
        async with self._rebuilding:
            if (cell, seq) in self._indexes:  # rebuilt by the request this one waited for
                return self._indexes[(cell, seq)], "rebuilt from the relations stream"
            try:
                index, note = await self._rebuild(seq, cell)
            except TenantGuardError as exc:
                return None, f"cannot rebuild sequence {seq}: {exc.message}"
            if index is None:
                return None, note
            self._indexes[(cell, seq)] = index
            while len(self._indexes) > CACHE:
                self._indexes.popitem(last=False)
            return index, note

    async def _rebuild(self, seq: int, cell: str) -> tuple[RelationIndex | None, str]:
        index = RelationIndex()
        snapshot = self.state.snapshots.get(cell)
        subject = topo.relations_subject(cell)
        note = "rebuilt from the relations stream from sequence 1"
        first, last = await self.publisher.stream_bounds(topo.STREAM_RELATIONS)
        msgs = await self.publisher.scan(topo.STREAM_RELATIONS, subject, start_seq=first,
                                         end_seq=last, max_msgs=1) if seq > 0 else []
        oldest = verify_batch(msgs[0].data, self.state.event_trust, cell=cell).seq if msgs else 1
        if seq > 0 and oldest > 1:
            if snapshot is None or snapshot.seq > seq or snapshot.seq + 1 < oldest:
                return None, (f"batches before sequence {oldest} have aged out of the relations stream and no "
                              f"snapshot at or before {seq} exists")
            data = await self.publisher.get_object(topo.BUCKET_SNAPSHOTS, topo.snapshot_object(snapshot.seq, cell),
                                                   max_bytes=snapshot.size)
            snapshot.check(data)
            index = await asyncio.to_thread(index_from_snapshot_bytes, data)
            note = f"rebuilt from snapshot {snapshot.seq} and the relations stream"
        start, applied = first, 0
        while index.applied_seq < seq and start <= last and applied < MAX_REPLAY_BATCHES:
            msgs = await self.publisher.scan(topo.STREAM_RELATIONS, subject, start_seq=start,
                                             end_seq=last, max_msgs=1000)
            if not msgs:
                break
            # Off the event loop: a signature check per batch and up to 1,000 changes applied each
            # (200,000 batches replayed on the loop stalled the replica for minutes).
            applied += await asyncio.to_thread(self._replay_block, index, msgs, seq, cell)
            start = msgs[-1].stream_seq + 1
        if index.applied_seq != seq:
            return None, f"the relations stream does not lead to sequence {seq} (reached {index.applied_seq})"
        return index, note

    def _replay_block(self, index: RelationIndex, msgs: list[Any], seq: int, cell: str) -> int:
        """Verify and apply the batches of ``msgs`` up to ``seq`` to ``index`` (this rebuild's own);
        how many were applied."""
        applied = 0
        for msg in msgs:
            batch = verify_batch(msg.data, self.state.event_trust, cell=cell)
            if index.applied_seq < batch.seq <= seq:
                index.apply(batch)
                applied += 1
        return applied

    # ------------------------------------------------------------------ replay

    def _replay(self, loaded: _Revision, index: RelationIndex, record: dict[str, Any]) -> dict[str, Any]:
        tenant = str(record["tenant"])
        subject = str(record.get("subject") or "")
        view = TracedRelations(index.tenant(tenant))
        input_doc = copy.deepcopy(record["input"])
        resource = input_doc.get("resource")
        properties = resource.get("properties") if isinstance(resource, dict) else None
        if not isinstance(resource, dict) or not isinstance(properties, dict | None):
            # A record is sidecar output, checked for types and sizes but not for this shape:
            # one naming no resource object cannot be replayed (and must not fail the request).
            return {"error": {"error": "input_malformed", "message": "the recorded input has no resource object "
                                                                    "(with properties an object, if any)"},
                    "same_result": False}
        resource["properties"] = {"tenant_id": tenant, **(properties or {})}
        input_doc["relations"] = view.relations_of(subject)
        try:
            verdict = evaluate_input(loaded.revision, view, input_doc, tenant)
        except TenantGuardError as exc:
            return {"error": exc.to_dict(), "same_result": False}
        builtin = [r for r in record["reasons"] if r in BUILTIN_REASONS]
        policy_reasons = list(verdict.reasons)
        same = verdict.allow == record["allow"] and policy_reasons == sorted(record["reasons"])
        if verdict.high_risk and verdict.allow:
            note = "the policy marks this action high-risk: the sidecar confirmed it with the plane, or denied"
        elif builtin:
            note = "a built-in check decided before the policy; the policy's answer is shown for comparison"
        else:
            note = None
        return {
            "allow": verdict.allow, "reasons": policy_reasons, "high_risk": verdict.high_risk,
            "act_as": verdict.act_as, "same_result": same, "note": note,
            "relations_consulted": {"input.relations": view.relations_of_subject, "tg.related": view.related},
            "rules": _rules(loaded, input_doc, view, policy_reasons),
        }


def _rules(loaded: _Revision, input_doc: dict[str, Any], view: TracedRelations,
           reasons: list[str]) -> dict[str, Any]:
    """Line coverage of one evaluation, and the evaluated lines that name each reason."""
    try:
        engine = new_regorus_engine(loaded.bundle.modules, loaded.bundle.data,
                                    extensions=RELATED_EXTENSION, coverage=True)
        engine.clear_coverage_data()
        engine.set_input(input_doc)
        with bound_relations(view, None, loaded.revision.schema, condition_context(input_doc)):
            engine.eval_rule(loaded.revision.entrypoint)
        report = json.loads(engine.get_coverage_report_as_json())
    except (RuntimeError, TenantGuardError, InvalidInput, ValueError) as exc:
        return {"available": False, "why": str(exc)[:300]}
    covered = {entry["path"]: set(entry.get("covered", ())) for entry in report.get("files", ())}
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for reason in reasons:
        needle = f'"{reason}"'
        for path, source in loaded.bundle.modules.items():
            for number, line in enumerate(source.splitlines(), 1):
                if needle in line and number in covered.get(path, ()):
                    by_reason.setdefault(reason, []).append({"file": path, "line": number, "text": line.strip()})
    return {"available": True, "entrypoint": loaded.revision.entrypoint, "reasons": by_reason,
            "covered_lines": {p: sorted(lines) for p, lines in sorted(covered.items()) if lines},
            "how": "regorus line coverage of this evaluation; a rule is named when a line that mentions "
                   "the reason was evaluated (coverage, not a proof)"}
