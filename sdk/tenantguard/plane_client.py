"""A small typed client for the policy plane's HTTP API (CLI, sidecars, scripts).

Request building and response parsing are written once (:class:`Call`, :func:`parse`);
:class:`PlaneClient` (sync) and :class:`AsyncPlaneClient` only send, with the same
defaults: a finite timeout on every request and TLS verification on. A refused request
raises the *same* typed error the plane raised (``BundleRollback``, ``Forbidden``...,
looked up by its stable ``code``), so callers catch tenantguard errors, never httpx ones;
a plane that cannot be reached raises :class:`~tenantguard.errors.Unavailable`.

Writes (relations, revocations) carry an ``Idempotency-Key`` and are retried with it, with a
jittered backoff for up to ``retry_for`` seconds, while the answer is a retryable refusal
(503: a NATS node or the stream leader being replaced, a replica not ready; 409
``sequence_conflict``) or no answer at all: the plane applies a write at most once per key,
so a retry after a lost answer returns the first outcome instead of writing twice.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import httpx

from .errors import BundleRejected, TenantGuardError, Unavailable
from .relations import RelationChange, Relationship

DEFAULT_TIMEOUT: Final = 10.0
DEFAULT_RETRY_FOR: Final = 20.0  # seconds a write is retried with its Idempotency-Key
IDEMPOTENCY_KEY: Final = "Idempotency-Key"
SERVICE_HEADER: Final = "X-Tenantguard-Service"


class PlaneError(TenantGuardError):
    """The plane refused a request with a code this library has no class for (e.g. ``forbidden``).

    The instance carries the plane's ``code`` and HTTP status, so it renders like the original.
    """

    code = "plane_error"

    def __init__(self, message: str, *, code: str, status: int, **detail: Any) -> None:
        super().__init__(message, **detail)
        vars(self).update(code=code, http_status=status)  # per instance: the remote error's identity


def _error_classes() -> dict[str, type[TenantGuardError]]:
    """Every error class by its stable code (first definition wins), for re-raising remote errors."""
    found: dict[str, type[TenantGuardError]] = {}
    pending: list[type[TenantGuardError]] = [TenantGuardError]
    while pending:
        cls = pending.pop(0)
        found.setdefault(cls.code, cls)
        pending.extend(cls.__subclasses__())
    return found


def raise_for_body(status: int, body: Any) -> None:
    """Re-raise a plane error body ``{"error", "message", "detail"}`` as its typed error."""
    if not isinstance(body, Mapping):
        raise PlaneError(f"plane answered HTTP {status}", code="http_error", status=status)
    code = str(body.get("error") or "http_error")
    message = str(body.get("message") or f"plane answered HTTP {status}")
    raw_detail = body.get("detail")
    detail: dict[str, Any] = dict(raw_detail) if isinstance(raw_detail, Mapping) else {}
    cls = _error_classes().get(code)
    if cls is not None and cls.http_status == status:
        error = cls.__new__(cls)  # the class's own __init__ may want other arguments; the body has them all
        TenantGuardError.__init__(error, message, **detail)
        if isinstance(error, BundleRejected):
            error.file = detail.get("file")
        raise error
    raise PlaneError(message, code=code, status=status, **detail)


@dataclass(frozen=True, slots=True)
class Call:
    """One API request, transport-free."""

    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


def parse(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success:
        return body
    raise_for_body(response.status_code, body)


def _changes_body(changes: Sequence[RelationChange]) -> dict[str, Any]:
    return {"changes": [c.to_wire() for c in changes]}


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


# --------------------------------------------------------------------------- calls


def new_idempotency_key() -> str:
    return uuid.uuid4().hex


def write_call(changes: Sequence[RelationChange], *, key: str | None = None) -> Call:
    return Call("POST", "/v1/relations", json=_changes_body(changes), headers={IDEMPOTENCY_KEY: key} if key else {})


def list_call(tenant: str, *, object: str | None = None, relation: str | None = None, subject: str | None = None,
              limit: int | None = None, cursor: str | None = None) -> Call:
    return Call("GET", "/v1/relations", params=_params(tenant=tenant, object=object, relation=relation,
                                                      subject=subject, limit=limit, cursor=cursor))


def check_call(rel: Relationship, *, at_least: int | None = None) -> Call:
    return Call("GET", "/v1/relations/check", params=_params(**rel.to_wire(), at_least=at_least))


def bundle_call(archive: bytes) -> Call:
    return Call("POST", "/v1/bundles", content=archive, headers={"Content-Type": "application/gzip"})


def register_key_call(service: str, jwk: Mapping[str, Any], not_after: int | None = None) -> Call:
    return Call("POST", f"/v1/trust/sidecars/{service}/keys", json={"jwk": dict(jwk), "not_after": not_after})


def revoke_call(revocation: Mapping[str, Any], *, key: str | None = None) -> Call:
    return Call("POST", "/v1/revocations", json=dict(revocation), headers={IDEMPOTENCY_KEY: key} if key else {})


def retryable(exc: TenantGuardError) -> bool:
    """Worth sending again with the same Idempotency-Key: no answer, a 503 (the plane-only
    ``plane_not_ready`` arrives as a :class:`PlaneError`), or a lost replica race."""
    return exc.retryable or exc.http_status == 503 or exc.code == "sequence_conflict"


# --------------------------------------------------------------------------- clients


def _headers(token: str | None, service: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if service:
        headers[SERVICE_HEADER] = service
    return headers


class PlaneClient:
    """Synchronous client. ``token``: the admin token, or a join secret with ``service``."""

    def __init__(self, base_url: str, *, token: str | None = None, service: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, transport: httpx.BaseTransport | None = None,
                 retry_for: float = DEFAULT_RETRY_FOR) -> None:
        self._http = httpx.Client(base_url=base_url, timeout=timeout, headers=_headers(token, service),
                                  transport=transport, verify=True)
        self.retry_for = retry_for
        self.retries = 0  # attempts sent again, over the client's life

    def send(self, call: Call) -> Any:
        try:
            response = self._http.request(call.method, call.path, params=call.params or None, json=call.json,
                                          content=call.content, headers=call.headers or None)
        except httpx.HTTPError as exc:
            raise Unavailable(f"policy plane unreachable: {type(exc).__name__}: {exc}") from None
        return parse(response)

    def send_idempotent(self, call: Call) -> Any:
        """``send``, again with the same call (and so the same Idempotency-Key) while the
        refusal is retryable, for up to ``retry_for`` seconds; the last error otherwise."""
        deadline = time.monotonic() + self.retry_for
        delay = 0.1
        while True:
            try:
                return self.send(call)
            except TenantGuardError as exc:
                if not retryable(exc) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(random.uniform(delay / 2, delay))  # noqa: S311 - jitter, not a secret
            delay = min(2.0, delay * 2)
            self.retries += 1

    def write(self, changes: Sequence[RelationChange], *, idempotency_key: str | None = None) -> int:
        """Apply ``changes`` as one atomic batch (exactly once, retried with one Idempotency-Key);
        return the consistency token."""
        call = write_call(changes, key=idempotency_key or new_idempotency_key())
        return int(self.send_idempotent(call)["consistency_token"])

    def list(self, tenant: str, **filters: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.send(list_call(tenant, **filters))
        return result

    def check(self, rel: Relationship, *, at_least: int | None = None) -> tuple[bool, int]:
        body = self.send(check_call(rel, at_least=at_least))
        return bool(body["allowed"]), int(body["consistency_token"])

    def push_bundle(self, archive: bytes) -> dict[str, Any]:
        result: dict[str, Any] = self.send(bundle_call(archive))
        return result

    def register_sidecar_key(self, service: str, jwk: Mapping[str, Any], not_after: int | None = None) -> str:
        return str(self.send(register_key_call(service, jwk, not_after))["kid"])

    def revoke(self, revocation: Mapping[str, Any], *, idempotency_key: str | None = None) -> int:
        """Publish one revocation (exactly once, retried with one Idempotency-Key); its seq."""
        call = revoke_call(revocation, key=idempotency_key or new_idempotency_key())
        return int(self.send_idempotent(call)["seq"])

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self.send(Call("GET", "/v1/status"))
        return result

    def jwks(self) -> dict[str, Any]:
        result: dict[str, Any] = self.send(Call("GET", "/.well-known/jwks.json"))
        return result

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PlaneClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncPlaneClient:
    """Asynchronous client with the same defaults (what a sidecar uses at startup and for confirmations)."""

    def __init__(self, base_url: str, *, token: str | None = None, service: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, timeout=timeout, headers=_headers(token, service),
                                       transport=transport, verify=True)

    async def send(self, call: Call) -> Any:
        try:
            response = await self._http.request(call.method, call.path, params=call.params or None,
                                                json=call.json, content=call.content, headers=call.headers or None)
        except httpx.HTTPError as exc:
            raise Unavailable(f"policy plane unreachable: {type(exc).__name__}: {exc}") from None
        return parse(response)

    async def register_sidecar_key(self, service: str, jwk: Mapping[str, Any], not_after: int | None = None) -> str:
        return str((await self.send(register_key_call(service, jwk, not_after)))["kid"])

    async def check(self, rel: Relationship, *, at_least: int | None = None) -> tuple[bool, int]:
        body = await self.send(check_call(rel, at_least=at_least))
        return bool(body["allowed"]), int(body["consistency_token"])

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncPlaneClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
