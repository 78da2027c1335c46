"""AuthZEN Authorization API 1.0: evaluation, evaluations (boxcar) and PDP metadata."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from tenantguard.decision import Decision
from tenantguard.errors import InvalidInput

from ..runtime import Sidecar
from .models import ErrorBody, EvaluationRequest, EvaluationResponse, EvaluationsRequest, EvaluationsResponse
from .wire import json_response, parse_body, request_body_doc

router = APIRouter(tags=["authzen"])
ERRORS = {400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 413: {"model": ErrorBody}}
_ENTITIES = ("subject", "action", "resource", "context")


def _render(decision: Decision) -> dict[str, Any]:
    context: dict[str, Any] = {"decision_id": decision.decision_id, "bundle_revision": decision.bundle_revision}
    if not decision.allow:
        context["reason_admin"] = {"en": ", ".join(decision.reasons)}
        context["reasons"] = list(decision.reasons)
    return {"decision": decision.allow, "context": context}


def _request_id(request: Request) -> dict[str, str] | None:
    """AuthZEN 1.0 12.1.6: echo the PEP's X-Request-ID on the response."""
    request_id = request.headers.get("x-request-id")
    return {"X-Request-ID": request_id} if request_id else None


@router.post("/access/v1/evaluation", response_model=EvaluationResponse, responses=ERRORS,
             openapi_extra=request_body_doc(EvaluationRequest))  # type: ignore[untyped-decorator]
async def evaluation(request: Request) -> Response:
    """One access evaluation; a decision is always HTTP 200 (deny is ``decision: false``)."""
    sidecar: Sidecar = request.app.state.sidecar
    claims = sidecar.authenticate(request.headers.get("authorization"))
    body = await parse_body(request, EvaluationRequest)
    decision = sidecar.decide(body.model_dump(exclude_none=True), claims, door="authzen")
    return json_response(_render(decision), headers=_request_id(request))


@router.post("/access/v1/evaluations", response_model=EvaluationsResponse, responses=ERRORS,
             openapi_extra=request_body_doc(EvaluationsRequest))  # type: ignore[untyped-decorator]
async def evaluations(request: Request) -> Response:
    """Boxcarred evaluations; top-level members are defaults each entry may replace."""
    sidecar: Sidecar = request.app.state.sidecar
    claims = sidecar.authenticate(request.headers.get("authorization"))
    body = await parse_body(request, EvaluationsRequest)
    defaults = body.model_dump(exclude_none=True, include=set(_ENTITIES))
    if not body.evaluations:  # no array: behaves as a single evaluation
        return json_response(_render(sidecar.decide(defaults, claims, door="authzen")), headers=_request_id(request))
    if len(body.evaluations) > sidecar.config.max_evaluations:
        raise InvalidInput(f"at most {sidecar.config.max_evaluations} evaluations per request")
    semantic = body.options.evaluations_semantic if body.options else "execute_all"
    results: list[dict[str, Any]] = []
    for item in body.evaluations:
        merged = {**defaults, **item.model_dump(exclude_none=True)}
        try:
            rendered = _render(sidecar.decide(merged, claims, door="authzen"))
        except InvalidInput as exc:  # one bad entry is that entry's deny, not the whole call's
            rendered = {"decision": False, "context": {"error": {"status": 400, "message": exc.message}}}
        results.append(rendered)
        if semantic == "deny_on_first_deny" and not rendered["decision"]:
            break
        if semantic == "permit_on_first_permit" and rendered["decision"]:
            break
    return json_response({"evaluations": results}, headers=_request_id(request))


@router.get("/.well-known/authzen-configuration")  # type: ignore[untyped-decorator]
async def configuration(request: Request) -> dict[str, str]:
    """PDP metadata (AuthZEN 1.0 section 9), with URLs built from how we were reached."""
    base = str(request.base_url).rstrip("/")
    return {
        "policy_decision_point": base,
        "access_evaluation_endpoint": f"{base}/access/v1/evaluation",
        "access_evaluations_endpoint": f"{base}/access/v1/evaluations",
    }
