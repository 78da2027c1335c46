"""Assembly of the sidecar's HTTP application (doors, guards, error rendering)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from tenantguard import __version__
from tenantguard.asgi import RequestGuard, install_error_handlers

from .http import authzen, exchange, native, opa_compat, ops
from .http.limits import OPEN_PATHS
from .runtime import Sidecar


def create_app(sidecar: Sidecar) -> FastAPI:
    """The FastAPI app for one sidecar; the decision-log drain runs for the app's lifetime."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        sidecar.decision_log.start()
        try:
            yield
        finally:
            await sidecar.decision_log.stop()
            await sidecar.exchange.aclose()

    app = FastAPI(
        title=f"tenantguard sidecar ({sidecar.config.service})",
        version=__version__,
        description="Local authorization decisions: native check, AuthZEN 1.0, OPA Data API, operations.",
        lifespan=lifespan,
    )
    app.state.sidecar = sidecar
    install_error_handlers(app, realm="tenantguard")
    for router in (native.router, authzen.router, opa_compat.router, ops.router, exchange.router):
        app.include_router(router)
    app.add_middleware(RequestGuard, max_body_bytes=sidecar.config.max_body_bytes,
                       loopback_only=sidecar.config.loopback_only, open_paths=OPEN_PATHS)
    return app
