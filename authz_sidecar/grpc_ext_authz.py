"""Envoy / Istio external authorization: ``envoy.service.auth.v3.Authorization/Check``.

Uses the generated protos from ``xds-protos``. The door always needs a context token
(``authorization: Bearer ...``). The request is mapped onto the same AuthZEN-shaped
question every other door asks by ``envoy_authz`` (shared with the HTTP ``http_service``
door, so both decide alike); the path must be in normal form (``request_target``).

Headers are read from both forms Envoy sends: the ``headers`` map and, with
``encode_raw_headers: true``, ``header_map`` (values in ``raw_value`` bytes).

Allowed requests go upstream with ``x-tenant-id``/``x-tenant-subject`` set by the
sidecar from the verified token (client copies overwritten); denied ones get 403 (401
for a missing or invalid token, 400 for a refused path) and a JSON body.

The standard health service follows the sidecar's readiness both ways (SERVING while a
verified bundle is active), driven by the sidecar's readiness signal with a short
bounded poll as a backstop, so a bundle that arrives over NATS is seen at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

import grpc
from envoy.config.core.v3 import base_pb2
from envoy.service.auth.v3 import external_auth_pb2 as pb
from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc
from envoy.type.v3 import http_status_pb2
from google.rpc import code_pb2, status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from tenantguard.errors import ConfigError, InvalidInput
from tenantguard.server.serving import GrpcLimits, bind_tcp

from .config import DEFAULT_GRPC_MAX_MESSAGE_BYTES
from .envoy_authz import (
    DEFAULT_TENANT_PATH,
    SUBJECT_HEADER,
    TENANT_HEADER,
    DuplicateHeader,
    EnvoyRequest,
    Outcome,
    authorize,
    collect_headers,
)
from .envoy_authz import question_for as _question_for
from .runtime import Sidecar

log = logging.getLogger(__name__)

SERVICE_NAME = "envoy.service.auth.v3.Authorization"
READINESS_POLL = 0.5  # seconds: the backstop for a readiness change nobody signalled
__all__ = ["DEFAULT_TENANT_PATH", "SERVICE_NAME", "SUBJECT_HEADER", "TENANT_HEADER", "ExtAuthzServicer",
           "GrpcDoor", "envoy_request", "question_for", "start_grpc"]


def envoy_request(http: Any) -> EnvoyRequest:
    """An ``AttributeContext.HttpRequest`` as the doors' neutral request (both header forms)."""
    pairs = list(http.headers.items())
    for entry in http.header_map.headers:
        pairs.append((entry.key, entry.raw_value.decode("latin-1") if entry.raw_value else entry.value))
    headers = collect_headers(pairs)
    for stated, pseudo in ((http.path, ":path"), (http.method, ":method"), (http.host, ":authority")):
        refuse_disagreement(stated, pseudo, headers.get(pseudo, ()))
    target = http.path or next(iter(headers.get(":path", ())), "/")
    method = http.method or next(iter(headers.get(":method", ())), "GET")
    host = http.host or next(iter(headers.get(":authority", ())), "")
    return EnvoyRequest(method=method, target=target, headers=headers, host=host,
                        query=http.query or None, fragment=http.fragment)


def refuse_disagreement(field: str, pseudo: str, values: tuple[str, ...]) -> None:
    """:class:`DuplicateHeader` when a request field and its pseudo-header say different things.

    Why: Envoy fills both from one header map, so they never differ in a genuine check; if
    they do, the decision would judge ``path`` while whatever routes on ``:path`` serves
    another target (``/tenants/acme/x`` decided, ``/tenants/globex/x`` served).
    """
    if len(set(values)) > 1 or (field and values and values[0] != field):
        raise DuplicateHeader(f"the {pseudo} pseudo-header disagrees with the request's {pseudo[1:]}",
                              header=pseudo)


def question_for(http: Any, tenant_path: re.Pattern[str] = DEFAULT_TENANT_PATH) -> dict[str, Any]:
    """The AuthZEN-shaped question for one HTTP request seen by Envoy (PathRejected on a bad path)."""
    return _question_for(envoy_request(http), tenant_path)


def _header(key: str, value: str) -> base_pb2.HeaderValueOption:
    return base_pb2.HeaderValueOption(
        header=base_pb2.HeaderValue(key=key, value=value),
        append_action=base_pb2.HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD,
    )


def denied(http_code: int, rpc_code: int, body: dict[str, Any], challenge: str | None = None) -> pb.CheckResponse:
    headers = [_header("content-type", "application/json")]
    if challenge is not None:
        headers.append(_header("www-authenticate", challenge))
    return pb.CheckResponse(
        status=status_pb2.Status(code=rpc_code, message=str(body.get("error", "denied"))),
        denied_response=pb.DeniedHttpResponse(
            status=http_status_pb2.HttpStatus(code=http_code),
            headers=headers,
            body=json.dumps(body),
        ),
    )


def check_response(outcome: Outcome) -> pb.CheckResponse:
    if not outcome.allow:
        return denied(outcome.http_status, outcome.rpc_code, outcome.body, outcome.challenge)
    return pb.CheckResponse(
        status=status_pb2.Status(code=code_pb2.OK),
        ok_response=pb.OkHttpResponse(headers=[_header(k, v) for k, v in outcome.upstream_headers]),
    )


class ExtAuthzServicer(pb_grpc.AuthorizationServicer):
    """The Check door; runs on the same event loop as the HTTP doors (grpc.aio)."""

    def __init__(self, sidecar: Sidecar, tenant_path: re.Pattern[str] = DEFAULT_TENANT_PATH) -> None:
        self.sidecar = sidecar
        self.tenant_path = tenant_path

    async def Check(self, request: pb.CheckRequest, context: grpc.aio.ServicerContext) -> pb.CheckResponse:
        return self.check(request)

    def check(self, request: pb.CheckRequest) -> pb.CheckResponse:
        """Synchronous core of the door (also used by the benchmark); never raises."""
        try:
            envoy = envoy_request(request.attributes.request.http)
        except InvalidInput as exc:  # a header flood: refused with its own code
            return denied(400, code_pb2.INVALID_ARGUMENT, exc.to_dict())
        except Exception:  # fail closed on a request we cannot even read
            log.exception("ext_authz request unreadable; denied")
            return denied(400, code_pb2.INVALID_ARGUMENT, {"error": "invalid_request"})
        return check_response(authorize(self.sidecar, envoy, self.tenant_path))


@dataclass
class GrpcDoor:
    """The running gRPC server with its health servicer, which follows the sidecar's readiness."""

    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    follower: asyncio.Task[None] | None = field(default=None)

    async def set_ready(self, ready: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if ready else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", SERVICE_NAME):
            await self.health.set(name, status)

    async def follow_readiness(self, sidecar: Sidecar, poll: float = READINESS_POLL) -> None:
        """Mirror ``sidecar.ready`` into the health service until cancelled.

        Woken by ``sidecar.readiness.changed`` (set on every bundle swap); the bounded
        ``poll`` catches any change made without the signal. The flag is cleared before
        readiness is read, so a change between the two is never lost.
        """
        shown: bool | None = None
        while True:
            sidecar.readiness.changed.clear()
            ready = sidecar.ready
            if ready != shown:
                try:
                    await self.set_ready(ready)
                except Exception:  # keep following: the next round tries again
                    log.exception("gRPC health status update failed")
                else:
                    shown = ready
                    log.info("gRPC health: %s", "SERVING" if ready else "NOT_SERVING")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(sidecar.readiness.changed.wait(), poll)

    async def stop(self, grace: float) -> None:
        """Report NOT_SERVING for good, then drain the server."""
        if self.follower is not None:
            self.follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.follower
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace=grace)


async def start_grpc(sidecar: Sidecar, host: str, port: int, *,
                     max_message_bytes: int = DEFAULT_GRPC_MAX_MESSAGE_BYTES,
                     limits: GrpcLimits | None = None) -> GrpcDoor:
    """Start the Check service and the standard health service on ``host:port`` (0 = any free port).

    ``grpc.so_reuseport`` is off: gRPC turns SO_REUSEPORT on by default, and then a second
    sidecar (or a stale one from an earlier run) binds the same port without error and the
    kernel spreads Envoy's checks across both, each deciding from its own policy and data.
    A taken port is a :class:`~tenantguard.errors.ConfigError` naming it, as for HTTP.

    ``max_message_bytes`` bounds one Check. It was 1 MiB: a client's 2 MiB body under Envoy's
    ``with_request_body`` made the Check a RESOURCE_EXHAUSTED error before any decision, and
    Envoy with ``failure_mode_allow: true`` let a request the sidecar denies through (with
    ``false``: ``status_on_error`` instead of the sidecar's 403). The door never reads the body;
    the bound only has to exceed what Envoy is configured to send.

    ``limits`` (:class:`~tenantguard.server.serving.GrpcLimits`): streams per connection, idle and
    age bounds with GOAWAY, keepalive; without them a connection lived until its client ended it.
    """
    if port:  # a taken port refused here, in our words, before gRPC's C core logs its own line about it
        bind_tcp(host, port, flag="--grpc-port", door="gRPC ext_authz").close()
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", max_message_bytes),
                                      ("grpc.so_reuseport", 0), *(limits or GrpcLimits()).options()])
    pb_grpc.add_AuthorizationServicer_to_server(ExtAuthzServicer(sidecar), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError:  # taken since the check above; grpc says only "Failed to bind", its log line the reason
        raise ConfigError(f"cannot listen on {host}:{port} (gRPC ext_authz): the port is in use or the address "
                          "is not this machine's; choose another --grpc-port (0 picks a free one)") from None
    door = GrpcDoor(server, bound, health_servicer)
    await door.set_ready(sidecar.ready)  # before the first caller can ask
    await server.start()
    door.follower = asyncio.create_task(door.follow_readiness(sidecar), name="grpc-health-readiness")
    return door
