"""Typed errors with stable codes and their transport mapping.

Every error a caller can see is a subclass of :class:`TenantGuardError`. The class
carries its own stable ``code`` (machine-readable, never renamed), its HTTP status and
its gRPC status code (as the integer from ``google.rpc.Code`` so the library does not
import grpc), and whether a retry can help. Services render ``to_dict()``; they never
show a traceback to a caller.
"""

from __future__ import annotations

from typing import Any, ClassVar

# google.rpc.Code values, kept as ints so the library stays free of grpc imports.
GRPC_INVALID_ARGUMENT = 3
GRPC_NOT_FOUND = 5
GRPC_PERMISSION_DENIED = 7
GRPC_FAILED_PRECONDITION = 9
GRPC_UNAVAILABLE = 14
GRPC_INTERNAL = 13
GRPC_UNAUTHENTICATED = 16


class TenantGuardError(Exception):
    """Base of every tenantguard error; ``code`` is the stable machine-readable name."""

    code: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500
    grpc_status: ClassVar[int] = GRPC_INTERNAL
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable body sent to callers (no traceback, no secrets)."""
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.detail:
            body["detail"] = self.detail
        return body

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ConfigError(TenantGuardError):
    """A setting is missing, out of bounds or inconsistent; fix the configuration."""

    code = "config_invalid"
    http_status = 500


class KeyMaterialError(TenantGuardError):
    """A key file or JWK cannot be read, has the wrong type or unsafe permissions."""

    code = "key_invalid"
    http_status = 400
    grpc_status = GRPC_INVALID_ARGUMENT


class InvalidInput(TenantGuardError):
    """The request is malformed or breaks a documented limit."""

    code = "invalid_request"
    http_status = 400
    grpc_status = GRPC_INVALID_ARGUMENT


class NotFound(TenantGuardError):
    """Nothing is served at this path (the framework's own 404 body, from a route that decided so)."""

    code = "not_found"
    http_status = 404


class PayloadTooLarge(InvalidInput):
    code = "payload_too_large"
    http_status = 413


# --------------------------------------------------------------------------- tokens


class TokenError(TenantGuardError):
    """The context token cannot be trusted; the caller must present a valid one."""

    code = "token_invalid"
    http_status = 401
    grpc_status = GRPC_UNAUTHENTICATED


class TokenMissing(TokenError):
    code = "token_missing"


class TokenMalformed(TokenError):
    code = "token_malformed"


class TokenTooLarge(TokenError):
    code = "token_too_large"


class AlgorithmNotAllowed(TokenError):
    code = "algorithm_not_allowed"


class UnknownKey(TokenError):
    code = "unknown_kid"


class SignatureInvalid(TokenError):
    code = "signature_invalid"


class TokenExpired(TokenError):
    code = "token_expired"


class TokenNotYetValid(TokenError):
    code = "token_not_yet_valid"


class AudienceInvalid(TokenError):
    code = "audience_invalid"


class IssuerNotTrusted(TokenError):
    code = "issuer_not_trusted"


class ClaimMissing(TokenError):
    code = "claim_missing"


class ClaimInvalid(TokenError):
    code = "claim_invalid"


class ActorChainTooDeep(TokenError):
    code = "actor_chain_too_deep"


class ActorMismatch(ClaimInvalid):
    """A sidecar-issued token (``iss: sidecar:X``) whose current actor is not ``svc:X``."""

    code = "actor_mismatch"


class TokenRevoked(TokenError):
    code = "token_revoked"


# --------------------------------------------------------------------------- bundles


class BundleRejected(TenantGuardError):
    """A policy bundle failed verification; the active bundle stays in force.

    ``file`` names the archive member at fault when there is one.
    """

    code = "bundle_rejected"
    http_status = 422
    grpc_status = GRPC_FAILED_PRECONDITION

    def __init__(self, message: str, *, file: str | None = None, **detail: Any) -> None:
        if file is not None:
            detail["file"] = file
        super().__init__(message, **detail)
        self.file = file


class BundleMalformed(BundleRejected):
    code = "bundle_malformed"


class BundleSignatureInvalid(BundleRejected):
    code = "bundle_signature_invalid"


class BundleUnknownKey(BundleRejected):
    code = "bundle_unknown_key"


class BundleFileUnsigned(BundleRejected):
    code = "bundle_file_unsigned"


class BundleFileMissing(BundleRejected):
    code = "bundle_file_missing"


class BundleHashMismatch(BundleRejected):
    code = "bundle_hash_mismatch"


class BundleUnsafePath(BundleRejected):
    code = "bundle_unsafe_path"


class BundleTooLarge(BundleRejected):
    code = "bundle_too_large"
    http_status = 413


class BundleRollback(BundleRejected):
    code = "bundle_rollback"
    http_status = 409


class PolicyError(TenantGuardError):
    """The policy could not be compiled or evaluated; decisions fail closed."""

    code = "policy_error"
    http_status = 500


# --------------------------------------------------------------------------- decisions


class Unavailable(TenantGuardError):
    """A dependency (NATS, the plane, the sidecar) cannot be reached right now."""

    code = "unavailable"
    http_status = 503
    grpc_status = GRPC_UNAVAILABLE
    retryable = True


class NatsAuthorizationRefused(Unavailable):
    """NATS refused our credentials: retrying the same ones will not help, fix them."""

    code = "nats_authorization_refused"
    retryable = False


class NatsTlsRefused(Unavailable):
    """The TLS handshake with NATS failed (untrusted certificate, name mismatch, no client cert)."""

    code = "nats_tls_refused"
    retryable = False


class PlaneTlsRefused(Unavailable):
    """The TLS handshake with the policy plane failed (a certificate that does not chain to the CA
    given, a name it does not carry, a client certificate the plane requires or refuses): never
    retried, never answered over plain HTTP instead; only a change of configuration helps."""

    code = "plane_tls_refused"
    retryable = False


class PlaneRefused(Unavailable):
    """A loopback address refused the connection to the policy plane: nothing listens there, so
    waiting and retrying (20 s by default) only delays the answer; the address is named."""

    code = "plane_refused"
    retryable = False


class NotReady(Unavailable):
    """No verified bundle is active yet, so no decision can be made."""

    code = "not_ready"


class RevocationsNotSynced(Unavailable):
    """The revocations stream has not been replayed up to its end yet (a sidecar starting, or
    recovering from a lost message): a token revoked meanwhile would pass, so nothing is decided."""

    code = "revocations_not_synced"


# --------------------------------------------------------------------------- untrusted JSON


class JsonInvalid(InvalidInput):
    """A JSON text that is not JSON, or not the value expected (e.g. not an object).

    Same stable code as :class:`InvalidInput`: a body that does not parse has always
    been an ``invalid_request``; the subclasses below name the limits."""


class JsonTooDeep(JsonInvalid):
    """Arrays/objects nested deeper than the bound (``tenantguard.util.jsonlimits.MAX_DEPTH``)."""

    code = "json_too_deep"


class JsonNotInteroperable(JsonInvalid):
    """Valid for Python but not I-JSON (RFC 7493): duplicate keys, NaN/Infinity, integers
    beyond +-(2**53 - 1), lone surrogates. Parsers disagree on these; ``detail.problem``
    says which."""

    code = "json_not_interoperable"


class UnsupportedMediaType(InvalidInput):
    """The body's ``Content-Type`` is not JSON (``application/json``, ``application/*+json``)."""

    code = "unsupported_media_type"
    http_status = 415


# --------------------------------------------------------------------------- rollouts (tenantguard.rollout)


class ReplayRecordInvalid(InvalidInput):
    """A recorded decision is not in the replay format; ``detail.line`` says where."""

    code = "replay_record_invalid"


class ImpactUndeclared(TenantGuardError):
    """A candidate bundle flips recorded decisions nobody declared; ``detail.report`` says which."""

    code = "impact_undeclared_flips"
    http_status = 409
    grpc_status = GRPC_FAILED_PRECONDITION


class RolloutConflict(TenantGuardError):
    """The rollout is not in a state that allows this step (e.g. advance while halted)."""

    code = "rollout_conflict"
    http_status = 409
    grpc_status = GRPC_FAILED_PRECONDITION


class RolloutNotFound(TenantGuardError):
    code = "rollout_not_found"
    http_status = 404
    grpc_status = GRPC_NOT_FOUND


class ShadowNotFound(TenantGuardError):
    """``shadow-stop`` for a scope without a running shadow (not a rollback's missing target)."""

    code = "shadow_not_found"
    http_status = 404
    grpc_status = GRPC_NOT_FOUND


class RollbackTargetMissing(TenantGuardError):
    """There is no earlier revision to return to, or its archive is gone or was replaced."""

    code = "rollback_target_missing"
    http_status = 404
    grpc_status = GRPC_NOT_FOUND
