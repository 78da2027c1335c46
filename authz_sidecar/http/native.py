"""``POST /v1/check``: the native door (AuthZEN-shaped body, richer answer)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ..runtime import Sidecar
from .models import CheckRequest, CheckResponse, ErrorBody
from .wire import json_response, parse_body, request_body_doc

router = APIRouter(tags=["decisions"])
ERRORS = {400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 413: {"model": ErrorBody}}


@router.post("/v1/check", response_model=CheckResponse, responses=ERRORS,
             openapi_extra=request_body_doc(CheckRequest))  # type: ignore[untyped-decorator]
async def check(request: Request) -> Response:
    """Decide one question. A context token in ``Authorization`` is the subject's only
    source of truth when present; ``at_least`` waits (bounded) for a relations sequence."""
    sidecar: Sidecar = request.app.state.sidecar
    claims = sidecar.authenticate(request.headers.get("authorization"))
    body = await parse_body(request, CheckRequest)
    wire = body.model_dump(exclude_none=True, exclude={"at_least"})
    if body.at_least is not None and not await sidecar.wait_for_seq(body.at_least):
        decision = sidecar.stale_decision(wire, claims, "native", body.at_least)
    else:
        decision = sidecar.decide(wire, claims, door="native")
    return json_response(decision.to_dict())
