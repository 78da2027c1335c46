"""What the async and the sync sidecar client share: settings, auth header, outcome rules."""

from __future__ import annotations

import base64
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_plus

import httpx

from tenantguard.client.resilience import CircuitBreaker, RetryPolicy, retryable_status
from tenantguard.client.wire import Call
from tenantguard.errors import ConfigError, TenantGuardError, Unavailable
from tenantguard.util.urls import shown_url

log = logging.getLogger("tenantguard.client")

DEFAULT_BASE_URL = "http://127.0.0.1:8181"
UDS_BASE_URL = "http://sidecar"
# Every phase bounded: a decision that cannot be had within these is a deny, not a hang.
DEFAULT_TIMEOUT = httpx.Timeout(connect=0.5, read=2.0, write=2.0, pool=1.0)
DEFAULT_LIMITS = httpx.Limits(max_connections=64, max_keepalive_connections=32, keepalive_expiry=30.0)
MAX_RESPONSE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """One sidecar endpoint and how to talk to it; identical for both clients by construction.

    ``uds`` (a unix socket path) wins over ``base_url``. ``service``/``client_secret``
    are the HTTP Basic client credentials for ``/oauth2/token`` when the sidecar
    requires them (RFC 6749 2.3.1). ``TG_SIDECAR_URL``/``TG_SIDECAR_UDS`` are read when
    neither is passed, so a deployment can point services at their sidecar.
    """

    base_url: str | None = None
    uds: str | None = None
    timeout: httpx.Timeout = field(default_factory=lambda: DEFAULT_TIMEOUT)
    limits: httpx.Limits = field(default_factory=lambda: DEFAULT_LIMITS)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    breaker: CircuitBreaker = field(default_factory=CircuitBreaker)
    service: str | None = None
    client_secret: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for phase in ("connect", "read", "write", "pool"):
            value = getattr(self.timeout, phase)
            if value is None or not 0 < value <= 60:
                raise ConfigError(f"timeout.{phase} must be finite, within (0, 60] s")
        if self.client_secret is not None and not self.service:
            raise ConfigError("client_secret needs service (the OAuth client id)")

    @property
    def resolved_uds(self) -> str | None:
        if self.uds is not None:
            return self.uds
        return None if self.base_url is not None else os.environ.get("TG_SIDECAR_UDS")

    @property
    def where(self) -> str:
        """The sidecar as a message should name it: its URL, or its unix socket."""
        uds = self.resolved_uds
        return f"unix:{uds}" if uds is not None else self.resolved_base_url

    @property
    def default_address_note(self) -> str:
        """Said after the address when it is only the default: a service started in a shell without
        ``TG_SIDECAR_URL`` (``source .tenantguard/dev.env`` not run) asks 127.0.0.1:8181, and its
        log should say why that address, not only that nothing answered there."""
        if self.base_url is not None or self.resolved_uds is not None or os.environ.get("TG_SIDECAR_URL"):
            return ""
        return " (the default: TG_SIDECAR_URL is not set in this process's environment)"

    @property
    def resolved_base_url(self) -> str:
        if self.resolved_uds is not None:
            return UDS_BASE_URL
        return (self.base_url or os.environ.get("TG_SIDECAR_URL") or DEFAULT_BASE_URL).rstrip("/")

    def httpx_kwargs(self) -> dict[str, Any]:
        return {"base_url": self.resolved_base_url, "timeout": self.timeout, "limits": self.limits,
                "headers": {"Accept": "application/json", "User-Agent": "tenantguard-sdk"},
                "follow_redirects": False, "trust_env": False}

    def basic_auth(self) -> str | None:
        if self.client_secret is None or self.service is None:
            return None
        pair = f"{quote_plus(self.service)}:{quote_plus(self.client_secret.decode())}".encode()
        return "Basic " + base64.b64encode(pair).decode()


def json_body(doc: Mapping[str, Any]) -> bytes:
    """A request body as both clients send it: compact JSON."""
    return json.dumps(doc, separators=(",", ":")).encode()


def request_kwargs(call: Call, *, raw_body: str = "content") -> dict[str, Any]:
    """``Call`` as request arguments: httpx takes raw bytes as ``content`` (the default),
    aiohttp as ``data``; both take a form as ``data`` and the query as ``params``."""
    kwargs: dict[str, Any] = {"headers": dict(call.headers)}
    if call.json is not None:
        kwargs[raw_body] = json_body(call.json)
        kwargs["headers"]["Content-Type"] = "application/json"
    elif call.form is not None:
        kwargs["data"] = dict(call.form)
    if call.params is not None:
        kwargs["params"] = dict(call.params)
    return kwargs


def _body(content: bytes | None) -> Any:
    """The JSON document, or None for no body, an oversized one or one that is not JSON."""
    if content is None or len(content) > MAX_RESPONSE_BYTES:
        return None
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None


def should_retry(status: int) -> bool:
    return retryable_status(status)


def outcome(call: Call, status: int, content: bytes | None) -> Any:
    """The parsed answer, or the typed error it stands for; a 5xx is always an Unavailable.

    ``content`` is None when the body was larger than ``MAX_RESPONSE_BYTES`` (not read).
    """
    try:
        return call.parse(status, _body(content))
    except TenantGuardError as exc:
        if retryable_status(status) and not isinstance(exc, Unavailable):
            raise Unavailable(f"sidecar answered HTTP {status}: {exc.message}",
                              cause=exc.code, status=status) from exc
        raise


def transport_unavailable(call: Call, exc: Exception, attempts: int, where: str | None = None,
                          note: str = "") -> Unavailable:
    """``where``: the sidecar's URL or socket, named in the message (credentials hidden), followed by
    ``note`` (:attr:`ClientSettings.default_address_note`)."""
    at = f" at {shown_url(where)}{note}" if where else ""
    log.warning("sidecar%s %s %s failed after %d attempt(s): %s", at, call.method, call.path, attempts,
                type(exc).__name__)
    return Unavailable(f"sidecar{at} unreachable: {type(exc).__name__}", attempts=attempts)


def log_denied(exc: TenantGuardError, where: str) -> None:
    log.warning("%s failed closed: %s", where, exc.code)


def merge_defaults(subject: Mapping[str, Any] | None, action: Any, resource: Any,
                   context: Mapping[str, Any] | None) -> dict[str, Any]:
    """Top-level defaults of an evaluations boxcar, shaped like a question."""
    from tenantguard.client.wire import action_of, entity

    defaults: dict[str, Any] = {}
    if subject is not None:
        defaults["subject"] = entity(subject, "subject")
    if action is not None:
        defaults["action"] = action_of(action)
    if resource is not None:
        defaults["resource"] = entity(resource, "resource")
    if context:
        defaults["context"] = dict(context)
    return defaults
