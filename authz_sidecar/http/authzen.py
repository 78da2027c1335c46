"""AuthZEN Authorization API 1.0: evaluation, evaluations (boxcar) and PDP metadata."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.types import Scope
from tenantguard.decision.core import Decision
from tenantguard.errors import InvalidInput, NotFound
from tenantguard.identity.tokens import Claims
from tenantguard.server.asgi import header

from ..runtime import Sidecar
from ..tenancy import question_tenant
from .models import ErrorBody, EvaluationRequest, EvaluationResponse, EvaluationsRequest, EvaluationsResponse
from .wire import (
    Reply,
    as_route,
    authorization,
    json_reply,
    parse_authzen,
    request_body_doc,
    require_local_or_credential,
)

router = APIRouter(tags=["authzen"])
# no 415: AuthZEN 1.0 has none (wire.parse_authzen)
ERRORS = {400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 413: {"model": ErrorBody}}
EVALUATION_PATH = "/access/v1/evaluation"
EVALUATIONS_PATH = "/access/v1/evaluations"
_ENTITIES = ("subject", "action", "resource", "context")


def _render(decision: Decision, *, context: bool = True) -> dict[str, Any]:
    """AuthZEN's answer; ``context=False`` gives the bare ``{"decision": ...}`` (a boxcar entry
    unless the caller asked for context)."""
    if not context:
        return {"decision": decision.allow}
    shown: dict[str, Any] = {"decision_id": decision.decision_id, "bundle_revision": decision.bundle_revision}
    if not decision.allow:
        shown["reason_admin"] = {"en": ", ".join(decision.reasons)}
        shown["reasons"] = list(decision.reasons)
    return {"decision": decision.allow, "context": shown}


def request_id_headers(scope: Scope) -> list[tuple[bytes, bytes]] | None:
    """AuthZEN 1.0 12.1.6: echo the PEP's X-Request-ID on the response."""
    request_id = header(scope, b"x-request-id")
    return [(b"x-request-id", request_id.encode("latin-1"))] if request_id else None


async def evaluation_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """``evaluation`` below, as a framework-free door (see ``wire.Door``)."""
    caller = sidecar.caller(authorization(scope))
    require_local_or_credential(scope, caller.claims, caller.pep)
    question = parse_authzen(scope, body, EvaluationRequest, limit=sidecar.config.max_body_bytes)
    _require_resource_id(question.resource.id, token=caller.claims is not None)
    wire = question.model_dump(exclude_none=True, exclude={"at_least"})
    if await _arrived(sidecar, question.at_least, [wire], caller.claims, caller.tenant):
        decision = sidecar.decide(wire, caller.claims, door="authzen", tenant=caller.tenant)
    else:
        decision = sidecar.stale_decision(wire, caller.claims, "authzen", question.at_least or 0, caller.tenant)
    return json_reply(_render(decision), headers=request_id_headers(scope))


async def _arrived(sidecar: Sidecar, at_least: int | None, questions: list[dict[str, Any]], claims: Claims | None,
                   tenant: str | None) -> bool:
    """Whether the relations the ``questions`` are decided on have reached ``at_least`` (a
    bounded wait). Their one tenant's cell; questions of several tenants (a tokenless PEP
    stating them per entry): every cell in scope."""
    if at_least is None:
        return True
    tenants = {question_tenant(q, claims, tenant) for q in questions}
    return await sidecar.wait_for_seq(at_least, tenants.pop() if len(tenants) == 1 else None)


def _require_resource_id(resource_id: object, *, token: bool) -> None:
    """AuthZEN 1.0 "Resource": ``id`` is REQUIRED in an access evaluation (the certification
    scenario's c-2-4-2 sends a resource without one and expects 400; it was decided).

    Only for AuthZEN PEPs, which state the subject: a caller presenting a context token already
    uses tenantguard's extension (the subject comes from the token), and keeps the type-level
    questions ``/v1/check`` answers ("may I create an invoice?"), so the SDK's ``check`` and
    ``check_many`` (which sends the boxcar) agree. Search requests omit the searched id anyway."""
    if not token and (not isinstance(resource_id, str) or not resource_id):
        raise InvalidInput("resource.id is required (AuthZEN 1.0)", field="resource.id")


def _merged(defaults: dict[str, Any], item: dict[str, Any], index: int, *, token: bool) -> dict[str, Any]:
    """One evaluation over the top-level defaults (AuthZEN 1.0 "Default values": a member an entry
    names replaces the default whole); :class:`InvalidInput` when a required member is in neither
    (``subject`` may be missing when a context token supplies it)."""
    required = ("action", "resource") if token else ("subject", "action", "resource")
    question = {**defaults, **item}
    missing = [name for name in required if name not in question]
    if missing:
        raise InvalidInput(f"evaluations[{index}] has no {', '.join(missing)} and the request no default for it",
                           field=f"evaluations[{index}]")
    _require_resource_id(question["resource"].get("id"), token=token)
    return question


def _failed(exc: InvalidInput) -> dict[str, Any]:
    """A boxcar entry that could not be asked: a deny with the error in its context (AuthZEN 1.0
    "Errors": errors in individual evaluations are denials at the payload level, the HTTP status
    stays 200; the certification scenario's c-3-4-1 expects exactly this)."""
    return {"decision": False, "context": {"error": {"status": 400, "message": exc.message}}}


async def evaluations_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """``evaluations`` below, as a framework-free door (see ``wire.Door``)."""
    caller = sidecar.caller(authorization(scope))
    claims, tenant = caller.claims, caller.tenant
    require_local_or_credential(scope, claims, caller.pep)
    question = parse_authzen(scope, body, EvaluationsRequest, limit=sidecar.config.max_body_bytes)
    defaults = question.model_dump(exclude_none=True, include=set(_ENTITIES))
    at_least = question.at_least

    def decide(wire: dict[str, Any], fresh: bool) -> Decision:
        if fresh:
            return sidecar.decide(wire, claims, door="authzen", tenant=tenant)
        return sidecar.stale_decision(wire, claims, "authzen", at_least or 0, tenant)

    if not question.evaluations:  # no array: behaves as a single evaluation
        _require_resource_id(defaults.get("resource", {}).get("id"), token=claims is not None)
        fresh = await _arrived(sidecar, at_least, [defaults], claims, tenant)
        return json_reply(_render(decide(defaults, fresh)), headers=request_id_headers(scope))
    if len(question.evaluations) > sidecar.config.max_evaluations:
        raise InvalidInput(f"at most {sidecar.config.max_evaluations} evaluations per request")
    semantic = question.options.evaluations_semantic if question.options else "execute_all"
    with_context = question.options.tenantguard_context if question.options else False
    entries: list[dict[str, Any] | InvalidInput] = []
    for index, item in enumerate(question.evaluations):
        try:  # one bad entry (a member missing, a malformed one) is that entry's deny, not the whole call's
            entries.append(_merged(defaults, item.model_dump(exclude_none=True), index, token=claims is not None))
        except InvalidInput as exc:
            entries.append(exc)
    fresh = await _arrived(sidecar, at_least, [e for e in entries if isinstance(e, dict)], claims, tenant)
    results: list[dict[str, Any]] = []
    for entry in entries:
        if isinstance(entry, InvalidInput):
            rendered = _failed(entry)
        else:
            try:
                rendered = _render(decide(entry, fresh), context=with_context)
            except InvalidInput as exc:  # DecisionRequest's own checks
                rendered = _failed(exc)
        results.append(rendered)
        if semantic == "deny_on_first_deny" and not rendered["decision"]:
            break
        if semantic == "permit_on_first_permit" and rendered["decision"]:
            break
    return json_reply({"evaluations": results}, headers=request_id_headers(scope))


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


CONFIGURATION_PATH = "/.well-known/authzen-configuration"
SEARCH_SUBJECT_PATH = "/access/v1/search/subject"  # served by .search
SEARCH_RESOURCE_PATH = "/access/v1/search/resource"
SEARCH_ACTION_PATH = "/access/v1/search/action"
# metadata member -> the path it names; list a member here only once its route is served
# (tests/authzen/test_spec.py compares the two).
SERVED_ENDPOINTS = {
    "access_evaluation_endpoint": EVALUATION_PATH,
    "access_evaluations_endpoint": EVALUATIONS_PATH,
    "search_subject_endpoint": SEARCH_SUBJECT_PATH,
    "search_resource_endpoint": SEARCH_RESOURCE_PATH,
    "search_action_endpoint": SEARCH_ACTION_PATH,
}


def configuration_document(base: str) -> dict[str, str]:
    """PDP metadata (AuthZEN 1.0 "Policy Decision Point Metadata") for the PDP identified by ``base``."""
    return {"policy_decision_point": base, **{name: base + path for name, path in SERVED_ENDPOINTS.items()}}


@router.get(CONFIGURATION_PATH)  # type: ignore[untyped-decorator]
async def configuration(request: Request) -> dict[str, str]:
    """PDP metadata. URLs come from ``--public-url`` (else the bound address), never from
    the request's ``Host`` header, which any caller can set (metadata poisoning)."""
    sidecar: Sidecar = request.app.state.sidecar
    return configuration_document(sidecar.public_url)


@router.get(CONFIGURATION_PATH + "/{suffix:path}")  # type: ignore[untyped-decorator]
async def configuration_for_path(suffix: str, request: Request) -> dict[str, str]:
    """The same metadata where a PEP looks for a PDP identifier with a path (``--public-url
    https://pdp.example.com/todo`` -> ``/.well-known/authzen-configuration/todo``, AuthZEN 1.0
    "PDP Metadata"); any other suffix names another PDP: 404."""
    sidecar: Sidecar = request.app.state.sidecar
    if not sidecar.public_path or "/" + suffix.rstrip("/") != sidecar.public_path:
        raise NotFound(f"no PDP metadata for /{suffix[:100]} here")
    return configuration_document(sidecar.public_url)
