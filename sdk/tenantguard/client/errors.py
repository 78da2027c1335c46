"""Errors the clients add, and how error bodies from the wire become typed errors again.

The sidecar renders every failure as ``{"error": code, "message", "detail"}`` with the
code of a :class:`~tenantguard.errors.TenantGuardError` subclass, and the token endpoint
as OAuth's ``{"error", "error_description"}``. Turning the code back into the same class
means a service catches ``TokenExpired`` or ``InvalidTarget`` whether it decided in
process (embedded mode) or through a sidecar.
"""

from __future__ import annotations

from typing import Any

from tenantguard import errors as tg_errors
from tenantguard import exchange as tg_exchange
from tenantguard.errors import TenantGuardError, Unavailable
from tenantguard.search import errors as tg_search_errors


class CircuitOpen(Unavailable):
    """The sidecar failed repeatedly; calls fail fast until the cool-down ends."""

    code = "circuit_open"


class NotSupported(TenantGuardError):
    """This authorizer cannot do that (e.g. token exchange in embedded mode without a key)."""

    code = "not_supported"
    http_status = 501


class UnexpectedResponse(Unavailable):
    """The sidecar answered something that is not its documented shape: treat as down."""

    code = "unexpected_response"


def _subclasses(root: type[TenantGuardError]) -> list[type[TenantGuardError]]:
    found, todo = [], [root]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def _by_code(root: type[TenantGuardError], *, exclude: type[TenantGuardError] | None = None) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for cls in _subclasses(root):
        if exclude is not None and issubclass(cls, exclude):
            continue
        table.setdefault(cls.code, cls)
    return table


# Built once from the error modules (immutable afterwards): code -> class. The OAuth
# errors share codes such as "invalid_request" with InvalidInput, so they get their own table.
_GENERAL: dict[str, type[TenantGuardError]] = {cls.code: cls for cls in (
    tg_errors.InvalidInput, tg_errors.PayloadTooLarge, tg_errors.TokenError, tg_errors.Unavailable,
    tg_errors.NotReady, tg_errors.RevocationsNotSynced, tg_errors.PolicyError,
)}
_GENERAL.update(_by_code(tg_errors.TokenError))
# Bounded-JSON refusals, content types and the search doors' typed errors (the CLI's
# `relation lookup` and SDK callers of the search doors catch these by class).
_GENERAL.update({cls.code: cls for cls in (
    tg_errors.JsonTooDeep, tg_errors.JsonNotInteroperable, tg_errors.UnsupportedMediaType,
    tg_search_errors.SearchLimitExceeded, tg_search_errors.PageTokenInvalid, tg_search_errors.PageTokenExpired,
    tg_search_errors.RelationsStale, tg_search_errors.SearchNotSupported,
)})
_OAUTH = _by_code(tg_exchange.ExchangeError)


def error_from_body(status: int, body: Any) -> TenantGuardError:
    """A typed error for a sidecar error body (``{"error", "message", "detail"}``)."""
    code = body.get("error") if isinstance(body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    detail: dict[str, Any] = body["detail"] if isinstance(body, dict) and isinstance(body.get("detail"), dict) else {}
    cls: type[TenantGuardError] | None = _GENERAL.get(code) if isinstance(code, str) else None
    if cls is None:
        cls = _fallback(status)
    try:
        return cls(str(message or f"sidecar answered HTTP {status}"), **detail)
    except TypeError:
        # a detail the class cannot take ("message", a missing required field): not the
        # sidecar's shape, so the typed error would be a guess; a TypeError here would
        # escape every `except TenantGuardError` (is_allowed, the FastAPI guard) as a 500
        return UnexpectedResponse(f"sidecar answered HTTP {status} with a malformed {str(code)[:40]!r} error")


def oauth_error_from_body(status: int, body: Any) -> TenantGuardError:
    """A typed :class:`~tenantguard.exchange.ExchangeError` for an RFC 6749 5.2 error body."""
    code = body.get("error") if isinstance(body, dict) else None
    description = body.get("error_description") if isinstance(body, dict) else None
    cls = _OAUTH.get(code) if isinstance(code, str) else None
    if cls is None:
        return _fallback(status)(str(description or f"token endpoint answered HTTP {status}"))
    reason, _, _ = str(description or "").partition(":")
    return cls(str(description or code), reason=reason if reason and " " not in reason else None)


def _fallback(status: int) -> type[TenantGuardError]:
    if status == 401:
        return tg_errors.TokenError
    if status >= 500:
        return UnexpectedResponse
    return tg_errors.InvalidInput


__all__ = ["CircuitOpen", "NotSupported", "UnexpectedResponse", "error_from_body", "oauth_error_from_body"]
