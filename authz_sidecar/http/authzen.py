"""AuthZEN Authorization API 1.0: evaluation, evaluations (boxcar) and PDP metadata."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response
from tenantguard.decision import Decision
from tenantguard.errors import InvalidInput

from ..runtime import Sidecar
from .models import ErrorBody, EvaluationRequest, EvaluationResponse, EvaluationsRequest, EvaluationsResponse

router = APIRouter(tags=["authzen"])
ERRORS = {400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 413: {"model": ErrorBody}}
_ENTITIES = ("subject", "action", "resource", "context")


def _render(decision: Decision) -> EvaluationResponse:
    context: dict[str, Any] = {"decision_id": decision.decision_id, "bundle_revision": decision.bundle_revision}
    if not decision.allow:
        context["reason_admin"] = {"en": ", ".join(decision.reasons)}
        context["reasons"] = list(decision.reasons)
    return EvaluationResponse(decision=decision.allow, context=context)


def _echo_request_id(response: Response, request_id: str | None) -> None:
    if request_id:
        response.headers["X-Request-ID"] = request_id


@router.post("/access/v1/evaluation", response_model=EvaluationResponse, response_model_exclude_none=True,
             responses=ERRORS)  # type: ignore[untyped-decorator]
async def evaluation(
    body: EvaluationRequest,
    request: Request,
    response: Response,
    authorization: Annotated[str | None, Header()] = None,
    x_request_id: Annotated[str | None, Header()] = None,
) -> EvaluationResponse:
    """One access evaluation; a decision is always HTTP 200 (deny is ``decision: false``)."""
    sidecar: Sidecar = request.app.state.sidecar
    claims = sidecar.authenticate(authorization)
    _echo_request_id(response, x_request_id)
    return _render(sidecar.decide(body.model_dump(exclude_none=True), claims, door="authzen"))


@router.post("/access/v1/evaluations", response_model=EvaluationsResponse, response_model_exclude_none=True,
             responses=ERRORS)  # type: ignore[untyped-decorator]
async def evaluations(
    body: EvaluationsRequest,
    request: Request,
    response: Response,
    authorization: Annotated[str | None, Header()] = None,
    x_request_id: Annotated[str | None, Header()] = None,
) -> EvaluationsResponse:
    """Boxcarred evaluations; top-level members are defaults each entry may replace."""
    sidecar: Sidecar = request.app.state.sidecar
    claims = sidecar.authenticate(authorization)
    _echo_request_id(response, x_request_id)
    defaults = body.model_dump(exclude_none=True, include=set(_ENTITIES))
    if not body.evaluations:  # no array: behaves as a single evaluation (spec 7.1)
        decision = _render(sidecar.decide(defaults, claims, door="authzen"))
        return EvaluationsResponse(decision=decision.decision, context=decision.context)
    if len(body.evaluations) > sidecar.config.max_evaluations:
        raise InvalidInput(f"at most {sidecar.config.max_evaluations} evaluations per request")
    semantic = body.options.evaluations_semantic if body.options else "execute_all"
    results: list[EvaluationResponse] = []
    for item in body.evaluations:
        merged = {**defaults, **item.model_dump(exclude_none=True)}
        try:
            rendered = _render(sidecar.decide(merged, claims, door="authzen"))
        except InvalidInput as exc:  # one bad entry is that entry's deny, not the whole call's
            rendered = EvaluationResponse(decision=False, context={"error": {"status": 400, "message": exc.message}})
        results.append(rendered)
        if semantic == "deny_on_first_deny" and not rendered.decision:
            break
        if semantic == "permit_on_first_permit" and rendered.decision:
            break
    return EvaluationsResponse(evaluations=results)


@router.get("/.well-known/authzen-configuration")  # type: ignore[untyped-decorator]
async def configuration(request: Request) -> dict[str, str]:
    """PDP metadata (AuthZEN 1.0 section 9), with URLs built from how we were reached."""
    base = str(request.base_url).rstrip("/")
    return {
        "policy_decision_point": base,
        "access_evaluation_endpoint": f"{base}/access/v1/evaluation",
        "access_evaluations_endpoint": f"{base}/access/v1/evaluations",
    }
