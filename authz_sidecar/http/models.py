"""Wire models for the HTTP doors (pydantic, so the OpenAPI document describes them).

AuthZEN entities allow unknown members (the spec lets implementations extend them);
sizes are bounded so a request cannot make the sidecar do unbounded work.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Name = Annotated[str, Field(min_length=1, max_length=256)]
Ident = Annotated[str, Field(min_length=1, max_length=1024)]


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
    token is presented: the subject then comes from the verified token."""

    model_config = ConfigDict(extra="ignore")
    subject: Entity | None = None
    action: Action
    resource: Entity
    context: dict[str, Any] | None = None


class CheckRequest(EvaluationRequest):
    """Native check: an AuthZEN-shaped question plus an optional consistency token."""

    at_least: int | None = Field(default=None, ge=0, description="Wait until this relations sequence is applied")


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


class EvaluationsRequest(BaseModel):
    """AuthZEN 1.0 Access Evaluations (boxcar) request: top-level members are defaults."""

    model_config = ConfigDict(extra="ignore")
    subject: Entity | None = None
    action: Action | None = None
    resource: Entity | None = None
    context: dict[str, Any] | None = None
    evaluations: list[EvaluationItem] | None = None
    options: EvaluationsOptions | None = None


class EvaluationsResponse(BaseModel):
    evaluations: list[EvaluationResponse] | None = None
    decision: bool | None = None
    context: dict[str, Any] | None = None


class OpaDataRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    input: dict[str, Any] | None = None


class ErrorBody(BaseModel):
    error: str = Field(description="Stable machine-readable code")
    message: str
    detail: dict[str, Any] | None = None
