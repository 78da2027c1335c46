"""Assembly of the plane's HTTP application: routers, error rendering, body bounds.

Requests pass, outermost first: the request guard (bounded bodies) -> the hot write
doors (``api/hot.py``: writes answered without the framework, unless ``fast_writes`` is
off) -> the FastAPI app (every route, the OpenAPI document, its own guard and JSON checks).
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import ASGIApp
from tenantguard import __version__
from tenantguard.client.plane import PLANE_TITLE
from tenantguard.server.asgi import JsonBodies, RequestGuard, install_error_handlers
from tenantguard.server.docs_ui import install_offline_docs

from .api import admin, bundles, decisions, ops, relations, revocations, rollouts, trust
from .api.hot import Door, HotWrites
from .console import install_console
from .console.sessions import SessionStore
from .console.views import PREFIX as CONSOLE_PREFIX
from .runtime import Plane

REALM = "tenantguard-plane"
HOT_WRITES: dict[str, Door] = {
    relations.PREFIX + relations.WRITE_PATH: relations.write_door,
    revocations.PREFIX + revocations.WRITE_PATH: revocations.revoke_door,
}


def create_server_app(plane: Plane) -> ASGIApp:
    """What a replica serves: the guard, the hot write doors, then :func:`create_app` (which alone
    is served when ``fast_writes`` is off)."""
    api = create_app(plane)
    if not plane.config.fast_writes:
        return api
    doors = HotWrites(api, plane, HOT_WRITES, realm=REALM)
    return RequestGuard(doors, max_body_bytes=plane.config.max_body_bytes,
                        path_limits={bundles.UPLOAD_PATH: plane.config.max_bundle_bytes})


def create_app(plane: Plane) -> FastAPI:
    """The FastAPI app of one replica (every route, documented); the caller starts and stops
    ``plane`` (see server.py, which serves it behind :func:`create_server_app`)."""
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
