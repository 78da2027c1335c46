"""Wire models for the HTTP doors (pydantic, so the OpenAPI document describes them).

AuthZEN entities allow unknown members (the spec lets implementations extend them);
sizes are bounded so a request cannot make the sidecar do unbounded work.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from tenantguard.server.asgi import ErrorBody as ErrorBody  # the shared refusal body, re-exported

Name = Annotated[str, Field(min_length=1, max_length=256)]
Ident = Annotated[str, Field(min_length=1, max_length=1024)]
ConsistencyToken = Annotated[int, Field(
    strict=True, ge=0, le=2**63 - 1,
    description="A relations sequence (a write's consistency_token): the answer is decided at this sequence of "
                "the asking tenant's cell or later; if it has not arrived within --max-wait-ms, the answer is a "
                "deny relations_stale (searches: 409 relations_stale). A JSON integer: true or \"42\" is refused, "
                "not read as 1 or 42")]


class Entity(BaseModel):
    """An AuthZEN subject or resource: ``type``, ``id`` and free-form ``properties``."""

    model_config = ConfigDict(extra="allow")
    type: Name
    id: Ident | None = None
    properties: dict[str, Any] | None = None


class Action(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: Name
    properties: dict[str, Any] | None = None


class EvaluationRequest(BaseModel):
    """AuthZEN 1.0 Access Evaluation request. ``subject`` may be omitted when a context
    token is presented: the subject then comes from the verified token. ``at_least`` is
    tenantguard's extension (every decision and search door honours it; none ignores it)."""

    model_config = ConfigDict(extra="ignore")
    subject: Entity | None = None
    action: Action
    resource: Entity
    context: dict[str, Any] | None = None
    at_least: ConsistencyToken | None = None


class CheckRequest(EvaluationRequest):
    """Native check: an AuthZEN-shaped question plus an optional consistency token."""


class CheckResponse(BaseModel):
    allow: bool
    reasons: list[str]
    decision_id: str
    bundle_revision: str | None
    relations_seq: int
    high_risk: bool = False


class EvaluationResponse(BaseModel):
    decision: bool
    context: dict[str, Any] | None = None


class EvaluationItem(BaseModel):
    model_config = ConfigDict(extra="ignore")
    subject: Entity | None = None
    action: Action | None = None
    resource: Entity | None = None
    context: dict[str, Any] | None = None


class EvaluationsOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    evaluations_semantic: Literal["execute_all", "deny_on_first_deny", "permit_on_first_permit"] = "execute_all"
    tenantguard_context: bool = Field(
        False, description="tenantguard's extension: each entry's answer also carries its context (decision_id, "
                           "bundle_revision; reasons and reason_admin on a deny). Off by default: the entries are "
                           "bare {\"decision\": ...} as the AuthZEN interop tables expect them (a malformed entry "
                           "always carries context.error)")


class EvaluationsRequest(BaseModel):
    """AuthZEN 1.0 Access Evaluations (boxcar) request: top-level members are defaults."""

    model_config = ConfigDict(extra="ignore")
    subject: Entity | None = None
    action: Action | None = None
    resource: Entity | None = None
    context: dict[str, Any] | None = None
    evaluations: list[EvaluationItem] | None = None
    options: EvaluationsOptions | None = None
    at_least: ConsistencyToken | None = None  # for every evaluation of the request


class EvaluationsResponse(BaseModel):
    evaluations: list[EvaluationResponse] | None = None
    decision: bool | None = None
    context: dict[str, Any] | None = None


class OpaDataRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    input: dict[str, Any] | None = None


class SearchPage(BaseModel):
    """AuthZEN 1.0 search pagination: ``token`` from the previous page's ``next_token``."""

    model_config = ConfigDict(extra="allow")
    token: Annotated[str, Field(max_length=1024)] | None = None
    limit: int | None = Field(default=None, strict=True, ge=0,
                              description="Results per page (default 100, at most 1000). A JSON integer: true, "
                                          "\"2\" or 2.0 are refused, not read as 1 or 2")


class SubjectSearchRequest(BaseModel):
    """Which subjects of ``subject.type`` may perform ``action`` on ``resource`` (type and id)."""

    model_config = ConfigDict(extra="ignore")
    subject: Entity
    action: Action
    resource: Entity
    context: dict[str, Any] | None = None
    page: SearchPage | None = None
    at_least: ConsistencyToken | None = None  # tenantguard's extension, as for checks


class ResourceSearchRequest(BaseModel):
    """Which resources of ``resource.type`` the subject may perform ``action`` on."""

    model_config = ConfigDict(extra="ignore")
    subject: Entity | None = None
    action: Action
    resource: Entity
    context: dict[str, Any] | None = None
    page: SearchPage | None = None
    at_least: ConsistencyToken | None = None  # tenantguard's extension, as for checks


class ActionSearchRequest(BaseModel):
    """Which actions the subject may perform on ``resource``."""

    model_config = ConfigDict(extra="ignore")
    subject: Entity | None = None
    resource: Entity
    context: dict[str, Any] | None = None
    page: SearchPage | None = None
    at_least: ConsistencyToken | None = None  # tenantguard's extension, as for checks


class SearchResponse(BaseModel):
    results: list[dict[str, Any]]
    page: dict[str, Any]
    context: dict[str, Any] | None = None


class LookupResourcesRequest(ResourceSearchRequest):
    pass


class LookupSubjectsRequest(SubjectSearchRequest):
    pass


class FilterRequest(BaseModel):
    """The values of ``resource.properties[attribute]`` the subject may act on, for a
    list endpoint's own query; candidates are the ids of objects of type ``via``."""

    model_config = ConfigDict(extra="ignore")
    subject: Entity | None = None
    action: Action
    resource: Entity
    context: dict[str, Any] | None = None
    attribute: Name
    via: Name | None = None
    at_least: ConsistencyToken | None = None


class LookupResponse(BaseModel):
    results: list[str]
    next_token: str
    relations_seq: int
    bundle_revision: str | None
    partial: bool
    broadened: bool


class FilterResponse(BaseModel):
    attribute: str
    values: list[str]
    include_null: bool
    any_value: bool
    relations_seq: int
    bundle_revision: str | None
