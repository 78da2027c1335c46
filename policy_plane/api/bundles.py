"""Bundle API: upload a tar.gz (signed by the plane's bundle key, or unsigned for the plane to
sign; either way compiled and tested first), and list the active revision of every scope."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from tenantguard.errors import InvalidInput
from tenantguard.rollout import parse_stages

from .auth import Principal, plane_of, require_admin

UPLOAD_PATH = "/v1/bundles"  # bodies here get the (larger) bundle size bound
router = APIRouter(prefix=UPLOAD_PATH, tags=["bundles"])

_UPLOAD_DOC = {
    "requestBody": {
        "required": True,
        "description": "An OPA bundle archive (tar.gz): compiled and its Rego tests run (unless skip_tests); "
                       "unsigned, then signed by the plane.",
        "content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}},
    }
}


@router.post("", openapi_extra=_UPLOAD_DOC)
async def upload(
    request: Request,
    who: Annotated[Principal, Depends(require_admin)],
    stages: Annotated[str | None, Query(
        max_length=4096, description="Start a staged rollout instead: scopes per stage, stages separated by ';', "
        "e.g. billing;orders,reports;all. Stage 0 is announced now, the others by POST "
        "/v1/rollouts/{id}/advance")] = None,
    impact: Annotated[Literal["off", "report", "enforce"] | None, Query(
        description="Replay the plane's decision sample against the candidate first: report the flips, or "
        "enforce (409 impact_undeclared_flips). Can only make the plane's --impact-gate stricter")] = None,
    max_undeclared: Annotated[int | None, Query(ge=0, description="With impact=enforce: undeclared flips "
                                                "tolerated (never more than the plane's setting)")] = None,
    shadow: Annotated[bool, Query(description="Announce as a SHADOW instead (signed bundle.shadow, never "
                                  "activated): sidecars evaluate it beside the active bundle and report "
                                  "disagreements")] = False,
    sample_rate: Annotated[float, Query(gt=0, le=1, description="With shadow: share of decisions judged")] = 1.0,
    max_per_second: Annotated[int, Query(gt=0, le=1000, description="With shadow: judged decisions per "
                                         "second and sidecar, at most")] = 50,
    skip_tests: Annotated[bool, Query(description="Do not run the bundle's Rego tests before publishing "
                                      "(recorded in the audit log as tests_skipped)")] = False,
) -> dict[str, Any]:
    """Publish a bundle to its scopes (``metadata.services``, default ``all``), or start a staged
    rollout (``stages``); 409 on rollback, on an open rollout, or on undeclared impact. Once a
    rollout's state is committed, a stage-0 scope whose announce fails is reported in its ``scopes``
    entry (``error``: ``code``, ``message``, ``will_retry``) and announced later by the reconciler."""
    plane = plane_of(request)
    plane.require_ready()
    archive = await request.body()  # bounded by the body-limit middleware
    if not archive:
        raise InvalidInput("send the bundle archive as the request body")
    if shadow:
        if stages is not None:
            raise InvalidInput("a shadow is not rolled out in stages; publish it, then start the rollout")
        result = await plane.bundles.publish_shadow(archive, admin=who.kind == "admin", sample_rate=sample_rate,
                                                    max_per_second=max_per_second, skip_tests=skip_tests)
        plane.audit.record(who.actor, "bundles.shadow", revision=result["revision"],
                           scopes=[s["scope"] for s in result["scopes"]], tests_passed=result["tests_passed"],
                           tests_skipped=skip_tests)
        plane.metrics.admin_changes.labels("bundles.shadow").inc()
        return result
    plan = parse_stages(stages) if stages is not None else None
    result = await plane.bundles.publish(archive, admin=who.kind == "admin", stages=plan, impact=impact,
                                         max_undeclared=max_undeclared, actor=who.actor, skip_tests=skip_tests)
    changed = [s["scope"] for s in result["scopes"] if not s.get("unchanged") and "error" not in s]
    plane.audit.record(who.actor, "bundles.publish", revision=result["revision"], serial=result["serial"],
                       scopes=[s["scope"] for s in result["scopes"]], changed=changed,
                       signed_by_plane=result["signed_by_plane"], tests_passed=result["tests_passed"],
                       tests_skipped=skip_tests, rollout=result["rollout"]["id"] if "rollout" in result else None)
    if changed:
        plane.metrics.admin_changes.labels("bundles.publish").inc()
    return result


class RollbackRequest(BaseModel):
    """Return ``scope`` to ``to`` (a revision published to it), or to the revision its active one replaced."""

    model_config = ConfigDict(extra="forbid")
    scope: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")
    to: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]{1,128}$")


@router.post("/rollback")
async def rollback(request: Request, body: RollbackRequest,
                   who: Annotated[Principal, Depends(require_admin)]) -> dict[str, Any]:
    """Announce an earlier revision's content again as a NEW revision with a newer serial (re-signed by the
    plane), so ordering protection against replayed old announces stays whole; 404 when there is no target."""
    plane = plane_of(request)
    plane.require_ready()
    result = await plane.bundles.rollback(body.scope, body.to)
    plane.audit.record(who.actor, "bundles.rollback", scope=body.scope, restored=result["restored"],
                       revision=result["revision"], rolled_back_from=result["rolled_back_from"])
    plane.metrics.admin_changes.labels("bundles.rollback").inc()
    return result


@router.get("")
async def active(request: Request) -> dict[str, Any]:
    """The active (last announced) bundle of every scope."""
    plane = plane_of(request)
    return {"scopes": [a.to_wire() for _, a in sorted(plane.state.announces.items())]}


class ShadowStop(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scope: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")


@router.post("/shadow/stop")
async def stop_shadow(request: Request, body: ShadowStop,
                      who: Annotated[Principal, Depends(require_admin)]) -> dict[str, Any]:
    """End the scope's shadow evaluation (a newer signed ``bundle.shadow`` with ``stop``)."""
    plane = plane_of(request)
    plane.require_ready()
    result = await plane.bundles.stop_shadow(body.scope)
    plane.audit.record(who.actor, "bundles.shadow_stop", scope=body.scope)
    plane.metrics.admin_changes.labels("bundles.shadow_stop").inc()
    return result
