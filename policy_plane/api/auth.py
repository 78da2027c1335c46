"""Who is calling: the admin (bearer admin token) or a sidecar (bearer join secret).

Dependencies fail closed: a missing credential is 401, a wrong one 403, and neither the
presented value nor its hash is ever logged. The admin token and join secrets are
checked against scrypt hashes (:mod:`policy_plane.secrets`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from fastapi import Request

from ..errors import Forbidden, Unauthenticated
from ..runtime import Plane

SERVICE_HEADER = "x-tenantguard-service"


@dataclass(frozen=True, slots=True)
class Principal:
    kind: Literal["admin", "operator", "sidecar"]
    name: str

    @property
    def actor(self) -> str:
        return self.kind if self.kind != "sidecar" else f"sidecar:{self.name}"


ADMIN: Final = Principal("admin", "admin")


def plane_of(request: Request) -> Plane:
    plane: Plane = request.app.state.plane
    return plane


def bearer(request: Request) -> str:
    """The bearer token of the request's one ``Authorization`` header. Two or more are 401:
    which one counts differs between proxies and frameworks (first or last), so a request
    that carries two credentials is refused rather than read one way here and another way
    by whatever stands in front."""
    values = request.headers.getlist("authorization")
    if len(values) > 1:
        raise Unauthenticated("send one Authorization header, not several")
    return bearer_value(values[0] if values else "")


def bearer_value(header: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` header value; 401 when there is none."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Unauthenticated("send Authorization: Bearer <token>")
    return value.strip()


def known_admin(plane: Plane, authorization: str | None) -> Principal | None:
    """The admin, when ``authorization`` carries the admin token this replica has verified before
    (and still remembers); None otherwise, for :func:`require_admin` to decide (scrypt, refusal,
    metrics). For doors answered below the framework: they never refuse on their own."""
    if not authorization:
        return None
    try:
        token = bearer_value(authorization)
    except Unauthenticated:
        return None
    return ADMIN if plane.config.admin.known(token) else None


async def require_admin(request: Request) -> Principal:
    plane = plane_of(request)
    if not await plane.config.admin.check(bearer(request)):
        plane.metrics.auth_failures.labels("admin").inc()
        raise Forbidden("the credential is not the admin token")
    return ADMIN


async def require_operator(request: Request) -> Principal:
    """Read-only operations (decision records, explain): the admin token or the operator token
    (``--operator-token-file``), which grants reading and nothing else."""
    plane = plane_of(request)
    token = bearer(request)
    if await plane.config.admin.check(token):
        return Principal("admin", "admin")
    operator = plane.config.operator
    if operator is not None and await operator.check(token):
        return Principal("operator", "operator")
    plane.metrics.auth_failures.labels("operator").inc()
    raise Forbidden("the credential is neither the admin nor the operator token")


async def require_sidecar(request: Request, service: str) -> Principal:
    plane = plane_of(request)
    token = bearer(request)
    checker = plane.config.join_secrets.get(service)
    if checker is None:
        plane.metrics.auth_failures.labels("join_secret").inc()
        raise Forbidden("no join secret is configured for this service")
    if not await checker.check(token):
        plane.metrics.auth_failures.labels("join_secret").inc()
        raise Forbidden(f"wrong join secret for service {service}")
    return Principal("sidecar", service)


async def require_reader(request: Request) -> Principal:
    """The admin, or a sidecar naming its service in ``X-Tenantguard-Service`` (authoritative checks)."""
    service = request.headers.get(SERVICE_HEADER)
    if service:
        return await require_sidecar(request, service)
    return await require_admin(request)
