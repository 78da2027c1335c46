"""Staged rollouts: see the current one and the fleet, advance, halt, resume or abort it.

A rollout is started by ``POST /v1/bundles?stages=...``; its state lives in JetStream
(``TG_ROLLOUTS``), so any replica answers and a restart forgets nothing. The fleet view
comes from the sidecars' ``tg.status.<service>`` reports.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Request

from .auth import Principal, plane_of, require_admin

router = APIRouter(prefix="/v1/rollouts", tags=["rollouts"])
ROLLOUT_ID = Path(pattern=r"^[A-Za-z0-9._-]{1,160}$")


@router.get("")
async def current(request: Request, who: Annotated[Principal, Depends(require_admin)]) -> dict[str, Any]:
    """The current (or last) rollout, the active announce of every scope, which sidecar runs what, and
    what this replica's reconciler did (``reconcile``: scopes it announced, left alone or fails to reach)."""
    plane = plane_of(request)
    rollout = plane.state.rollout
    return {"rollout": rollout.to_wire() if rollout else None,
            "scopes": {scope: a.to_wire() for scope, a in sorted(plane.state.announces.items())},
            "fleet": plane.fleet.summary(), "sidecars": plane.fleet.sidecars(),
            "reconcile": plane.bundles.reconciled.to_wire()}


@router.post("/{rollout_id}/{action}")
async def step(request: Request, rollout_id: Annotated[str, ROLLOUT_ID],
               action: Literal["advance", "halt", "resume", "abort"],
               who: Annotated[Principal, Depends(require_admin)]) -> dict[str, Any]:
    """``advance`` announces the next stage (409 ``rollout_conflict`` unless in progress); ``halt`` stops
    advancing until ``resume``; ``abort`` ends it where it is (roll scopes back with /v1/bundles/rollback).

    The new state is committed before the stage is announced: a scope whose announce fails is reported
    in its ``scopes`` entry (``error``: ``code``, ``message``, ``will_retry``), not as a failed request,
    and the plane's reconciler announces it (``will_retry`` false: a newer bundle holds the scope)."""
    plane = plane_of(request)
    plane.require_ready()
    result = await plane.bundles.rollout_step(rollout_id, action, who.actor)
    plane.audit.record(who.actor, f"rollouts.{action}", rollout=rollout_id, stage=result["rollout"]["stage"],
                       status=result["rollout"]["status"],
                       unannounced=[s["scope"] for s in result["scopes"] if "error" in s])
    plane.metrics.admin_changes.labels(f"rollouts.{action}").inc()
    return result
