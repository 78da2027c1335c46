"""OPA Data API door: ``POST/GET /v1/data/{path}`` with OPA's response shape.

Existing OPA clients (opa-python-client, OPA SDKs, Envoy's OPA plugin users) keep
working: they ask for their decision rule and get ``{"result": ..., "decision_id": ...}``.
Only the decision entrypoint (and its members, e.g. ``.../allow``) is exposed, and it
runs through the same decision core as every other door, built-in checks included;
other documents (raw data, helper rules, ``/v1/data`` itself) are not served, so the
door cannot be used to read another tenant's data out of the bundle.

OPA's behaviour kept: a request without ``input`` is evaluated with input undefined
(here: a deny, ``input_missing``, since no tenant can be checked; POST adds OPA's
``api_usage_warning``); ``metrics``/``instrument`` add OPA-named timers in ns,
``provenance`` the bundle revision, ``pretty`` indents; ``explain`` has no trace to give
and says so in ``warning`` instead of being silently dropped. Errors are OPA's
``{"code", "message"}`` plus tenantguard's ``error`` (``opa_api.opa_error_reply``).
The query string is only parsed when there is one: the plain decision POST stays hot.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request, Response
from starlette.types import Scope
from tenantguard import __version__
from tenantguard.decision.core import Decision
from tenantguard.errors import InvalidInput, TenantGuardError
from tenantguard.server.asgi import decoded_body
from tenantguard.util.jsonlimits import loads_object

from ..runtime import Sidecar
from .models import OpaDataRequest
from .opa_api import BUNDLE_NAME, OPA_ERRORS, opa_error_reply
from .wire import (
    Reply,
    as_route,
    authorization,
    json_reply,
    parse_json,
    request_body_doc,
    require_json,
    require_local_or_credential,
)

router = APIRouter(tags=["opa-compatible"])
ERRORS = OPA_ERRORS
MAX_PATH = 512
MAX_GET_INPUT = 16384
DATA_ROOT = "/v1/data"
DATA_PREFIX = DATA_ROOT + "/"
EXPLAIN_MODES = frozenset({"notes", "fails", "full", "debug"})
NO_INPUT_WARNING = "'input' key missing from the request"  # OPA's types.MsgInputKeyMissing


class PathNotExposed(TenantGuardError):
    code = "path_not_exposed"
    http_status = 404


@dataclass(frozen=True, slots=True)
class DataOptions:
    """OPA's Data API query parameters, read with OPA's ``getBoolParam`` rules."""

    metrics: bool = False
    provenance: bool = False
    pretty: bool = False
    explain: str | None = None
    input: str | None = None  # GET only: the one ``input`` parameter, JSON

    @classmethod
    def parse(cls, query_string: bytes) -> DataOptions:
        """Refuses (400) raw non-ASCII bytes, percent-escapes that are not UTF-8 and a repeated
        ``input``: each would let the sidecar read another question than a proxy, a log or the
        client did (U+FFFD or Latin-1 in place of the bytes sent; the first input or the last)."""
        try:
            params = parse_qs(query_string.decode("ascii"), keep_blank_values=True, max_num_fields=64,
                              errors="strict")
        except UnicodeDecodeError:
            raise InvalidInput("the query string must be ASCII with UTF-8 percent-escapes", field="query") from None
        except ValueError:
            raise InvalidInput("too many query parameters") from None

        def flag(name: str) -> bool:  # present and empty, or any value "true" (case-insensitive)
            values = params.get(name, [])
            return values == [""] or any(v.lower() == "true" for v in values)

        explain = next((v for v in params.get("explain", ()) if v in EXPLAIN_MODES), None)
        inputs = params.get("input")
        if inputs is not None and len(inputs) > 1:
            raise InvalidInput("the input parameter may appear once", field="input")
        return cls(metrics=flag("metrics") or flag("instrument"), provenance=flag("provenance"),
                   pretty=flag("pretty"), explain=explain, input=inputs[0] if inputs else None)


NO_OPTIONS = DataOptions()


def _member(sidecar: Sidecar, path: str) -> str | None:
    """'' for the decision document itself, the member name for ``.../allow``, else None."""
    entry = sidecar.policy.decision_entrypoint.removeprefix("data.").replace(".", "/")
    path = path.strip("/")
    if path == entry:
        return ""
    if path.startswith(entry + "/") and path.count("/") == entry.count("/") + 1:
        return path.rsplit("/", 1)[1]
    return None


def _no_input_decision(sidecar: Sidecar) -> Decision:
    """OPA evaluates with input undefined; here nothing names a tenant, so it is a deny
    without evaluating the policy (as the core denies before policy on a failed check)."""
    sidecar.metrics.record("opa", False, 0.0)
    return Decision(allow=False, reasons=("input_missing",), decision_id=uuid.uuid4().hex,
                    bundle_revision=sidecar.bundle_revision, relations_seq=sidecar.relations.applied_seq)


def _answer(sidecar: Sidecar, scope: Scope, input_doc: dict[str, Any] | None, options: DataOptions,
            timers: dict[str, int] | None, path: str | None = None) -> dict[str, Any]:
    path = _path_of(scope) if path is None else path
    if len(path) > MAX_PATH:
        raise InvalidInput("path too long")
    member = _member(sidecar, path)
    if member is None:
        raise PathNotExposed(f"only the decision document {sidecar.policy.decision_entrypoint} is served here")
    claims = sidecar.authenticate(authorization(scope))
    require_local_or_credential(scope, claims, None)
    start = time.perf_counter_ns() if timers is not None else 0
    decision = sidecar.decide(input_doc, claims, door="opa") if input_doc is not None else _no_input_decision(sidecar)
    if timers is not None:
        timers["timer_rego_query_eval_ns"] = time.perf_counter_ns() - start
    document = {"allow": decision.allow, "reasons": list(decision.reasons), "high_risk": decision.high_risk}
    body: dict[str, Any] = {"decision_id": decision.decision_id}
    if member == "":
        body["result"] = document
    elif member in document:
        body["result"] = document[member]
    # an unknown member is an undefined document: OPA answers 200 without "result"
    if options.provenance:
        revision = decision.bundle_revision
        body["provenance"] = {"version": __version__,
                              "bundles": {BUNDLE_NAME: {"revision": revision}} if revision else {}}
    return body


def _reply(body: dict[str, Any], options: DataOptions, timers: dict[str, int] | None,
           warnings: list[str]) -> Reply:
    if options.explain is not None:
        warnings.append(f"explain={options.explain} is not supported: the embedded engine records no trace")
    if warnings:
        body["warning"] = {"code": "api_usage_warning", "message": "; ".join(warnings)}
    if timers is not None:
        body["metrics"] = timers
    if options.pretty:
        return Reply(json.dumps(body, indent=2).encode())
    return json_reply(body)


def _path_of(scope: Scope) -> str:
    return str(scope["path"])[len(DATA_ROOT):]


async def data_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """``post_data`` below, as a framework-free door (see ``wire.Door``)."""
    query = scope.get("query_string", b"")
    try:
        if not query:  # the hot path: no options, no timers
            document = parse_json(scope, body, OpaDataRequest, limit=sidecar.config.max_body_bytes)
            answer = _answer(sidecar, scope, document.input, NO_OPTIONS, None)
            if document.input is None:
                answer["warning"] = {"code": "api_usage_warning", "message": NO_INPUT_WARNING}
            return json_reply(answer)
        options = DataOptions.parse(query)
        timers: dict[str, int] | None = {} if options.metrics else None
        start = time.perf_counter_ns()
        document = parse_json(scope, body, OpaDataRequest, limit=sidecar.config.max_body_bytes)
        if timers is not None:
            timers["timer_rego_input_parse_ns"] = time.perf_counter_ns() - start
        answer = _answer(sidecar, scope, document.input, options, timers)
        if timers is not None:
            timers["timer_server_handler_ns"] = time.perf_counter_ns() - start
        return _reply(answer, options, timers, [NO_INPUT_WARNING] if document.input is None else [])
    except TenantGuardError as exc:
        return opa_error_reply(exc, scope)


def _get_input(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    if len(raw) > MAX_GET_INPUT:
        raise InvalidInput(f"input exceeds {MAX_GET_INPUT} characters", field="input")
    # The same bounded I-JSON rules as a POST body (nesting, duplicate keys, numbers).
    return loads_object(raw)


async def data_get(sidecar: Sidecar, scope: Scope) -> Reply:
    """OPA's ``GET /v1/data/{path}?input=<json>``: no ``input`` means input undefined."""
    try:
        options = DataOptions.parse(scope.get("query_string", b""))
        timers: dict[str, int] | None = {} if options.metrics else None
        start = time.perf_counter_ns()
        input_doc = _get_input(options.input)
        if timers is not None:
            timers["timer_rego_input_parse_ns"] = time.perf_counter_ns() - start
        answer = _answer(sidecar, scope, input_doc, options, timers)
        if timers is not None:
            timers["timer_server_handler_ns"] = time.perf_counter_ns() - start
        return _reply(answer, options, timers, [])
    except TenantGuardError as exc:
        return opa_error_reply(exc, scope)


# --------------------------------------------------------------------------- v0 Data API, default decision

V0_DATA_ROOT = "/v0/data"


class UndefinedDocument(TenantGuardError):
    """OPA's 404 for an undefined document where the answer has no ``result`` wrapper to leave out."""

    code = "undefined_document"
    opa_code = "undefined_document"  # OPA's own code for it (types.CodeUndefinedDocument)
    http_status = 404


def _raw_input(sidecar: Sidecar, scope: Scope, body: bytes) -> dict[str, Any]:
    """The body itself is the input (OPA's v0 Data API and ``POST /``): bounded I-JSON, an object."""
    require_json(scope)
    return loads_object(decoded_body(scope, body, sidecar.config.max_body_bytes))


def _raw_reply(sidecar: Sidecar, scope: Scope, body: bytes, path: str, what: str) -> Reply:
    """The decision document (or member) itself, as OPA answers these APIs: no ``result`` wrapper,
    a 404 ``undefined_document`` for an undefined member."""
    try:
        options = DataOptions.parse(scope.get("query_string", b""))
        answer = _answer(sidecar, scope, _raw_input(sidecar, scope, body), NO_OPTIONS, None, path)
        if "result" not in answer:
            raise UndefinedDocument(f"document missing or undefined: {what}")
        if options.pretty:
            return Reply(json.dumps(answer["result"], indent=2).encode())
        return Reply(json.dumps(answer["result"], separators=(",", ":")).encode())
    except TenantGuardError as exc:
        return opa_error_reply(exc, scope)


async def v0_data_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """OPA's v0 Data API (webhooks, older integrations): ``POST /v0/data/{path}`` with the input as the
    body, answered with the document itself; an undefined document is 404 ``undefined_document``."""
    path = str(scope["path"])[len(V0_DATA_ROOT):]
    return _raw_reply(sidecar, scope, body, path, "data." + path.strip("/").replace("/", "."))


async def default_decision_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """OPA's ``POST /`` ("Execute a Simple Query", the OPA SDKs' default-policy call): the input as the
    body, the configured default decision (``/v1/config``: this sidecar's decision document) as the
    answer. It was a 404 while ``/v1/config`` named the decision as the default."""
    entry = sidecar.policy.decision_entrypoint
    return _raw_reply(sidecar, scope, body, "/" + entry.removeprefix("data.").replace(".", "/"), entry)


@router.post(V0_DATA_ROOT + "/{path:path}", responses=ERRORS)  # type: ignore[untyped-decorator]
async def post_v0_data(path: str, request: Request) -> Response:
    """OPA's ``POST /v0/data/{path}``: the body is the input, the answer the document itself."""
    return await as_route(v0_data_door, request)


@router.post("/", responses=ERRORS)  # type: ignore[untyped-decorator]
async def post_default_decision(request: Request) -> Response:
    """OPA's ``POST /``: the decision document for the input in the body (OPA's default decision)."""
    return await as_route(default_decision_door, request)


_PARAMS = [
    {"name": "input", "in": "query", "required": False, "schema": {"type": "string", "maxLength": MAX_GET_INPUT},
     "description": "URL-encoded JSON input (GET only); absent = input undefined (a deny, input_missing)"},
    {"name": "metrics", "in": "query", "required": False, "schema": {"type": "boolean"},
     "description": "add OPA-named timers in ns (timer_rego_query_eval_ns, ...)"},
    {"name": "instrument", "in": "query", "required": False, "schema": {"type": "boolean"},
     "description": "same as metrics"},
    {"name": "provenance", "in": "query", "required": False, "schema": {"type": "boolean"},
     "description": "add the tenantguard version and the bundle revision"},
    {"name": "pretty", "in": "query", "required": False, "schema": {"type": "boolean"}},
    {"name": "explain", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "not supported: answered with a warning, no explanation"},
]


@router.post(DATA_PREFIX + "{path:path}", responses=ERRORS,
             openapi_extra={**request_body_doc(OpaDataRequest), "parameters": _PARAMS[1:]})  # type: ignore[untyped-decorator]
async def post_data(path: str, request: Request) -> Response:
    """OPA's ``POST /v1/data/{path}`` with ``{"input": {...}}`` (AuthZEN-shaped input)."""
    return await as_route(data_door, request)


@router.post(DATA_ROOT, responses=ERRORS, include_in_schema=False)  # type: ignore[untyped-decorator]
async def post_data_root(request: Request) -> Response:
    """The whole ``data`` document: not served (404, as for any other document)."""
    return await as_route(data_door, request)


@router.get(DATA_PREFIX + "{path:path}", responses=ERRORS,
            openapi_extra={"parameters": _PARAMS})  # type: ignore[untyped-decorator]
async def get_data(path: str, request: Request) -> Response:
    """OPA's ``GET /v1/data/{path}?input=<json>``."""
    return (await data_get(request.app.state.sidecar, request.scope)).response()


@router.get(DATA_ROOT, responses=ERRORS, include_in_schema=False)  # type: ignore[untyped-decorator]
async def get_data_root(request: Request) -> Response:
    return (await data_get(request.app.state.sidecar, request.scope)).response()
