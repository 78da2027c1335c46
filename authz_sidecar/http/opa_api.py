"""The rest of OPA's REST API around the Data API door, so OPA clients work unchanged.

What an OPA client (opa-python-client, OPA SDKs, scripts) sends besides ``/v1/data``:

* **Policy API, read side** (``GET /v1/policies``, ``GET /v1/policies/{id}``): the active
  bundle's Rego modules, ids ``tenantguard/<file>`` as OPA names bundle modules. ``ast``
  is a head-only subset of OPA's AST (package path, each rule's head ``name``/``ref``,
  ``default``): enough for clients that list packages and rules; the full source is ``raw``.
* **Writes** (``PUT``/``DELETE /v1/policies/...``, ``PUT``/``PATCH``/``DELETE /v1/data/...``):
  refused as OPA refuses writes under bundle-owned roots (400 ``invalid_parameter``,
  ``path ... is owned by bundle "tenantguard"``). Policy and data come only from signed
  bundles; a runtime write would be an unsigned policy.
* **Query and Compile APIs** (``/v1/query``, ``/v1/compile``): refused as OPA's
  authorization policy refuses a request (401 ``unauthorized``). An ad hoc query is
  arbitrary Rego: it would skip the built-in checks (token, tenant match), read every
  tenant's ``data`` and call ``tg.related`` with no tenant bound. Partial evaluation
  would hand out policy residue with the same data, and regorus does not implement it.
* **Config API** (``GET /v1/config``): OPA's shape, no secrets and no file paths.

Every refusal is OPA's error body ``{"code", "message"}`` plus tenantguard's stable
``error`` code, so both kinds of client can read it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

import regorus
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope
from tenantguard import __version__
from tenantguard.errors import TenantGuardError
from tenantguard.server.asgi import error_response, header, http_error_headers

from ..runtime import Sidecar
from .wire import Reply, json_reply

log = logging.getLogger(__name__)
router = APIRouter(tags=["opa-compatible"])
BUNDLE_NAME = "tenantguard"
"""The name OPA would give the sidecar's one bundle: policy ids and provenance use it."""
REALM = "tenantguard"  # the sidecar's RFC 6750 realm (authz_sidecar.app.REALM)

# OPA's error codes (server/types: CodeInvalidParameter, ...) by HTTP status.
OPA_CODES = {400: "invalid_parameter", 401: "unauthorized", 404: "resource_not_found", 405: "invalid_operation",
             409: "resource_conflict", 413: "invalid_parameter", 415: "invalid_parameter"}


class OpaErrorBody(BaseModel):
    """OPA's error body, with tenantguard's stable code alongside."""

    code: str = Field(description="OPA's error code (invalid_parameter, unauthorized, resource_not_found, ...)")
    message: str
    error: str = Field(description="tenantguard's stable machine-readable code")
    detail: dict[str, Any] | None = None


OPA_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": OpaErrorBody}, 401: {"model": OpaErrorBody}, 404: {"model": OpaErrorBody},
    415: {"model": OpaErrorBody}}


class BundleOwned(TenantGuardError):
    """A write under the bundle's roots (or anywhere: only signed bundles carry policy)."""

    code = "bundle_owned"
    http_status = 400


class OpaApiDisabled(TenantGuardError):
    """An OPA API this sidecar does not serve, refused as OPA's authorization policy would."""

    code = "opa_api_disabled"
    http_status = 401


class PolicyNotFound(TenantGuardError):
    code = "policy_not_found"
    http_status = 404


def opa_error_reply(exc: TenantGuardError, scope: Scope | None = None) -> Reply:
    """``exc`` as OPA's error body (``code`` + ``message``) with tenantguard's ``error``,
    and the same headers the sidecar's other errors carry (401 challenge, Retry-After)."""
    request_id = header(scope, b"x-request-id") if scope is not None else None
    framework = error_response(exc, realm=REALM, request_id=request_id)
    headers = [(k, v) for k, v in framework.raw_headers if k not in (b"content-length", b"content-type")]
    opa_code = getattr(exc, "opa_code", None) or OPA_CODES.get(exc.http_status, "internal_error")
    body = {"code": opa_code, **exc.to_dict()}
    return json_reply(body, status=exc.http_status, headers=headers)


def opa_error(exc: TenantGuardError, request: Request) -> Response:
    return opa_error_reply(exc, request.scope).response()


OPA_PATH_PREFIXES = ("/v1/data", "/v0/data", "/v1/policies", "/v1/query", "/v1/compile", "/v1/config")


def is_opa_path(path: str) -> bool:
    """Paths OPA clients call: their errors carry OPA's ``code`` as well, even those the framework
    raises before any route runs (a 404 for a path no route matches, a 405)."""
    return any(path == p or path.startswith(p + "/") for p in OPA_PATH_PREFIXES)


def install_opa_not_found(app: FastAPI) -> None:
    """Framework 404/405s under OPA's paths in OPA's shape (after ``install_error_handlers``,
    which renders every other path)."""

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        error = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        body: dict[str, Any] = {"error": error, "message": str(exc.detail)}
        if is_opa_path(request.url.path):
            body = {"code": OPA_CODES.get(exc.status_code, "internal_error"), **body}
        return JSONResponse(body, status_code=exc.status_code, headers=http_error_headers(request, exc))


# --------------------------------------------------------------------------- Policy API


@dataclass(frozen=True, slots=True)
class PolicyModule:
    id: str
    raw: str
    ast: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "raw": self.raw, "ast": self.ast}


_catalog: dict[str, tuple[PolicyModule, ...]] = {}  # bundle content digest -> modules (a few entries)


async def policy_modules(sidecar: Sidecar) -> tuple[PolicyModule, ...]:
    """The active bundle's modules, parsed once per bundle content.

    Parsing costs a few ms per module (~60 ms for the example bundle), so the first
    call after an activation parses in a worker thread: decisions keep flowing meanwhile.
    """
    active = sidecar.policy.bundles.active
    if active is None:
        return ()
    cached = _catalog.get(active.digest)
    if cached is None:
        modules = sorted(active.bundle.modules.items())
        cached = await asyncio.to_thread(
            lambda: tuple(PolicyModule(f"{BUNDLE_NAME}/{path.lstrip('/')}", raw, _safe_head_ast(path, raw))
                          for path, raw in modules))
        if len(_catalog) >= 4:
            _catalog.clear()
        _catalog[active.digest] = cached
    return cached


def head_ast(path: str, raw: str) -> dict[str, Any]:
    """A head-only subset of OPA's JSON AST: package path and rule heads, no bodies.

    Built from regorus' own AST (a different shape) so clients reading OPA's
    ``ast.package.path[].value`` and ``ast.rules[].head.name`` find them.
    """
    engine = regorus.Engine()
    engine.add_policy(path, raw)  # the module compiled when the bundle was activated
    module = json.loads(engine.get_ast_as_json())[0]["ast"]
    package = [{"type": "var", "value": "data"}] + [
        {"type": "string", "value": part} for part in _ref_parts(module["package"]["refr"])]
    rules = []
    for rule in module.get("rules", []):
        kind, body = next(iter(rule.items()))
        if kind == "Spec":
            head = next(iter(body["head"].values()))
        elif kind == "Default":
            head = body
        else:
            continue
        parts = _ref_parts(head["refr"])
        ref = [{"type": "var", "value": parts[0]}] + [{"type": "string", "value": p} for p in parts[1:]]
        wire: dict[str, Any] = {"head": {"ref": ref}}
        if len(parts) == 1:
            wire["head"]["name"] = parts[0]
        if kind == "Default":
            wire["default"] = True
        rules.append(wire)
    return {"package": {"path": package}, "rules": rules}


def _safe_head_ast(path: str, raw: str) -> dict[str, Any]:
    """``head_ast``, or ``{}`` (logged) should regorus' AST ever not have the expected shape:
    the listing stays readable, ``raw`` is still the source."""
    try:
        return head_ast(path, raw)
    except Exception:
        log.warning("no ast for policy %s", path, exc_info=True)
        return {}


def _ref_parts(refr: dict[str, Any]) -> list[str]:
    """``a.b["c"]`` in regorus' AST as ``["a", "b", "c"]`` (non-literal parts as ``_``)."""
    kind, node = next(iter(refr.items()))
    if kind == "Var":
        return [node["value"]]
    if kind == "RefDot":
        return [*_ref_parts(node["refr"]), node["field"][1]]
    if kind == "RefBrack":
        index = node.get("index", {})
        literal = index.get("String", {}).get("value") if isinstance(index, dict) else None
        return [*_ref_parts(node["refr"]), literal if isinstance(literal, str) else "_"]
    return ["_"]


async def _find(sidecar: Sidecar, policy_id: str) -> PolicyModule:
    for module in await policy_modules(sidecar):
        if module.id == policy_id:
            return module
    raise PolicyNotFound(f'storage_not_found_error: policy id "{policy_id}"')


@router.get("/v1/policies", responses=OPA_ERRORS)  # type: ignore[untyped-decorator]
@router.get("/v1/policies/", include_in_schema=False)  # type: ignore[untyped-decorator]
async def list_policies(request: Request) -> Response:
    """OPA's ``GET /v1/policies``: the active bundle's Rego modules (empty before one is active)."""
    modules = await policy_modules(request.app.state.sidecar)
    return json_reply({"result": [m.to_wire() for m in modules]}).response()


@router.get("/v1/policies/{policy_id:path}", responses=OPA_ERRORS)  # type: ignore[untyped-decorator]
async def get_policy(policy_id: str, request: Request) -> Response:
    """OPA's ``GET /v1/policies/{id}``: one module of the active bundle."""
    try:
        module = await _find(request.app.state.sidecar, policy_id)
        return json_reply({"result": module.to_wire()}).response()
    except TenantGuardError as exc:
        return opa_error(exc, request)


_PACKAGE = re.compile(r"^\s*package\s+([A-Za-z_][\w.]*)", re.MULTILINE)


def write_refusal(sidecar: Sidecar, path: str) -> BundleOwned:
    """OPA's answer to a write under a bundle's roots (``checkPathScope``), for any path:
    outside the roots OPA would accept it, this sidecar still refuses (no unsigned policy)."""
    path = path.strip("/")
    active = sidecar.policy.bundles.active
    roots = active.bundle.manifest.roots if active is not None else ()
    if not path and roots:
        return BundleOwned("can't write to document root with bundle roots configured")
    if "" in roots:
        return BundleOwned(f'all paths owned by bundle "{BUNDLE_NAME}"')
    parts = path.split("/")
    for root in roots:
        root_parts = root.split("/")
        if all(a == b for a, b in zip(parts, root_parts, strict=False)):
            return BundleOwned(f'path {path} is owned by bundle "{BUNDLE_NAME}"')
    return BundleOwned(f"path {path or '/'} is not writable: a tenantguard sidecar takes policy and data "
                       "only from signed bundles")


@router.put("/v1/policies/{policy_id:path}", responses=OPA_ERRORS)  # type: ignore[untyped-decorator]
async def put_policy(policy_id: str, request: Request) -> Response:
    """Refused: policies come only from signed bundles (OPA's answer for bundle-owned roots)."""
    sidecar: Sidecar = request.app.state.sidecar
    source = (await request.body()).decode("utf-8", "replace")
    return opa_error(write_refusal(sidecar, _package_path(source, policy_id)), request)


def _package_path(source: str, fallback: str) -> str:
    """The module's package as a data path (``tenantguard/exchange``), as OPA scopes a write."""
    package = _PACKAGE.search(source)
    return package.group(1).removeprefix("data.").replace(".", "/") if package else fallback


@router.delete("/v1/policies/{policy_id:path}", responses=OPA_ERRORS)  # type: ignore[untyped-decorator]
async def delete_policy(policy_id: str, request: Request) -> Response:
    """Refused as for ``PUT``; an unknown id is OPA's 404."""
    sidecar: Sidecar = request.app.state.sidecar
    try:
        module = await _find(sidecar, policy_id)
    except TenantGuardError as exc:
        return opa_error(exc, request)
    return opa_error(write_refusal(sidecar, _package_path(module.raw, policy_id)), request)


async def write_data(path: str, request: Request) -> Response:
    """Refused: ``data`` comes only from signed bundles (OPA's answer for bundle-owned roots)."""
    return opa_error(write_refusal(request.app.state.sidecar, path), request)


async def write_data_root(request: Request) -> Response:
    """Refused as for a path: the document root is the bundle's."""
    return opa_error(write_refusal(request.app.state.sidecar, ""), request)


for _method in ("PUT", "PATCH", "DELETE"):  # one route per method: stable operation ids in the OpenAPI document
    router.add_api_route("/v1/data/{path:path}", write_data, methods=[_method], responses=OPA_ERRORS,
                         operation_id=f"opa_data_{_method.lower()}")
    router.add_api_route("/v1/data", write_data_root, methods=[_method], responses=OPA_ERRORS,
                         operation_id=f"opa_data_root_{_method.lower()}")


# --------------------------------------------------------------------------- Query, Compile


@router.post("/v1/query", responses=OPA_ERRORS, operation_id="opa_query_post")  # type: ignore[untyped-decorator]
@router.get("/v1/query", responses=OPA_ERRORS, operation_id="opa_query_get")  # type: ignore[untyped-decorator]
async def query(request: Request) -> Response:
    """Refused (401 ``unauthorized``, as OPA's authorization policy refuses): an ad hoc query
    is arbitrary Rego outside the decision core's tenant checks."""
    return opa_error(OpaApiDisabled(
        "request rejected by administrative policy: ad hoc queries are disabled on a tenantguard sidecar "
        "(arbitrary Rego would bypass the token and tenant checks and read every tenant's data); "
        "ask POST /v1/data/<decision> instead"), request)


@router.post("/v1/compile", responses=OPA_ERRORS)  # type: ignore[untyped-decorator]
@router.post("/v1/compile/{path:path}", responses=OPA_ERRORS,
             operation_id="opa_compile_filters_post")  # type: ignore[untyped-decorator]
@router.get("/v1/compile/{path:path}", responses=OPA_ERRORS,
            operation_id="opa_compile_filters_get")  # type: ignore[untyped-decorator]
async def compile_query(request: Request) -> Response:
    """Refused like ``/v1/query``: partial evaluation would return residue holding other
    tenants' data, outside the tenant checks (and regorus has no partial evaluation)."""
    return opa_error(OpaApiDisabled(
        "request rejected by administrative policy: the Compile API (partial evaluation) is not served by a "
        "tenantguard sidecar"), request)


# --------------------------------------------------------------------------- Config, status


@router.get("/v1/config")  # type: ignore[untyped-decorator]
async def config(request: Request) -> dict[str, Any]:
    """OPA's ``GET /v1/config``: the active configuration in OPA's terms.

    No secrets and no file paths (key files, state directory, client secrets): kids and
    algorithms only, as OPA's own ``ActiveConfig`` drops credentials and key material.
    """
    sidecar: Sidecar = request.app.state.sidecar
    cfg = sidecar.config
    active = sidecar.policy.bundles.active
    bundle: dict[str, Any] = {"resource": "nats" if cfg.nats_url else "file", "persist": cfg.state_dir is not None,
                              "signing": {"keyid": active.bundle.kid if active else None}}
    return {"result": {
        "labels": {"id": cfg.service, "version": __version__, "service": cfg.service},
        "default_decision": "/" + sidecar.policy.decision_entrypoint.removeprefix("data.").replace(".", "/"),
        "bundles": {BUNDLE_NAME: bundle},
        "decision_logs": {"subject": cfg.decision_log_subject if cfg.nats_url else None},
        "server": {"loopback_only": cfg.loopback_only, "require_token": cfg.require_token,
                   "token_algorithms": sorted(cfg.algorithms)},
    }}


def plugin_states(sidecar: Sidecar) -> dict[str, str]:
    """OPA's plugin states for this sidecar: ``bundle`` (a verified bundle is active),
    ``feed`` (NATS feed live, or file-fed), ``decision_logs`` (never blocks: always OK)."""
    feed = sidecar.feed_state
    return {
        "bundle": "OK" if sidecar.core.ready else "NOT_READY",
        "feed": "OK" if feed in ("file", "live") else "NOT_READY" if feed in ("connecting", "resyncing") else "WARN",
        "decision_logs": "OK",
    }


def opa_status(sidecar: Sidecar) -> dict[str, Any]:
    """OPA's status snapshot (``GET /v1/status`` ``result``) for OPA clients' ``get_status``."""
    revision = sidecar.bundle_revision
    return {
        "labels": {"id": sidecar.config.service, "version": __version__},
        "bundles": {BUNDLE_NAME: {"name": BUNDLE_NAME, "active_revision": revision}} if revision else {},
        "plugins": {name: {"state": state} for name, state in plugin_states(sidecar).items()},
    }
