"""Assembly of the sidecar's HTTP application (doors, guards, error rendering).

Requests pass, outermost first: the request guard (loopback only, bounded bodies) ->
the hot decision doors (answered without the framework) -> the FastAPI app (operations,
token exchange, OPA GET, the OpenAPI document, and the same decision routes).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send
from tenantguard import __version__
from tenantguard.server.asgi import RequestGuard, install_error_handlers
from tenantguard.server.docs_ui import install_offline_docs

from .http import authzen, envoy_http, exchange, native, opa_api, opa_compat, ops, search
from .http.hot import HotDoors
from .http.limits import OAUTH_PATHS, OPEN_PATHS
from .http.wire import Door
from .runtime import Sidecar

REALM = "tenantguard"
HOT_DOORS: dict[str, Door] = {
    native.PATH: native.check_door,
    authzen.EVALUATION_PATH: authzen.evaluation_door,
    authzen.EVALUATIONS_PATH: authzen.evaluations_door,
}
HOT_PREFIXED: dict[str, Door] = {opa_compat.DATA_PREFIX: opa_compat.data_door}
HOT_ROUTED = ((envoy_http.served, envoy_http.check_door),)  # any method, matched on the raw target


class SidecarApp:
    """The ASGI application a sidecar serves; ``api`` is the FastAPI app behind the front."""

    def __init__(self, sidecar: Sidecar, extra_doors: dict[str, Door] | None = None) -> None:
        self.sidecar = sidecar
        self.api = create_api(sidecar)
        doors = HotDoors(self.api, sidecar, {**HOT_DOORS, **(extra_doors or {})}, HOT_PREFIXED, realm=REALM,
                         routed=HOT_ROUTED)
        self._entry: ASGIApp = RequestGuard(doors, max_body_bytes=sidecar.config.max_body_bytes,
                                            loopback_only=sidecar.config.loopback_only, open_paths=OPEN_PATHS,
                                            oauth_paths=OAUTH_PATHS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._entry(scope, receive, send)


def create_app(sidecar: Sidecar) -> SidecarApp:
    """The sidecar's ASGI application: guard, hot doors, then the FastAPI app."""
    return SidecarApp(sidecar)


def create_api(sidecar: Sidecar) -> FastAPI:
    """The FastAPI app (every route, documented, behind its own request guard); the
    decision-log drain runs for its lifetime. Serve :func:`create_app`: it answers the
    decision doors below the framework and hands this app the rest."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        sidecar.decision_log.start()
        shadow = asyncio.get_running_loop().create_task(sidecar.policy.shadow.run(), name="shadow-evaluation")
        try:
            yield
        finally:
            shadow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await shadow
            await sidecar.decision_log.stop()
            await sidecar.exchange.aclose()

    app = FastAPI(
        title=f"tenantguard sidecar ({sidecar.config.service})",
        version=__version__,
        description="Local authorization decisions: native check, AuthZEN 1.0, OPA Data API, operations.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        # A path with a trailing slash is a 404, never a 307 to a URL built from the caller's
        # Host header (and a second, framework-only way into every door).
        redirect_slashes=False,
    )
    install_offline_docs(app, title=app.title)
    app.state.sidecar = sidecar
    # Guarded on its own too, so this app is never served unguarded by mistake (the
    # front's guard has already judged what reaches it through SidecarApp: ~2 µs again).
    app.add_middleware(RequestGuard, max_body_bytes=sidecar.config.max_body_bytes,
                       loopback_only=sidecar.config.loopback_only, open_paths=OPEN_PATHS, oauth_paths=OAUTH_PATHS)
    install_error_handlers(app, realm=REALM)
    opa_api.install_opa_not_found(app)
    for router in (native.router, authzen.router, search.router, opa_compat.router, opa_api.router,
                   envoy_http.router, ops.probes, ops.router, exchange.router):
        app.include_router(router)
    return app


OPS_MAX_BODY = 1024


def create_ops_app(sidecar: Sidecar) -> ASGIApp:
    """The ops listener (``--ops-port``): ``/health``, ``/ready`` and ``/metrics`` only.

    Meant to be bound to the pod IP so the kubelet and Prometheus can reach them while
    every decision, exchange and status route stays on the loopback listener. Nothing
    here reads a token or answers a question; bodies are refused beyond 1 KiB.
    """
    app = FastAPI(title=f"tenantguard sidecar ops ({sidecar.config.service})", version=__version__,
                  docs_url=None, redoc_url=None, openapi_url=None)
    app.state.sidecar = sidecar
    install_error_handlers(app, realm=REALM)
    app.include_router(ops.probes)
    return RequestGuard(app, max_body_bytes=OPS_MAX_BODY)
