"""Admin reads: the audit ring (decision records: :mod:`.decisions`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from .auth import Principal, plane_of, require_operator

router = APIRouter(tags=["admin"])


@router.get("/v1/audit")
async def audit(request: Request, who: Annotated[Principal, Depends(require_operator)],
                limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """Admin changes seen by this replica, newest first (each replica audits what it served)."""
    return {"entries": plane_of(request).audit.recent(limit)}
