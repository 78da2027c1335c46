"""AuthZEN Authorization API 1.0: evaluation, evaluations (boxcar) and PDP metadata."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.types import Scope
from tenantguard.asgi import header
from tenantguard.decision import Decision
from tenantguard.errors import InvalidInput

from ..runtime import Sidecar
from .models import ErrorBody, EvaluationRequest, EvaluationResponse, EvaluationsRequest, EvaluationsResponse
from .wire import Reply, as_route, json_reply, parse_json, request_body_doc

router = APIRouter(tags=["authzen"])
ERRORS = {400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 413: {"model": ErrorBody}, 415: {"model": ErrorBody}}
EVALUATION_PATH = "/access/v1/evaluation"
EVALUATIONS_PATH = "/access/v1/evaluations"
_ENTITIES = ("subject", "action", "resource", "context")


def _render(decision: Decision) -> dict[str, Any]:
    context: dict[str, Any] = {"decision_id": decision.decision_id, "bundle_revision": decision.bundle_revision}
    if not decision.allow:
        context["reason_admin"] = {"en": ", ".join(decision.reasons)}
        context["reasons"] = list(decision.reasons)
    return {"decision": decision.allow, "context": context}


def _request_id(scope: Scope) -> list[tuple[bytes, bytes]] | None:
    """AuthZEN 1.0 12.1.6: echo the PEP's X-Request-ID on the response."""
    request_id = header(scope, b"x-request-id")
    return [(b"x-request-id", request_id.encode("latin-1"))] if request_id else None


async def evaluation_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """``evaluation`` below, as a framework-free door (see ``wire.Door``)."""
    claims = sidecar.authenticate(header(scope, b"authorization"))
    question = parse_json(scope, body, EvaluationRequest)
    decision = sidecar.decide(question.model_dump(exclude_none=True), claims, door="authzen")
    return json_reply(_render(decision), headers=_request_id(scope))


async def evaluations_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """``evaluations`` below, as a framework-free door (see ``wire.Door``)."""
    claims = sidecar.authenticate(header(scope, b"authorization"))
    question = parse_json(scope, body, EvaluationsRequest)
    defaults = question.model_dump(exclude_none=True, include=set(_ENTITIES))
    if not question.evaluations:  # no array: behaves as a single evaluation
        return json_reply(_render(sidecar.decide(defaults, claims, door="authzen")), headers=_request_id(scope))
    if len(question.evaluations) > sidecar.config.max_evaluations:
        raise InvalidInput(f"at most {sidecar.config.max_evaluations} evaluations per request")
    semantic = question.options.evaluations_semantic if question.options else "execute_all"
    results: list[dict[str, Any]] = []
    for item in question.evaluations:
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
    return json_reply({"evaluations": results}, headers=_request_id(scope))


@router.post(EVALUATION_PATH, response_model=EvaluationResponse, responses=ERRORS,
             openapi_extra=request_body_doc(EvaluationRequest))  # type: ignore[untyped-decorator]
async def evaluation(request: Request) -> Response:
    """One access evaluation; a decision is always HTTP 200 (deny is ``decision: false``)."""
    return await as_route(evaluation_door, request)


@router.post(EVALUATIONS_PATH, response_model=EvaluationsResponse, responses=ERRORS,
             openapi_extra=request_body_doc(EvaluationsRequest))  # type: ignore[untyped-decorator]
async def evaluations(request: Request) -> Response:
    """Boxcarred evaluations; top-level members are defaults each entry may replace."""
    return await as_route(evaluations_door, request)


@router.get("/.well-known/authzen-configuration")  # type: ignore[untyped-decorator]
async def configuration(request: Request) -> dict[str, str]:
    """PDP metadata (AuthZEN 1.0 section 9), with URLs built from how we were reached."""
    base = str(request.base_url).rstrip("/")
    return {
        "policy_decision_point": base,
        "access_evaluation_endpoint": f"{base}{EVALUATION_PATH}",
        "access_evaluations_endpoint": f"{base}{EVALUATIONS_PATH}",
    }
