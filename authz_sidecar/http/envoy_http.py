"""Envoy's HTTP ext_authz mode (``http_service``): ``<any method> /envoy/ext_authz/<original path>``.

Envoy sends the original method, ``path_prefix`` + the original request target and the
headers its ``authorization_request.allowed_headers`` lets through (``authorization`` always;
add ``x-tenant-id`` so the claim is checked). A 2xx answer allows, and the headers named
in ``authorization_response.allowed_upstream_headers`` (``x-tenant-id``, ``x-tenant-subject``,
``x-tenantguard-decision-id``) replace the client's copies upstream; any other status
denies, and Envoy returns that status, the JSON body and the headers named in
``allowed_client_headers`` to the client.

The question and the decision are exactly the gRPC door's (``envoy_authz``). The target
is read from the raw request line (``raw_path``), never from the server's percent-decoded
``path``, so ``%2F`` and ``%2e%2e`` reach the normal-form rule as the client sent them.
The loopback guard in front applies, as to every decision door.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.types import Scope
from tenantguard.errors import InvalidInput

from ..envoy_authz import EnvoyRequest, authorize, collect_headers
from ..request_target import PathRejected
from ..runtime import Sidecar
from .models import ErrorBody
from .wire import Reply, as_route, json_reply

router = APIRouter(tags=["envoy"])
PREFIX = "/envoy/ext_authz"
RAW_PREFIX = PREFIX.encode()
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorBody} for code in (400, 401, 403)}


def served(scope: Scope) -> bool:
    """Whether the raw target is under the prefix (the decoded path alone could be forged with %2F)."""
    raw = scope.get("raw_path") or scope["path"].encode("latin-1", "replace")
    return bool(raw == RAW_PREFIX or raw.startswith(RAW_PREFIX + b"/"))


def envoy_request(scope: Scope) -> EnvoyRequest:
    """The original request Envoy describes, from the raw request line and headers."""
    if not served(scope):  # reached through the decoded path only (the FastAPI route): /envoy%2Fext_authz/...
        raise PathRejected(f"the {PREFIX} prefix must be sent unencoded", rule="prefix_encoded")
    raw = scope.get("raw_path") or scope["path"].encode("latin-1", "replace")
    target = raw[len(RAW_PREFIX):].decode("latin-1") or "/"
    if not target.startswith("/"):
        raise PathRejected("the request target must be an absolute path", rule="not_origin_form")
    query = scope.get("query_string", b"").decode("latin-1") or None
    headers = collect_headers((k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"])
    request = EnvoyRequest(method=scope["method"], target=target, headers=headers, query=query)
    # resource.properties.host: two different Host headers are refused, never the first believed
    return replace(request, host=request.header("host") or "")


async def check_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """Allow (200 + upstream headers, empty body) or deny (status + JSON body); never raises."""
    try:
        request = envoy_request(scope)
    except InvalidInput as exc:  # a refused path or a header flood
        return json_reply(exc.to_dict(), status=400)
    outcome = authorize(sidecar, request, metric="envoy_http_total")
    if outcome.allow:
        return Reply(b"", 200, [(k.encode(), v.encode("latin-1", "replace")) for k, v in outcome.upstream_headers])
    headers = [(b"www-authenticate", outcome.challenge.encode())] if outcome.challenge is not None else []
    return json_reply(outcome.body, status=outcome.http_status, headers=headers)


ALLOWED: dict[str, Any] = {
    "description": "allowed: an empty body (Envoy's http_service contract); x-tenant-id, x-tenant-subject "
                   "and x-tenantguard-decision-id headers for the upstream"}


async def ext_authz(path: str, request: Request) -> Response:
    """Envoy ``http_service`` ext_authz: the original method and target under this prefix.

    200 (empty body, ``x-tenant-id``/``x-tenant-subject``/``x-tenantguard-decision-id``)
    allows; 401/403/400 with a JSON body deny."""
    return await as_route(check_door, request)


for _method in METHODS:  # one route per method, so each has its own OpenAPI operation id
    router.add_api_route(PREFIX + "/{path:path}", ext_authz, methods=[_method], response_class=Response,
                         responses={200: ALLOWED, **ERRORS}, operation_id=f"envoy_ext_authz_{_method.lower()}")
