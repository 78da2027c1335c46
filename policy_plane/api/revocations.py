"""Revocation API: publish a revocation (admin), list what has been revoked."""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal, get_args

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import Scope
from tenantguard.server.asgi import Reply, header

from ..revocations import revocation_payload
from ..runtime import Plane
from ..writer import Written
from .auth import Principal, plane_of, require_admin, require_reader
from .hot import ToFramework, admin_of, plain_json
from .writes import IdempotencyKey, mark_written, written_headers

PREFIX = "/v1/revocations"
WRITE_PATH = ""  # POST /v1/revocations
router = APIRouter(prefix=PREFIX, tags=["revocations"])


EpochSeconds = Annotated[int, Field(strict=True, ge=0, description="Epoch seconds (an integer: true or \"123\" "
                                                                   "is refused, not read as 1 or 123)")]


class RevocationIn(BaseModel):
    """One of: jti (+exp), subject (+tenant, sub), kid, tenant (kill switch), lift_tenant."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["jti", "subject", "kid", "tenant", "lift_tenant"]
    jti: str | None = None
    exp: EpochSeconds | None = None
    tenant: str | None = None
    sub: str | None = None
    kid: str | None = None
    issued_before: EpochSeconds | None = None


async def publish_revocation(plane: Plane, who: Principal, stated: dict[str, Any],
                             idempotency_key: str | None) -> tuple[dict[str, Any], Written]:
    """Publish what the request ``stated`` (its non-null members), audit it, and take a revoked kid
    out of the trust set: the answer's body and the outcome (the route and its door share it)."""
    written = await plane.revoke(revocation_payload(stated), idempotency_key=idempotency_key, stated=stated)
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
    return answer, written


@router.post(WRITE_PATH)
async def revoke(body: RevocationIn, request: Request, response: Response,
                 who: Annotated[Principal, Depends(require_admin)],
                 idempotency_key: IdempotencyKey = None,
                 ) -> dict[str, Any]:
    """Publish one ``revocation`` event; every sidecar applies it. Returns its sequence.

    A revoked ``kid`` also leaves the token trust set (when it is in it), so the JWKS never
    lists a key every verifier refuses; the plane refuses to trust it again.
    """
    answer, written = await publish_revocation(plane_of(request), who, body.model_dump(exclude_none=True),
                                               idempotency_key)
    mark_written(response, written)
    return answer


_FIELDS: Final = tuple(RevocationIn.model_fields)  # declaration order: model_dump's order
_KINDS: Final = frozenset(get_args(RevocationIn.model_fields["kind"].annotation))
_TIMES: Final = frozenset({"exp", "issued_before"})
_FIELDS_SET: Final = frozenset(_FIELDS)


def _plain_revocation(document: Any) -> dict[str, Any]:
    """``RevocationIn.model_dump(exclude_none=True)`` of a document that is plainly one (known
    members only, each null or of the type the model asks for); else :class:`ToFramework`."""
    if type(document) is not dict or not document.keys() <= _FIELDS_SET:
        raise ToFramework
    for name, value in document.items():
        if value is not None and type(value) is not (int if name in _TIMES else str):
            raise ToFramework
        if name in _TIMES and value is not None and value < 0:
            raise ToFramework
    if document.get("kind") not in _KINDS:
        raise ToFramework
    return {name: document[name] for name in _FIELDS if document.get(name) is not None}


async def revoke_door(plane: Plane, scope: Scope, body: bytes) -> Reply:
    """The route above, below the framework (see :mod:`.hot`)."""
    document = plain_json(scope, body)
    who = admin_of(plane, scope)
    stated = _plain_revocation(document)
    answer, written = await publish_revocation(plane, who, stated, header(scope, b"idempotency-key"))
    return Reply(json.dumps(answer, separators=(",", ":")).encode(), headers=written_headers(written))


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
