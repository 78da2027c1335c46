"""Envoy / Istio external authorization: ``envoy.service.auth.v3.Authorization/Check``.

Uses the generated protos from ``xds-protos``. The door always needs a context token
(``authorization: Bearer ...``). An HTTP request is mapped onto the same AuthZEN-shaped
question every other door asks:

- action: ``route:read`` for GET/HEAD/OPTIONS, ``route:write`` otherwise, with method
  and path in ``action.properties`` (policies may match on them);
- resource: ``{"type": "route", "id": <path>}``; a tenant named by the path
  (``/tenants/<t>/...`` by default) or by an ``x-tenant-id`` header becomes
  ``resource.properties.tenant_id``, so the built-in tenant check compares it with the
  token's tenant instead of trusting it.

Allowed requests go upstream with ``x-tenant-id``/``x-tenant-subject`` set by the
sidecar from the verified token (client copies overwritten); denied ones get 403 (401
for a missing or invalid token) and a JSON body.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from typing import Any

import grpc
from envoy.config.core.v3 import base_pb2
from envoy.service.auth.v3 import external_auth_pb2 as pb
from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc
from envoy.type.v3 import http_status_pb2
from google.rpc import code_pb2, status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from tenantguard.errors import InvalidInput, TokenError

from .runtime import Sidecar

log = logging.getLogger(__name__)

DEFAULT_TENANT_PATH = re.compile(r"^/tenants/(?P<tenant>[^/?#]+)")
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
TENANT_HEADER = "x-tenant-id"
SUBJECT_HEADER = "x-tenant-subject"
SERVICE_NAME = "envoy.service.auth.v3.Authorization"


def question_for(http: Any, tenant_path: re.Pattern[str] = DEFAULT_TENANT_PATH) -> dict[str, Any]:
    """The AuthZEN-shaped question for one HTTP request seen by Envoy."""
    method = (http.method or "GET").upper()
    path = http.path or "/"
    headers = {k.lower(): v for k, v in http.headers.items()}
    named = {t for t in (_path_tenant(path, tenant_path), headers.get(TENANT_HEADER)) if t}
    properties: dict[str, Any] = {"host": http.host}
    if len(named) > 1:  # the path and the header disagree: nobody can be that tenant
        properties["tenant_id"] = "\x00conflicting"
    elif named:
        properties["tenant_id"] = named.pop()
    return {
        "action": {"name": "route:read" if method in READ_METHODS else "route:write",
                   "properties": {"method": method, "path": path}},
        "resource": {"type": "route", "id": path.split("?", 1)[0], "properties": properties},
        "context": {"transport": "envoy"},
    }


def _path_tenant(path: str, pattern: re.Pattern[str]) -> str | None:
    match = pattern.match(path)
    return match.group("tenant") if match else None


def _bearer(http: Any) -> str | None:
    for name, value in http.headers.items():
        if name.lower() == "authorization":
            return str(value)
    return None


def _header(key: str, value: str) -> base_pb2.HeaderValueOption:
    return base_pb2.HeaderValueOption(
        header=base_pb2.HeaderValue(key=key, value=value),
        append_action=base_pb2.HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD,
    )


def denied(http_code: int, rpc_code: int, body: dict[str, Any]) -> pb.CheckResponse:
    return pb.CheckResponse(
        status=status_pb2.Status(code=rpc_code, message=str(body.get("error", "denied"))),
        denied_response=pb.DeniedHttpResponse(
            status=http_status_pb2.HttpStatus(code=http_code),
            headers=[_header("content-type", "application/json")],
            body=json.dumps(body),
        ),
    )


class ExtAuthzServicer(pb_grpc.AuthorizationServicer):
    """The Check door; runs on the same event loop as the HTTP doors (grpc.aio)."""

    def __init__(self, sidecar: Sidecar, tenant_path: re.Pattern[str] = DEFAULT_TENANT_PATH) -> None:
        self.sidecar = sidecar
        self.tenant_path = tenant_path

    async def Check(self, request: pb.CheckRequest, context: grpc.aio.ServicerContext) -> pb.CheckResponse:
        return self.check(request)

    def check(self, request: pb.CheckRequest) -> pb.CheckResponse:
        """Synchronous core of the door (also used by the benchmark)."""
        http = request.attributes.request.http
        start = time.perf_counter()
        try:
            authorization = _bearer(http)
            if not authorization:
                return denied(401, code_pb2.UNAUTHENTICATED,
                              {"error": "token_missing", "message": "a context token is required"})
            claims = self.sidecar.authenticate(authorization)
            decision = self.sidecar.decide(question_for(http, self.tenant_path), claims, door="envoy")
        except TokenError as exc:
            return denied(401, code_pb2.UNAUTHENTICATED, exc.to_dict())
        except InvalidInput as exc:
            return denied(400, code_pb2.INVALID_ARGUMENT, exc.to_dict())
        except Exception:  # fail closed, never a traceback to Envoy
            log.exception("ext_authz check failed closed")
            return denied(403, code_pb2.PERMISSION_DENIED, {"error": "internal_error"})
        finally:
            self.sidecar.metrics.latency.labels("envoy_total").observe(time.perf_counter() - start)
        if not decision.allow:
            return denied(403, code_pb2.PERMISSION_DENIED, {
                "error": "forbidden", "reasons": list(decision.reasons), "decision_id": decision.decision_id})
        return pb.CheckResponse(
            status=status_pb2.Status(code=code_pb2.OK),
            ok_response=pb.OkHttpResponse(
                headers=[_header(TENANT_HEADER, claims.tenant_id), _header(SUBJECT_HEADER, claims.sub),
                         _header("x-tenantguard-decision-id", decision.decision_id)],
            ),
        )


@dataclass
class GrpcDoor:
    """The running gRPC server with its health servicer (SERVING once a bundle is active)."""

    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer

    async def set_ready(self, ready: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if ready else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", SERVICE_NAME):
            await self.health.set(name, status)


async def start_grpc(sidecar: Sidecar, host: str, port: int) -> GrpcDoor:
    """Start the Check service and the standard health service on ``host:port`` (0 = any free port)."""
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", 1 << 20)])
    pb_grpc.add_AuthorizationServicer_to_server(ExtAuthzServicer(sidecar), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    await server.start()
    door = GrpcDoor(server, bound, health_servicer)
    await door.set_ready(sidecar.core.ready)
    return door
