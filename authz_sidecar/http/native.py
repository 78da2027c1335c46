"""``POST /v1/check``: the native door (AuthZEN-shaped body, richer answer)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.types import Scope
from tenantguard.errors import TokenMissing

from ..runtime import Sidecar
from ..tenancy import question_tenant
from .models import CheckRequest, CheckResponse, ErrorBody
from .wire import Reply, as_route, authorization, json_reply, parse_json, request_body_doc, require_local_or_credential

router = APIRouter(tags=["decisions"])
ERRORS = {400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 413: {"model": ErrorBody}, 415: {"model": ErrorBody}}
PATH = "/v1/check"


async def check_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """The route below, as a framework-free door (see ``wire.Door``)."""
    claims = sidecar.authenticate(authorization(scope))
    require_local_or_credential(scope, claims, None)
    question = parse_json(scope, body, CheckRequest, limit=sidecar.config.max_body_bytes)
    wire = question.model_dump(exclude_none=True, exclude={"at_least"})
    if claims is None and not wire.get("subject"):
        # nobody is named: the caller most likely forgot its token (the AuthZEN doors, whose
        # PEPs always state the subject, keep their 400 for a missing subject)
        raise TokenMissing("no context token (Authorization: Bearer ...) and no subject in the body: "
                           "send the caller's token, or state the subject (local callers without tokens)")
    # the tenant whose relations the decision reads (--tenant binds a tokenless caller's)
    tenant = question_tenant(wire, claims, sidecar.config.tenant)
    if question.at_least is not None and not await sidecar.wait_for_seq(question.at_least, tenant):
        decision = sidecar.stale_decision(wire, claims, "native", question.at_least, sidecar.config.tenant)
    else:
        decision = sidecar.decide(wire, claims, door="native")
    return json_reply(decision.to_dict())


@router.post(PATH, response_model=CheckResponse, responses=ERRORS,
             openapi_extra=request_body_doc(CheckRequest))  # type: ignore[untyped-decorator]
async def check(request: Request) -> Response:
    """Decide one question. A context token in ``Authorization`` is the subject's only
    source of truth when present; ``at_least`` waits (bounded) for a relations sequence."""
    return await as_route(check_door, request)
