"""Operational endpoints: liveness, readiness, status and Prometheus metrics."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..runtime import Sidecar

router = APIRouter(tags=["operations"])
probes = APIRouter(tags=["operations"])  # also served on the ops listener (--ops-port)


@probes.get("/health")  # type: ignore[untyped-decorator]
async def health() -> dict[str, str]:
    """The process is up (says nothing about whether it can decide)."""
    return {"status": "ok"}


@probes.get("/ready")  # type: ignore[untyped-decorator]
async def ready(request: Request) -> JSONResponse:
    """Ready only once a verified bundle is active: before that every decision would deny."""
    sidecar: Sidecar = request.app.state.sidecar
    if sidecar.ready:
        return JSONResponse({"status": "ready", "bundle_revision": sidecar.bundle_revision})
    return JSONResponse({"status": "not_ready", "error": "not_ready", "message": "no verified bundle is active"},
                        status_code=503)


@router.get("/v1/status")  # type: ignore[untyped-decorator]
async def status(request: Request) -> dict[str, Any]:
    sidecar: Sidecar = request.app.state.sidecar
    return sidecar.status()


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
