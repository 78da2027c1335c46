"""OPA Data API door: ``POST/GET /v1/data/{path}`` with OPA's response shape.

Existing OPA clients (opa-python-client, OPA SDKs, Envoy's OPA plugin users) keep
working: they ask for their decision rule and get ``{"result": ..., "decision_id": ...}``.
Only the decision entrypoint (and its members, e.g. ``.../allow``) is exposed, and it
runs through the same decision core as every other door, built-in checks included;
other documents (raw data, helper rules) are not served, so the door cannot be used to
read another tenant's data out of the bundle.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from starlette.types import Scope
from tenantguard.asgi import header
from tenantguard.errors import InvalidInput, TenantGuardError
from tenantguard.jsonlimits import loads_object

from ..runtime import Sidecar
from .models import ErrorBody, OpaDataRequest
from .wire import Reply, as_route, json_reply, parse_json, request_body_doc

router = APIRouter(tags=["opa-compatible"])
ERRORS = {400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 404: {"model": ErrorBody}, 415: {"model": ErrorBody}}
MAX_PATH = 512
DATA_PREFIX = "/v1/data/"


class PathNotExposed(TenantGuardError):
    code = "path_not_exposed"
    http_status = 404


def _member(sidecar: Sidecar, path: str) -> str | None:
    """'' for the decision document itself, the member name for ``.../allow``, else None."""
    entry = sidecar.decision_entrypoint.removeprefix("data.").replace(".", "/")
    path = path.strip("/")
    if path == entry:
        return ""
    if path.startswith(entry + "/") and path.count("/") == entry.count("/") + 1:
        return path.rsplit("/", 1)[1]
    return None


def _answer(sidecar: Sidecar, path: str, input_doc: dict[str, Any] | None, authorization: str | None) -> dict[str, Any]:
    if len(path) > MAX_PATH:
        raise InvalidInput("path too long")
    member = _member(sidecar, path)
    if member is None:
        raise PathNotExposed(f"only the decision document {sidecar.decision_entrypoint} is served here")
    if input_doc is None:
        raise InvalidInput("an input document is required", field="input")
    claims = sidecar.authenticate(authorization)
    decision = sidecar.decide(input_doc, claims, door="opa")
    document = {"allow": decision.allow, "reasons": list(decision.reasons), "high_risk": decision.high_risk}
    body: dict[str, Any] = {"decision_id": decision.decision_id}
    if member == "":
        body["result"] = document
    elif member in document:
        body["result"] = document[member]
    # an unknown member is an undefined document: OPA answers 200 without "result"
    return body


async def data_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """``post_data`` below, as a framework-free door (see ``wire.Door``)."""
    document = parse_json(scope, body, OpaDataRequest)
    path = scope["path"].removeprefix(DATA_PREFIX)
    return json_reply(_answer(sidecar, path, document.input, header(scope, b"authorization")))


@router.post(DATA_PREFIX + "{path:path}", responses=ERRORS,
             openapi_extra=request_body_doc(OpaDataRequest))  # type: ignore[untyped-decorator]
async def post_data(path: str, request: Request) -> Response:
    """OPA's ``POST /v1/data/{path}`` with ``{"input": {...}}`` (AuthZEN-shaped input)."""
    return await as_route(data_door, request)


@router.get(DATA_PREFIX + "{path:path}", responses=ERRORS)  # type: ignore[untyped-decorator]
async def get_data(
    path: str,
    request: Request,
    input: Annotated[str | None, Query(max_length=16384, description="URL-encoded JSON input")] = None,
    authorization: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    """OPA's ``GET /v1/data/{path}?input=<json>``."""
    # The same bounded I-JSON rules as a POST body (nesting, duplicate keys, numbers).
    input_doc = loads_object(input) if input is not None else None
    return _answer(request.app.state.sidecar, path, input_doc, authorization)
