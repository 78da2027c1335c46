"""Operational endpoints: liveness, readiness, status and Prometheus metrics."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from tenantguard.server.asgi import RETRY_AFTER

from ..runtime import Sidecar
from . import opa_api

router = APIRouter(tags=["operations"])
probes = APIRouter(tags=["operations"])  # also served on the ops listener (--ops-port)


_HEALTH_PARAMS = [
    {"name": "bundles", "in": "query", "required": False, "schema": {"type": "boolean"},
     "description": "also require an active verified bundle (OPA's bundles=true; 'bundle' is accepted too)"},
    {"name": "plugins", "in": "query", "required": False, "schema": {"type": "boolean"},
     "description": "also require every plugin (bundle, feed, decision_logs) to be OK"},
    {"name": "exclude-plugin", "in": "query", "required": False,
     "schema": {"type": "array", "items": {"type": "string"}}, "description": "plugins to leave out of plugins=true"},
]


def _flag(request: Request, name: str) -> bool:
    """OPA's ``getBoolParam``: present and empty, or any value ``true`` (case-insensitive)."""
    values = request.query_params.getlist(name)
    return values == [""] or any(v.lower() == "true" for v in values)


@probes.get("/health", openapi_extra={"parameters": _HEALTH_PARAMS})  # type: ignore[untyped-decorator]
async def health(request: Request) -> JSONResponse:
    """The process is up; with OPA's ``bundles``/``plugins`` parameters, also that it can decide.

    Plain ``/health`` says nothing about whether it can decide (``/ready`` does). OPA's
    semantics otherwise: 500 ``{"error": "one or more bundles are not activated"}`` until
    a verified bundle is active, 500 ``{"error": "one or more plugins are not up"}`` while
    a plugin not excluded by ``exclude-plugin`` is not OK.
    """
    sidecar: Sidecar = request.app.state.sidecar
    if (_flag(request, "bundles") or _flag(request, "bundle")) and not sidecar.core.ready:
        return JSONResponse({"error": "one or more bundles are not activated",
                             "message": "no verified bundle is active"}, status_code=500)
    if _flag(request, "plugins"):
        excluded = set(request.query_params.getlist("exclude-plugin"))
        down = sorted(name for name, state in opa_api.plugin_states(sidecar).items()
                      if state != "OK" and name not in excluded)
        if down:
            return JSONResponse({"error": "one or more plugins are not up",
                                 "message": f"not OK: {', '.join(down)}"}, status_code=500)
    return JSONResponse({"status": "ok"})


@probes.get("/health/live")  # type: ignore[untyped-decorator]
async def health_live(request: Request) -> JSONResponse:
    """OPA's custom health path as liveness probes copied from OPA's docs use it: 200 ``{}`` while the
    process answers (OPA evaluates ``data.system.health.live`` there; a sidecar has no such rule)."""
    return JSONResponse({})


@probes.get("/health/ready")  # type: ignore[untyped-decorator]
async def health_ready(request: Request) -> JSONResponse:
    """OPA's custom readiness path: 200 ``{}`` when ``/ready`` is 200, else OPA's 500 with ``error``
    (OPA answers a failed health check 500, not 503)."""
    sidecar: Sidecar = request.app.state.sidecar
    if sidecar.ready:
        return JSONResponse({})
    return JSONResponse({"error": "health check (ready) failed",
                         "message": sidecar.readiness.reason() or "not ready"}, status_code=500)


@probes.get("/ready")  # type: ignore[untyped-decorator]
async def ready(request: Request) -> JSONResponse:
    """Ready only once nothing holds decisions (a fed sidecar has replayed its revocations stream to
    its end), a verified bundle is active (before that every decision would deny), the plane runs the
    same cell count, and a scoped sidecar has loaded every cell in its scope. A 503 names why in
    ``reason``, a stable code (``revocations_not_synced``, ``no_active_bundle``, ``cell_count_mismatch``,
    ``cells_not_bootstrapped``)."""
    sidecar: Sidecar = request.app.state.sidecar
    if sidecar.ready:
        return JSONResponse({"status": "ready", "bundle_revision": sidecar.bundle_revision})
    readiness = sidecar.readiness
    return JSONResponse({"status": "not_ready", "error": "not_ready", "reason": readiness.reason_code() or "not_ready",
                         "message": readiness.reason() or "not ready"}, status_code=503,
                        headers=RETRY_AFTER)


@router.get("/v1/status")  # type: ignore[untyped-decorator]
async def status(request: Request) -> dict[str, Any]:
    """The sidecar's status; ``result`` is OPA's status snapshot, for OPA clients' ``get_status``."""
    sidecar: Sidecar = request.app.state.sidecar
    return {**sidecar.status(), "result": opa_api.opa_status(sidecar)}


@router.get("/v1/relations/digest")  # type: ignore[untyped-decorator]
async def relations_digest(request: Request) -> dict[str, Any]:
    """SHA-256 of the local relations index and its sequence, as the plane's ``GET /v1/relations/digest``.

    On demand only (a full pass over the index), over a frozen view in a worker thread.
    """
    sidecar: Sidecar = request.app.state.sidecar
    view = sidecar.relations.view()
    return {"seq": view.seq, "count": view.count, "digest": await asyncio.to_thread(view.digest)}


@probes.get("/metrics")  # type: ignore[untyped-decorator]
async def metrics(request: Request) -> Response:
    sidecar: Sidecar = request.app.state.sidecar
    return Response(generate_latest(sidecar.metrics.registry), media_type=CONTENT_TYPE_LATEST)
