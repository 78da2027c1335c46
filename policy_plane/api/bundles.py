"""Bundle API: upload a tar.gz (signed by the plane's bundle key, or unsigned for the plane to
compile, test and sign), and list the active revision of every scope."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from tenantguard.errors import InvalidInput

from .auth import Principal, plane_of, require_admin

UPLOAD_PATH = "/v1/bundles"  # bodies here get the (larger) bundle size bound
router = APIRouter(prefix=UPLOAD_PATH, tags=["bundles"])

_UPLOAD_DOC = {
    "requestBody": {
        "required": True,
        "description": "An OPA bundle archive (tar.gz). Unsigned: compiled, tested and signed by the plane.",
        "content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}},
    }
}


@router.post("", openapi_extra=_UPLOAD_DOC)
async def upload(request: Request, who: Annotated[Principal, Depends(require_admin)]) -> dict[str, Any]:
    """Publish a bundle to its scopes (``metadata.services``, default ``all``); 409 on rollback."""
    plane = plane_of(request)
    plane.require_ready()
    archive = await request.body()  # bounded by the body-limit middleware
    if not archive:
        raise InvalidInput("send the bundle archive as the request body")
    result = await plane.bundles.publish(archive, admin=who.kind == "admin")
    changed = [s["scope"] for s in result["scopes"] if not s.get("unchanged")]
    plane.audit.record(who.actor, "bundles.publish", revision=result["revision"], serial=result["serial"],
                       scopes=[s["scope"] for s in result["scopes"]], changed=changed,
                       signed_by_plane=result["signed_by_plane"])
    if changed:
        plane.metrics.admin_changes.labels("bundles.publish").inc()
    return result


@router.get("")
async def active(request: Request) -> dict[str, Any]:
    """The active (last announced) bundle of every scope."""
    plane = plane_of(request)
    return {"scopes": [a.to_wire() for _, a in sorted(plane.state.announces.items())]}
