"""Assembly of the plane's HTTP application: routers, error rendering, body bounds."""

from __future__ import annotations

from fastapi import FastAPI
from tenantguard import __version__
from tenantguard.asgi import JsonBodies, RequestGuard, install_error_handlers
from tenantguard.docs_ui import install_offline_docs
from tenantguard.plane_client import PLANE_TITLE

from .api import admin, bundles, decisions, ops, relations, revocations, rollouts, trust
from .console import install_console
from .console.sessions import SessionStore
from .console.views import PREFIX as CONSOLE_PREFIX
from .runtime import Plane

REALM = "tenantguard-plane"


def create_app(plane: Plane) -> FastAPI:
    """The FastAPI app of one replica; the caller starts and stops ``plane`` (see server.py)."""
    app = FastAPI(
        title=PLANE_TITLE,  # clients recognise the plane by it (a wrong --plane URL gets a clear error)
        version=__version__,
        description="Relationships, signed bundles, trust keys, revocations and decision logs, over NATS JetStream.",
        docs_url=None,
        redoc_url=None,
    )
    install_offline_docs(app, title=PLANE_TITLE)
    app.state.plane = plane
    install_error_handlers(app, realm=REALM)
    for module in (relations, bundles, rollouts, trust, revocations, admin, decisions, ops):
        app.include_router(module.router)
    if plane.config.console:
        install_console(app, sessions=SessionStore(idle=plane.config.console_idle_seconds))
    # Inside the guard (added first = inner): JSON bodies are announced as JSON and bounded I-JSON.
    app.add_middleware(JsonBodies, realm=REALM, raw_paths=frozenset({bundles.UPLOAD_PATH}),
                       raw_prefixes=(CONSOLE_PREFIX + "/",))  # the console posts forms
    app.add_middleware(RequestGuard, max_body_bytes=plane.config.max_body_bytes,
                       path_limits={bundles.UPLOAD_PATH: plane.config.max_bundle_bytes})
    return app
