"""Revocation API: publish a revocation (admin), list what has been revoked."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict

from ..revocations import revocation_payload
from .auth import Principal, plane_of, require_admin, require_reader
from .writes import IdempotencyKey, mark_written

router = APIRouter(prefix="/v1/revocations", tags=["revocations"])


class RevocationIn(BaseModel):
    """One of: jti (+exp), subject (+tenant, sub), kid, tenant (kill switch), lift_tenant."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["jti", "subject", "kid", "tenant", "lift_tenant"]
    jti: str | None = None
    exp: int | None = None
    tenant: str | None = None
    sub: str | None = None
    kid: str | None = None
    issued_before: int | None = None


@router.post("")
async def revoke(body: RevocationIn, request: Request, response: Response,
                 who: Annotated[Principal, Depends(require_admin)],
                 idempotency_key: IdempotencyKey = None,
                 ) -> dict[str, Any]:
    """Publish one ``revocation`` event; every sidecar applies it. Returns its sequence.

    A revoked ``kid`` also leaves the token trust set (when it is in it), so the JWKS never
    lists a key every verifier refuses; the plane refuses to trust it again.
    """
    plane = plane_of(request)
    stated = body.model_dump(exclude_none=True)
    written = await plane.revoke(revocation_payload(stated), idempotency_key=idempotency_key, stated=stated)
    mark_written(response, written)
    payload = written.payload or {}
    seq = written.seq
    if not written.replayed:
        plane.audit.record(who.actor, "revocations.add", seq=seq, **payload)
        plane.metrics.admin_changes.labels("revocations.add").inc()
    answer: dict[str, Any] = {"seq": seq, "revocation": payload}
    if payload["kind"] == "kid" and payload["kid"] in plane.state.trust:
        kid = payload["kid"]
        trust_seq, _ = await plane.change_trust(lambda current: [k for k in current if k.kid != kid])
        plane.audit.record(who.actor, "trust.remove_key", kid=kid, trust_seq=trust_seq, reason="revoked")
        answer["trust_seq"] = trust_seq
    return answer


@router.get("")
async def list_revocations(
    request: Request,
    who: Annotated[Principal, Depends(require_reader)],
    after: Annotated[int, Query(ge=0, description="Only revocations with seq > after")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    plane = plane_of(request)
    records = [r for r in plane.state.revocations if r["seq"] > after][:limit]
    return {"revocations": records, "seq": plane.state.revocations_seq}
