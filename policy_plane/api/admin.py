"""Admin reads: the audit ring and the decision-log sink."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from .auth import Principal, plane_of, require_admin

router = APIRouter(tags=["admin"])


@router.get("/v1/audit")
async def audit(request: Request, who: Annotated[Principal, Depends(require_admin)],
                limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """Admin changes seen by this replica, newest first (each replica audits what it served)."""
    return {"entries": plane_of(request).audit.recent(limit)}


@router.get("/v1/decisions")
async def decisions(
    request: Request,
    who: Annotated[Principal, Depends(require_admin)],
    tenant: Annotated[str | None, Query(max_length=64)] = None,
    service: Annotated[str | None, Query(max_length=63)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """Recent decision records from the sidecars (newest first) and the sink's counters."""
    sink = plane_of(request).decisions
    return {"decisions": sink.query(tenant=tenant, service=service, limit=limit), "stats": sink.stats()}
