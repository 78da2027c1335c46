"""OpenAPI pages (``/docs``, ``/redoc``) that work offline: assets served by the app itself.

FastAPI's defaults load Swagger UI and ReDoc from a CDN (and ReDoc Google Fonts), so the
pages are blank on the networks these services usually run in. The assets come from the
``fastapi-offline`` package (Swagger UI 5, Apache-2.0; ReDoc, MIT), served under
:data:`ASSETS_PATH`; create the app with ``docs_url=None, redoc_url=None`` and call
:func:`install_offline_docs`.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_PATH: Final = "/_docs-assets"
DOCS_PATH: Final = "/docs"
REDOC_PATH: Final = "/redoc"


def assets_dir() -> str:
    """The directory of the packaged Swagger UI and ReDoc files."""
    return str(files("fastapi_offline") / "static")


def install_offline_docs(app: FastAPI, *, title: str) -> None:
    """Serve ``/docs`` and ``/redoc`` with local assets (the app's ``openapi_url`` must be set)."""
    openapi_url = app.openapi_url or "/openapi.json"
    app.mount(ASSETS_PATH, StaticFiles(directory=assets_dir()), name="docs-assets")

    @app.get(DOCS_PATH, include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=openapi_url, title=f"{title} - Swagger UI",
                                   swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
                                   swagger_favicon_url=f"{ASSETS_PATH}/favicon.png")

    @app.get(REDOC_PATH, include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=openapi_url, title=f"{title} - ReDoc",
                              redoc_js_url=f"{ASSETS_PATH}/redoc.standalone.js",
                              redoc_favicon_url=f"{ASSETS_PATH}/favicon.png", with_google_fonts=False)
