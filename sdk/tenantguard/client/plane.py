"""A small typed client for the policy plane's HTTP API (CLI, sidecars, scripts).

Request building and response parsing are written once (:class:`Call`, :func:`parse`);
:class:`PlaneClient` (sync) and :class:`AsyncPlaneClient` only send, with the same
defaults: a finite timeout on every request and TLS verification on. A refused request
raises the *same* typed error the plane raised (``BundleRollback``, ``Forbidden``...,
looked up by its stable ``code``), so callers catch tenantguard errors, never httpx ones;
a plane that cannot be reached raises :class:`~tenantguard.errors.Unavailable` naming the
URL (credentials hidden), and a URL that answers but is some other service (a sidecar, say)
raises :class:`NotAPlane` saying what answered, instead of that service's bare 404.

Writes (relations, revocations) carry an ``Idempotency-Key`` and are retried with it, with a
jittered backoff for up to ``retry_for`` seconds, while the answer is a retryable refusal
(503: a NATS node or the stream leader being replaced, a replica not ready; 409
``sequence_conflict``) or no answer at all: the plane applies a write at most once per key,
so a retry after a lost answer returns the first outcome instead of writing twice.

``base_url`` may name several replicas (``http://plane-0:8080,http://plane-1:8080``, or a
sequence): a write refused retryably or left unanswered is sent again, with its key, to the
next one, so losing the replica a client talks to costs a retry, not the write.

An ``https://`` plane is verified against ``ca`` (a PEM CA bundle; default: the system's CAs),
and ``client_cert``/``client_key`` answer a plane that requires mutual TLS
(:mod:`tenantguard.util.httptls`). A handshake that fails raises
:class:`~tenantguard.errors.PlaneTlsRefused` at once, never retried and never sent over
plain HTTP instead; TLS options with an ``http://`` URL are a :class:`ConfigError`.
"""

from __future__ import annotations

import ipaddress
import random
import re
import ssl
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from tenantguard.errors import (
    BundleRejected,
    ConfigError,
    InvalidInput,
    PlaneRefused,
    PlaneTlsRefused,
    TenantGuardError,
    Unavailable,
)
from tenantguard.relations import RelationChange, Relationship
from tenantguard.util.httptls import ClientTls, tls_failure, tls_reason
from tenantguard.util.urls import check_http_url, shown_url

# Longer than the plane's own write deadline (twice its --request-timeout, 10 s by default): a write the
# plane is still sending again (a node or stream leader being replaced) ends in its answer, a 200 or a
# typed 503, not in a client-side timeout just before it (seen in the chaos runs at 10 s).
DEFAULT_TIMEOUT: Final = 15.0
DEFAULT_RETRY_FOR: Final = 20.0  # seconds a write is retried with its Idempotency-Key
FIRST_RETRY_DELAY: Final = 0.1  # seconds before the first retry; doubled up to 2 s
IDEMPOTENCY_KEY: Final = "Idempotency-Key"
SERVICE_HEADER: Final = "X-Tenantguard-Service"
# The plane's OpenAPI title (policy_plane.app uses this constant): how a client recognises it.
PLANE_TITLE: Final = "tenantguard policy plane"
IDENTITY_PATH: Final = "/openapi.json"
# Answers a service gives to a route or method it does not have: worth asking who it is.
_WRONG_SERVICE_STATUSES: Final = frozenset({404, 405, 501})


def _ask_identity(response: httpx.Response) -> bool:
    """A refusal that may come from another service: a missing route, or a 4xx body not shaped like ours
    (a 5xx without our body is more likely a proxy in front of a plane that is down: no guess then)."""
    if response.is_success:
        return False
    body = _json(response)
    ours = isinstance(body, Mapping) and "error" in body and "message" in body
    return response.status_code in _WRONG_SERVICE_STATUSES or (response.status_code < 500 and not ours)


class PlaneError(TenantGuardError):
    """The plane refused a request with a code this library has no class for (e.g. ``forbidden``).

    The instance carries the plane's ``code`` and HTTP status, so it renders like the original.
    """

    code = "plane_error"

    def __init__(self, message: str, *, code: str, status: int, **detail: Any) -> None:
        super().__init__(message, **detail)
        vars(self).update(code=code, http_status=status)  # per instance: the remote error's identity


class NotAPlane(TenantGuardError):
    """The URL answered, but not as a tenantguard policy plane: the wrong address, usually a sidecar's."""

    code = "not_a_plane"
    http_status = 502


def _error_classes() -> dict[str, type[TenantGuardError]]:
    """Every error class by its stable code (first definition wins), for re-raising remote errors."""
    import tenantguard.schema.admission  # noqa: F401  # TupleNotAllowed; loaded only once an error needs it
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
        if "rule" in detail:  # TupleNotAllowed, SchemaError: the rule broken, as the class sets it
            vars(error)["rule"] = detail["rule"]
        raise error
    detail = {k: v for k, v in detail.items() if k not in ("code", "status")}  # never collide with our arguments
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
    body = _json(response)
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
              limit: int | None = None, cursor: str | None = None, expand: bool = False) -> Call:
    return Call("GET", "/v1/relations", params=_params(tenant=tenant, object=object, relation=relation,
                                                      subject=subject, limit=limit, cursor=cursor,
                                                      expand="true" if expand else None))


def check_call(rel: Relationship, *, at_least: int | None = None) -> Call:
    return Call("GET", "/v1/relations/check", params=_params(**rel.key_wire(), at_least=at_least))


def bundle_call(archive: bytes, *, stages: str | None = None, impact: str | None = None,
                max_undeclared: int | None = None, shadow: bool = False, sample_rate: float | None = None,
                max_per_second: int | None = None, skip_tests: bool = False) -> Call:
    return Call("POST", "/v1/bundles", content=archive, headers={"Content-Type": "application/gzip"},
                params=_params(stages=stages, impact=impact, max_undeclared=max_undeclared,
                               shadow="true" if shadow else None, sample_rate=sample_rate,
                               max_per_second=max_per_second, skip_tests="true" if skip_tests else None))


def shadow_stop_call(scope: str) -> Call:
    return Call("POST", "/v1/bundles/shadow/stop", json={"scope": scope})


def rollback_call(scope: str, to: str | None = None) -> Call:
    return Call("POST", "/v1/bundles/rollback", json={"scope": scope, "to": to})


def _segment(what: str, value: str) -> str:
    """``value`` as one path segment, or :class:`InvalidInput`. An id is put into the URL's path, so
    ``../../relations`` or ``a/b?c`` would ask another route of the plane (with the admin token) and
    come back as a puzzling 404 or another route's answer; every id the plane hands out is a plain token."""
    if _SEGMENT_RE.fullmatch(value) is None or value in (".", ".."):
        raise InvalidInput(f"{what} {value[:80]!r} is not an id: letters, digits, '_', '.', ':' or '-' (at most 160)",
                           field=what)
    return value


_SEGMENT_RE: Final = re.compile(r"[A-Za-z0-9_.:-]{1,160}")


def rollout_call(rollout_id: str | None = None, action: str | None = None) -> Call:
    if rollout_id is None or action is None:
        return Call("GET", "/v1/rollouts")
    return Call("POST", f"/v1/rollouts/{_segment('rollout id', rollout_id)}/{_segment('action', action)}", json={})


def register_key_call(service: str, jwk: Mapping[str, Any], not_after: int | None = None) -> Call:
    return Call("POST", f"/v1/trust/sidecars/{_segment('service', service)}/keys",
                json={"jwk": dict(jwk), "not_after": not_after})


def revoke_call(revocation: Mapping[str, Any], *, key: str | None = None) -> Call:
    return Call("POST", "/v1/revocations", json=dict(revocation), headers={IDEMPOTENCY_KEY: key} if key else {})


def retryable(exc: TenantGuardError) -> bool:
    """Worth sending again with the same Idempotency-Key: no answer, a 503 (the plane-only
    ``plane_not_ready`` arrives as a :class:`PlaneError`), or a lost replica race; never a
    failed TLS handshake (the same certificate fails the same way), nor a loopback address that
    refused the connection (nothing listens there)."""
    if isinstance(exc, PlaneTlsRefused | PlaneRefused):
        return False
    return exc.retryable or exc.http_status == 503 or exc.code == "sequence_conflict"


# --------------------------------------------------------------------------- identity


def plane_urls(spec: str | Sequence[str]) -> tuple[str, ...]:
    """One plane URL, or several replicas' (comma-separated or a sequence), in order, without repeats."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    urls = tuple(dict.fromkeys(u.strip().rstrip("/") for u in items if u.strip()))
    if not urls:
        raise ConfigError("no policy plane URL given")
    for url in urls:
        check_http_url(url, "policy plane URL")
    return urls


def unreachable(base_url: str, exc: Exception) -> Unavailable:
    """The typed error for a request that got no answer: :class:`PlaneTlsRefused` when TLS failed."""
    tls = tls_failure(exc)
    if tls is not None:
        return tls_refused(base_url, tls)
    detail = str(exc).strip()
    hint = ""
    if base_url.lower().startswith("https://") and isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        hint = MUTUAL_TLS_HINT  # TLS 1.3: the server's refusal of our certificate may arrive as a bare close
    elif base_url.lower().startswith("http://") and isinstance(exc, httpx.RemoteProtocolError):
        hint = PLAIN_TO_TLS_HINT  # a TLS listener reads our plain request as a bad handshake and closes
    if hint:
        detail = detail.rstrip(".")
    return Unavailable(f"policy plane at {shown_url(base_url)} unreachable: {type(exc).__name__}"
                       + (f": {detail}" if detail else "") + hint)


def refused_on_loopback(base_url: str, exc: Exception) -> PlaneRefused | None:
    """:class:`PlaneRefused` when ``exc`` is a refused connection to a loopback address (no plane
    listens there: a retry cannot help), else None. A remote address may be a plane restarting
    behind a load balancer, so it keeps the retry."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, ConnectionRefusedError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    host = (httpx.URL(base_url).host or "").strip("[]")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        return None
    return PlaneRefused(f"policy plane at {shown_url(base_url)} refused the connection (nothing listens on that "
                        "loopback port; not retried)", address=shown_url(base_url))


PLAIN_TO_TLS_HINT: Final = ("; a plane serving HTTPS (--tls-cert) closes plain HTTP connections like this: use its "
                            "https:// URL (and --plane-ca)")
MUTUAL_TLS_HINT: Final = ("; a plane that requires mutual TLS closes connections that bring no client certificate "
                          "its CA signed (--plane-client-cert, --plane-client-key)")


def tls_refused(base_url: str, error: ssl.SSLError) -> PlaneTlsRefused:
    reason = tls_reason(error)
    if isinstance(error, ssl.SSLCertVerificationError):
        advice = ("name the CA that signed the plane's certificate (--plane-ca), and a URL whose host the "
                  "certificate names")
    else:
        advice = ("a plane that requires mutual TLS wants a client certificate its CA signed "
                  "(--plane-client-cert, --plane-client-key)")
    return PlaneTlsRefused(f"TLS with the policy plane at {shown_url(base_url)} failed ({reason}); {advice}",
                           url=shown_url(base_url), reason=reason)


def _tls(ca: str | Path | None, client_cert: str | Path | None, client_key: str | Path | None,
         urls: Sequence[str]) -> ClientTls:
    tls = ClientTls(ca_file=Path(ca) if ca is not None else None,
                    cert_file=Path(client_cert) if client_cert is not None else None,
                    key_file=Path(client_key) if client_key is not None else None)
    for url in urls:
        tls.check_url(url)
    return tls


def describe_service(probe_status: int | None, probe_body: Any) -> str | None:
    """What a service says it is, from its OpenAPI document; None when it is the plane."""
    info = probe_body.get("info") if isinstance(probe_body, Mapping) else None
    title = info.get("title") if isinstance(info, Mapping) else None
    if title == PLANE_TITLE:
        return None
    if isinstance(title, str) and title.startswith("tenantguard sidecar"):
        return f"it looks like a sidecar: '{title}'"
    if isinstance(title, str) and title:
        return f"it calls itself '{title}'"
    if probe_status is None:
        return "and then did not answer GET /openapi.json"
    return f"it has no OpenAPI description (GET /openapi.json: HTTP {probe_status})"


def not_a_plane(base_url: str, call: Call, status: int, what: str) -> NotAPlane:
    return NotAPlane(f"{shown_url(base_url)} answered {call.method} {call.path} with HTTP {status} but is not a "
                     f"tenantguard policy plane ({what}); point --plane (TG_PLANE_URL) at the plane's base URL",
                     url=shown_url(base_url), status=status)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


DECISION_FILTERS: Final = ("tenant", "service", "subject", "resource", "action", "allow", "reason", "decision_id",
                           "jti", "since", "until", "order", "limit", "cursor", "format")


def decisions_call(**filters: Any) -> Call:
    """One page of ``GET /v1/decisions`` (filters: :data:`DECISION_FILTERS`)."""
    unknown = set(filters) - set(DECISION_FILTERS)
    if unknown:
        raise TypeError(f"unknown decision filters: {', '.join(sorted(unknown))}")
    params = _params(**filters)
    if isinstance(params.get("allow"), bool):
        params["allow"] = "true" if params["allow"] else "false"
    return Call("GET", "/v1/decisions", params=params)


def explain_call(decision_id: str, *, tenant: str | None = None, service: str | None = None) -> Call:
    return Call("GET", f"/v1/decisions/{_segment('decision id', decision_id)}/explain",
                params=_params(tenant=tenant, service=service))


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

    def __init__(self, base_url: str | Sequence[str], *, token: str | None = None, service: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, transport: httpx.BaseTransport | None = None,
                 retry_for: float = DEFAULT_RETRY_FOR,
                 on_retry: Callable[[TenantGuardError, float], None] | None = None,
                 ca: str | Path | None = None, client_cert: str | Path | None = None,
                 client_key: str | Path | None = None) -> None:
        """``on_retry(error, seconds_left)`` is called before the first retry of a call, so a CLI
        can say why it waits instead of sitting silent for ``retry_for`` seconds. ``base_url``:
        one replica, or several (see the module docstring); ``ca``, ``client_cert``, ``client_key``:
        PEM files for an https:// plane (see the module docstring)."""
        self.base_urls = plane_urls(base_url)
        self._at = 0
        tls = _tls(ca, client_cert, client_key, self.base_urls)
        self._http = httpx.Client(timeout=timeout, headers=_headers(token, service), transport=transport,
                                  verify=tls.verify())
        self.retry_for = retry_for
        self.on_retry = on_retry
        self.retries = 0  # attempts sent again, over the client's life

    @property
    def base_url(self) -> str:
        """The replica the next request goes to."""
        return self.base_urls[self._at]

    def send(self, call: Call) -> Any:
        try:
            response = self._http.request(call.method, self.base_url + call.path, params=call.params or None,
                                          json=call.json, content=call.content, headers=call.headers or None)
        except httpx.HTTPError as exc:
            raise refused_on_loopback(self.base_url, exc) or unreachable(self.base_url, exc) from None
        if _ask_identity(response):
            self._identify(call, response.status_code)
        return parse(response)

    def _identify(self, call: Call, status: int) -> None:
        """Raise :class:`NotAPlane` unless the service behind ``base_url`` is the plane."""
        try:
            probe = self._http.get(self.base_url + IDENTITY_PATH)
            what = describe_service(probe.status_code, _json(probe))
        except httpx.HTTPError:
            what = describe_service(None, None)
        if what is not None:
            raise not_a_plane(self.base_url, call, status, what)

    def send_idempotent(self, call: Call) -> Any:
        """``send``, again with the same call (and so the same Idempotency-Key) while the
        refusal is retryable, for up to ``retry_for`` seconds; the last error otherwise."""
        deadline = time.monotonic() + self.retry_for
        delay = FIRST_RETRY_DELAY
        while True:
            try:
                return self.send(call)
            except TenantGuardError as exc:
                next_replica = isinstance(exc, PlaneRefused) and len(self.base_urls) > 1
                if not (retryable(exc) or next_replica) or time.monotonic() + delay > deadline:
                    raise
                if delay == FIRST_RETRY_DELAY and self.on_retry is not None:
                    self.on_retry(exc, max(0.0, deadline - time.monotonic()))
                self._at = (self._at + 1) % len(self.base_urls)  # the same key, at the next replica
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

    def push_bundle(self, archive: bytes, *, stages: str | None = None, impact: str | None = None,
                    max_undeclared: int | None = None, shadow: bool = False, sample_rate: float | None = None,
                    max_per_second: int | None = None, skip_tests: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = self.send(bundle_call(archive, stages=stages, impact=impact,
                                                       max_undeclared=max_undeclared, shadow=shadow,
                                                       sample_rate=sample_rate, max_per_second=max_per_second,
                                                       skip_tests=skip_tests))
        return result

    def stop_shadow(self, scope: str) -> dict[str, Any]:
        result: dict[str, Any] = self.send(shadow_stop_call(scope))
        return result

    def rollback_bundle(self, scope: str, to: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.send(rollback_call(scope, to))
        return result

    def rollout(self, rollout_id: str | None = None, action: str | None = None) -> dict[str, Any]:
        """The current rollout and fleet (no arguments), or one step of rollout ``rollout_id``."""
        result: dict[str, Any] = self.send(rollout_call(rollout_id, action))
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

    def decisions(self, **filters: Any) -> dict[str, Any]:
        """One page of decision records (admin or operator token); ``next_cursor`` continues it."""
        result: dict[str, Any] = self.send(decisions_call(**filters))
        return result

    def iter_decisions(self, **filters: Any) -> Iterator[dict[str, Any]]:
        """Every record of a query, page after page (``order=asc``: up to the end of the stream)."""
        cursor = filters.pop("cursor", None)
        while True:
            page = self.decisions(**filters, cursor=cursor)
            yield from page["decisions"]
            cursor = page.get("next_cursor")
            if cursor is None or (page.get("complete") and not page["decisions"]):
                return

    def explain(self, decision_id: str, *, tenant: str | None = None, service: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.send(explain_call(decision_id, tenant=tenant, service=service))
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
    """Asynchronous client with the same defaults (what a sidecar uses at startup and for confirmations).

    ``base_url`` may name several replicas, as for :class:`PlaneClient`: a call refused retryably
    or left unanswered moves the client to the next one, so the caller's retry (the sidecar's
    key registration retries with a back-off) reaches another replica."""

    def __init__(self, base_url: str | Sequence[str], *, token: str | None = None, service: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, transport: httpx.AsyncBaseTransport | None = None,
                 ca: str | Path | None = None, client_cert: str | Path | None = None,
                 client_key: str | Path | None = None) -> None:
        self.base_urls = plane_urls(base_url)
        self._at = 0
        tls = _tls(ca, client_cert, client_key, self.base_urls)
        self._http = httpx.AsyncClient(timeout=timeout, headers=_headers(token, service),
                                       transport=transport, verify=tls.verify())

    @property
    def base_url(self) -> str:
        """The replica the next request goes to."""
        return self.base_urls[self._at]

    async def send(self, call: Call) -> Any:
        try:
            return await self._send(call)
        except TenantGuardError as exc:
            if retryable(exc):  # the caller's next attempt goes to the next replica
                self._at = (self._at + 1) % len(self.base_urls)
            raise

    async def _send(self, call: Call) -> Any:
        base = self.base_url
        try:
            response = await self._http.request(call.method, base + call.path, params=call.params or None,
                                                json=call.json, content=call.content, headers=call.headers or None)
        except httpx.HTTPError as exc:
            raise unreachable(base, exc) from None
        if _ask_identity(response):
            try:
                probe = await self._http.get(base + IDENTITY_PATH)
                what = describe_service(probe.status_code, _json(probe))
            except httpx.HTTPError:
                what = describe_service(None, None)
            if what is not None:
                raise not_a_plane(base, call, response.status_code, what)
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
