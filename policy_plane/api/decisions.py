"""Decision records and explanations: reading needs the admin or the operator token.

``GET /v1/decisions`` pages through TG_DECISIONS (newest first, or ``order=asc`` for export
and tail) with an opaque cursor; ``GET /v1/decisions/{id}`` finds one record;
``GET /v1/decisions/{id}/explain`` and ``POST /v1/explain`` explain and re-evaluate.
Every answer is bounded: a page holds at most 1,000 records and one request scans at most
50,000 stream sequences beyond the in-memory window (then it returns a cursor).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from tenantguard.decisionlog import RecordRefused, to_opa_event, validate_record
from tenantguard.errors import InvalidInput

from ..config import SERVICE_RE
from ..decisions import Cursor, DecisionQuery
from ..decisions.store import MAX_INDEX
from ..errors import NotFound
from .auth import Principal, plane_of, require_operator

router = APIRouter(tags=["decisions"])

Who = Annotated[Principal, Depends(require_operator)]
TenantQ = Annotated[str | None, Query(max_length=128, description="Only this tenant's records")]
ServiceQ = Annotated[str | None, Query(max_length=63, description="Only this service's records")]
DecisionId = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]


def checked_service(service: str | None) -> str | None:
    if service is not None and SERVICE_RE.fullmatch(service) is None:
        raise InvalidInput(f"service must match {SERVICE_RE.pattern}", field="service")
    return service


@router.get("/v1/decisions")
async def decisions(
    request: Request,
    who: Who,
    tenant: TenantQ = None,
    service: ServiceQ = None,
    subject: Annotated[str | None, Query(max_length=512, description="type:id, e.g. user:alice")] = None,
    resource: Annotated[str | None, Query(max_length=1024, description="type:id")] = None,
    action: Annotated[str | None, Query(max_length=512)] = None,
    allow: Annotated[bool | None, Query(description="true: allowed only, false: denied only")] = None,
    reason: Annotated[str | None, Query(max_length=256, description="Records listing this reason")] = None,
    decision_id: Annotated[str | None, Query(max_length=128)] = None,
    jti: Annotated[str | None, Query(max_length=256, description="Decisions made for this token id")] = None,
    since: Annotated[float | None, Query(ge=0, description="Epoch seconds, inclusive")] = None,
    until: Annotated[float | None, Query(ge=0, description="Epoch seconds, inclusive")] = None,
    order: Annotated[Literal["desc", "asc"], Query(description="desc: newest first; asc: export, tail")] = "desc",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=512, description="next_cursor of the previous page")] = None,
    format: Annotated[Literal["tenantguard", "opa"], Query(description="opa: OPA decision-log events")] = "tenantguard",
) -> dict[str, Any]:
    """One page of decision records and the cursor to the next (``complete`` once nothing more is stored).

    A desc page also carries ``tail_cursor``: an asc cursor at the newest record this replica
    holds, from which ``order=asc`` pages return what arrives later (``tenantguard decisions tail``).
    """
    plane = plane_of(request)
    query = DecisionQuery(tenant=tenant, service=checked_service(service), subject=subject, resource=resource,
                          action=action, allow=allow, reason=reason, decision_id=decision_id, jti=jti, since=since,
                          until=until, limit=limit, order=order)
    page = await plane.decisions.query(query, Cursor.decode(cursor, query) if cursor else None)
    body = page.to_wire(to_opa_event if format == "opa" else None)
    if order == "desc" and cursor is None:
        ascending = dataclasses.replace(query, order="asc")
        body["tail_cursor"] = Cursor((plane.decisions.last_seq, MAX_INDEX), "asc", ascending.fingerprint()).encode()
    body["stats"] = plane.decisions.stats()
    return body


@router.get("/v1/decisions/{decision_id}")
async def decision(request: Request, who: Who, decision_id: DecisionId, tenant: TenantQ = None,
                   service: ServiceQ = None) -> dict[str, Any]:
    """One record by decision id (the window, then a bounded scan; name the tenant to narrow it)."""
    record = await plane_of(request).decisions.find(decision_id, tenant=tenant, service=checked_service(service))
    if record is None:
        raise NotFound(f"no decision record {decision_id}", decision_id=decision_id)
    return record


@router.get("/v1/decisions/{decision_id}/explain")
async def explain(request: Request, who: Who, decision_id: DecisionId, tenant: TenantQ = None,
                  service: ServiceQ = None) -> dict[str, Any]:
    """Built-in checks, relations consulted, rules, and a re-evaluation on the record's revision and
    relations state (each part says whether that state is still available)."""
    return await plane_of(request).explainer.explain_id(decision_id, tenant=tenant, service=checked_service(service))


@router.post("/v1/explain")
async def explain_adhoc(
    request: Request,
    who: Who,
    body: Annotated[dict[str, Any], Body(examples=[{
        "service": "billing", "tenant": "acme", "subject": "user:alice",
        "input": {"subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme", "roles": ["viewer"]}},
                  "action": {"name": "invoice:read"},
                  "resource": {"type": "invoice", "id": "i1", "properties": {"tenant_id": "acme"}},
                  "context": {"service": "billing"}, "token": None, "actor_chain": []}}])],
) -> dict[str, Any]:
    """An ad hoc question, as a record's input: evaluated on the service's active revision (or
    ``bundle_revision``) and the plane's relations (or ``relations_seq``), explained the same way."""
    plane = plane_of(request)
    service = body.get("service")
    if not isinstance(service, str) or checked_service(service) is None:
        raise InvalidInput("service is required", field="service")
    tenant, subject, doc = body.get("tenant"), body.get("subject"), body.get("input")
    if not isinstance(tenant, str) or not tenant or len(tenant) > 128:
        raise InvalidInput("tenant must be a non-empty string", field="tenant")
    if not isinstance(subject, str) or ":" not in subject or len(subject) > 512:
        raise InvalidInput("subject must be type:id", field="subject")
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), dict) for k in ("subject", "action", "resource")):
        raise InvalidInput("input must hold subject, action and resource objects", field="input")
    revision = body.get("bundle_revision")
    if revision is None:
        scope = plane.state.stores.get(service) or plane.state.stores.get("all")
        revision = scope.active.bundle.revision if scope is not None and scope.active is not None else None
    seq = body.get("relations_seq", plane.state.index.seq_of(tenant))  # the tenant's cell's sequence
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise InvalidInput("relations_seq must be a non-negative integer", field="relations_seq")
    context = doc.get("context", {})
    if not isinstance(context, dict):
        raise InvalidInput("input.context must be an object", field="input")
    doc = {**doc, "context": {**context, "service": service}}
    record = _adhoc_record({"v": 2, "decision_id": "adhoc", "time": 0.0, "service": service, "tenant": tenant,
                            "subject": subject, "allow": False, "reasons": [], "bundle_revision": revision,
                            "relations_seq": seq, "path": None, "act_as": False, "token": None, "input": doc,
                            "erased": []})
    out = await plane.explainer.explain_record(record)
    out["record"] = None  # nothing was decided: there is no original to compare with
    if out.get("reevaluation"):
        out["reevaluation"].pop("same_result", None)
    return out


def _adhoc_record(record: dict[str, Any]) -> dict[str, Any]:
    """An ad hoc question as a record that passed the checks every stored record passes
    (:func:`~tenantguard.decisionlog.validate_record`: types, sizes, token-shaped strings
    redacted), so the explainer only ever sees records of that shape; else 400 naming why."""
    try:
        return validate_record(record, service=record["service"], tenant=record["tenant"])
    except RecordRefused as exc:
        raise InvalidInput(f"not a question the plane can explain: {exc.message}", field="body") from None
