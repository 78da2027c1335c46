"""Operations: liveness, readiness, status and Prometheus metrics (no credentials needed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from tenantguard.server.asgi import RETRY_AFTER

from .auth import plane_of

router = APIRouter(tags=["operations"])


@router.get("/health")
async def health() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/ready")
async def ready(request: Request) -> JSONResponse:
    """Ready once connected to NATS and the state is rebuilt from JetStream."""
    plane = plane_of(request)
    if plane.ready:
        return JSONResponse({"status": "ready", "relations_seq": plane.state.index.applied_seq})
    return JSONResponse({"status": "not_ready", "error": "plane_not_ready", "bootstrapped": plane.bootstrapped,
                         "nats_connected": plane.publisher.connected}, status_code=503,
                        headers=RETRY_AFTER)


@router.get("/v1/status")
async def status(request: Request) -> dict[str, Any]:
    return plane_of(request).status()


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    return Response(generate_latest(plane_of(request).metrics.registry), media_type=CONTENT_TYPE_LATEST)
