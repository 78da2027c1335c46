"""Errors only the plane raises; each carries its stable code and HTTP status."""

from __future__ import annotations

from tenantguard.errors import GRPC_NOT_FOUND, GRPC_PERMISSION_DENIED, GRPC_UNAUTHENTICATED, TenantGuardError


class NotFound(TenantGuardError):
    code = "not_found"
    http_status = 404
    grpc_status = GRPC_NOT_FOUND


class Unauthenticated(TenantGuardError):
    """No usable ``Authorization: Bearer`` credential was presented."""

    code = "unauthenticated"
    http_status = 401
    grpc_status = GRPC_UNAUTHENTICATED


class Forbidden(TenantGuardError):
    """A credential was presented but does not grant this action."""

    code = "forbidden"
    http_status = 403
    grpc_status = GRPC_PERMISSION_DENIED


class KeyRevoked(TenantGuardError):
    """The key's kid is revoked: it may never be trusted again (generate a new key)."""

    code = "key_revoked"
    http_status = 409


class PolicyTestsFailed(TenantGuardError):
    """The bundle's Rego tests did not all pass; ``detail.failed`` names them."""

    code = "policy_tests_failed"
    http_status = 422


class NotReady(TenantGuardError):
    """The replica has not rebuilt its state from JetStream yet (or lost it)."""

    code = "plane_not_ready"
    http_status = 503
    retryable = True


class IdempotencyKeyReused(TenantGuardError):
    """An ``Idempotency-Key`` already used for a different request; use a new key per change."""

    code = "idempotency_key_reused"
    http_status = 422
