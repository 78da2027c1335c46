"""Search and lookup doors: AuthZEN 1.0 search (subject, resource, action) and native lookups.

Thin: parse, resolve the caller's tenant exactly as the decision doors do, hand the
question to ``tenantguard.search.Searcher``, render, count. Tenant rules: a verified
context token's tenant (with ``--tenant``, a token of another tenant finds nothing), else
the caller's bound tenant (PEP key, ``--tenant``), else the tenant the local PEP states;
a body naming another tenant finds nothing. Results never cross it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel
from starlette.types import Scope
from tenantguard.errors import InvalidInput, TenantGuardError
from tenantguard.search import Page, Question, RelationsStale, entity

from ..runtime import Sidecar
from ..tenancy import Caller, bind_tenant, question_tenant
from .authzen import SEARCH_ACTION_PATH, SEARCH_RESOURCE_PATH, SEARCH_SUBJECT_PATH, request_id_headers
from .models import (
    ActionSearchRequest,
    ErrorBody,
    FilterRequest,
    FilterResponse,
    LookupResourcesRequest,
    LookupResponse,
    LookupSubjectsRequest,
    ResourceSearchRequest,
    SearchResponse,
    SubjectSearchRequest,
)
from .wire import (
    Reply,
    as_route,
    authorization,
    json_reply,
    parse_authzen,
    parse_json,
    request_body_doc,
    require_local_or_credential,
)

router = APIRouter(tags=["search"])
ERRORS = {code: {"model": ErrorBody} for code in (400, 401, 409, 413, 415, 422, 503)}
LOOKUP_RESOURCES_PATH = "/v1/lookup/resources"
LOOKUP_SUBJECTS_PATH = "/v1/lookup/subjects"
LOOKUP_FILTER_PATH = "/v1/lookup/filter"
M = TypeVar("M", bound=BaseModel)


class _Nobody(Exception):
    """The caller's tenant and the question's disagree: every decision would deny."""


def _question(sidecar: Sidecar, caller: Caller, wire: Mapping[str, Any]) -> Question:
    """The question in the caller's tenant (see the module docstring); _Nobody when it cannot be."""
    claims, served = caller.claims, sidecar.config.tenant
    subject = wire.get("subject")
    if claims is not None:
        if served is not None and claims.tenant_id != served:
            raise _Nobody
    else:
        bound = caller.tenant if caller.tenant is not None else served
        if bound is not None:
            wire, agrees = bind_tenant({**wire, "subject": subject or {}}, bound)
            if not agrees:
                raise _Nobody
            subject = wire["subject"]
    return Question(subject, wire.get("action"), wire["resource"], wire.get("context") or {}, claims)


def _search_tenant(sidecar: Sidecar, caller: Caller, question: Question) -> str:
    """The tenant a subject search looks in: the token's, the bound one, else the PEP's stated one."""
    if caller.claims is not None:
        return caller.claims.tenant_id
    stated = ((question.subject or {}).get("properties") or {}).get("tenant_id")
    if not isinstance(stated, str) or not stated:
        raise _Nobody
    return stated


async def _run(sidecar: Sidecar, scope: Scope, kind: str, body: bytes, model: type[M],
               answer: Callable[[M, Caller], dict[str, Any]], *, pep_keys: bool) -> Reply:
    """Authenticate, parse, then answer on a search worker (never on the serving loop: a page
    may decide thousands of candidates); count the outcome and time it."""
    start = time.perf_counter()
    outcome = "ok"
    try:
        credential = authorization(scope)
        caller = sidecar.caller(credential) if pep_keys else Caller(sidecar.authenticate(credential),
                                                                    sidecar.config.tenant)
        require_local_or_credential(scope, caller.claims, caller.pep)
        parse = parse_authzen if pep_keys else parse_json  # the AuthZEN searches: 400 for media
        parsed = parse(scope, body, model, limit=sidecar.config.max_body_bytes)
        at_least = getattr(parsed, "at_least", None)
        tenant = question_tenant(parsed.model_dump(exclude_none=True), caller.claims, caller.tenant)
        if at_least is not None and not await sidecar.wait_for_seq(at_least, tenant):
            raise RelationsStale(f"relations sequence {at_least} not applied in time",
                                 wanted=at_least, current=sidecar.relations.seq_of(tenant))
        return json_reply(await sidecar.search_runner.run(lambda: answer(parsed, caller)),
                          headers=request_id_headers(scope))
    except TenantGuardError as exc:
        outcome = exc.code
        raise
    finally:
        sidecar.metrics.searches.labels(kind, outcome).inc()
        sidecar.metrics.search_latency.labels(kind).observe(time.perf_counter() - start)


def _count(sidecar: Sidecar, kind: str, page: Page) -> Page:
    sidecar.metrics.search_decisions.labels(kind).inc(page.decisions)
    return page


def _wire(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(exclude_none=True, exclude={"page", "at_least", "attribute", "via"})


def _limits(model: Any) -> tuple[int | None, str | None]:
    page = model.page
    return (page.limit, page.token or None) if page is not None else (None, None)


def _authzen(page: Page, render: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    return {"results": [render(r) for r in page.results], "page": {"next_token": page.next_token},
            "context": {"relations_seq": page.relations_seq, "bundle_revision": page.bundle_revision}}


def _native(page: Page) -> dict[str, Any]:
    return {"results": list(page.results), "next_token": page.next_token, "relations_seq": page.relations_seq,
            "bundle_revision": page.bundle_revision, "partial": page.partial, "broadened": page.broadened}


def _empty(sidecar: Sidecar) -> Page:
    return Page((), "", sidecar.relations.applied_seq, sidecar.bundle_revision)


def _resources(sidecar: Sidecar, kind: str, parsed: Any, caller: Caller) -> Page:
    limit, token = _limits(parsed)
    try:
        question = _question(sidecar, caller, _wire(parsed))
    except _Nobody:
        return _empty(sidecar)
    return _count(sidecar, kind, sidecar.searcher.resources(question, limit=limit, token=token))


def _refuse_stated_properties(question: Question) -> None:
    """A caller with a context token may not state the candidates' properties (``tenant_id`` aside).

    Each candidate is decided with the properties the question states; stated by the end user
    (``roles: ["admin"]``), they made every subject of the type look allowed, so the search
    broadened to list the whole tenant's subjects of that type. A PEP (the local service, a PEP
    key) states what it knows of its users and keeps doing so."""
    stated = (question.subject or {}).get("properties") or {}
    extra = sorted(str(name) for name in stated if name != "tenant_id")
    if extra:
        raise InvalidInput("a caller with a context token cannot state subject.properties for a subject search "
                           "(each candidate is decided with the relations it holds)",
                           field="subject.properties", names=extra[:8])


def _subjects(sidecar: Sidecar, kind: str, parsed: Any, caller: Caller) -> Page:
    limit, token = _limits(parsed)
    try:
        question = _question(sidecar, caller, _wire(parsed))
        tenant = _search_tenant(sidecar, caller, question)
    except _Nobody:
        return _empty(sidecar)
    if caller.claims is not None:
        _refuse_stated_properties(question)
    # A token names its own subject only: candidates are decided as PEP-stated subjects.
    question = Question(question.subject, question.action, question.resource, question.context, None)
    return _count(sidecar, kind, sidecar.searcher.subjects(question, tenant, limit=limit, token=token))


# -- AuthZEN 1.0 search -------------------------------------------------------------------------


async def search_subject_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    def answer(parsed: SubjectSearchRequest, caller: Caller) -> dict[str, Any]:
        return _authzen(_subjects(sidecar, "subject", parsed, caller), entity)
    return await _run(sidecar, scope, "subject", body, SubjectSearchRequest, answer, pep_keys=True)


async def search_resource_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    def answer(parsed: ResourceSearchRequest, caller: Caller) -> dict[str, Any]:
        return _authzen(_resources(sidecar, "resource", parsed, caller), entity)
    return await _run(sidecar, scope, "resource", body, ResourceSearchRequest, answer, pep_keys=True)


async def search_action_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    def answer(parsed: ActionSearchRequest, caller: Caller) -> dict[str, Any]:
        limit, token = _limits(parsed)
        try:
            question = _question(sidecar, caller, _wire(parsed))
        except _Nobody:
            page = _empty(sidecar)
        else:
            page = _count(sidecar, "action", sidecar.searcher.actions(question, limit=limit, token=token))
        return _authzen(page, lambda name: {"name": name})
    return await _run(sidecar, scope, "action", body, ActionSearchRequest, answer, pep_keys=True)


# -- native lookups -----------------------------------------------------------------------------


async def lookup_resources_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    def answer(parsed: LookupResourcesRequest, caller: Caller) -> dict[str, Any]:
        return _native(_resources(sidecar, "lookup_resources", parsed, caller))
    return await _run(sidecar, scope, "lookup_resources", body, LookupResourcesRequest, answer, pep_keys=False)


async def lookup_subjects_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    def answer(parsed: LookupSubjectsRequest, caller: Caller) -> dict[str, Any]:
        return _native(_subjects(sidecar, "lookup_subjects", parsed, caller))
    return await _run(sidecar, scope, "lookup_subjects", body, LookupSubjectsRequest, answer, pep_keys=False)


async def lookup_filter_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    def answer(parsed: FilterRequest, caller: Caller) -> dict[str, Any]:
        try:
            question = _question(sidecar, caller, _wire(parsed))
        except _Nobody:
            return {"attribute": parsed.attribute, "values": [], "include_null": False, "any_value": False,
                    "relations_seq": sidecar.relations.applied_seq, "bundle_revision": sidecar.bundle_revision}
        return sidecar.searcher.resource_filter(question, parsed.attribute, parsed.via).to_wire()
    return await _run(sidecar, scope, "filter", body, FilterRequest, answer, pep_keys=False)


def _route(path: str, door: Callable[[Sidecar, Scope, bytes], Awaitable[Reply]], request_model: type[BaseModel],
           response_model: type[BaseModel], doc: str) -> None:
    async def route(request: Request) -> Response:
        return await as_route(door, request)
    route.__doc__ = doc
    route.__name__ = door.__name__.removesuffix("_door")
    router.post(path, response_model=response_model, responses=ERRORS,
                openapi_extra=request_body_doc(request_model))(route)


_route(SEARCH_SUBJECT_PATH, search_subject_door, SubjectSearchRequest, SearchResponse,
       "AuthZEN 1.0 subject search: subjects of `subject.type` allowed `action` on `resource`, paged.")
_route(SEARCH_RESOURCE_PATH, search_resource_door, ResourceSearchRequest, SearchResponse,
       "AuthZEN 1.0 resource search: resources of `resource.type` the subject may act on, paged.")
_route(SEARCH_ACTION_PATH, search_action_door, ActionSearchRequest, SearchResponse,
       "AuthZEN 1.0 action search: actions (from the bundle's `search_actions`) allowed on `resource`.")
_route(LOOKUP_RESOURCES_PATH, lookup_resources_door, LookupResourcesRequest, LookupResponse,
       "Resources of a type the subject may act on (`type:id`), through usersets and the bundle's schema "
       "(hierarchies); `at_least` as for checks.")
_route(LOOKUP_SUBJECTS_PATH, lookup_subjects_door, LookupSubjectsRequest, LookupResponse,
       "Subjects of a type allowed on a resource (`type:id`), through usersets and the bundle's schema; "
       "`at_least` as for checks.")
_route(LOOKUP_FILTER_PATH, lookup_filter_door, FilterRequest, FilterResponse,
       "The values of `resource.properties[attribute]` the subject may act on: a filter for a list query.")
