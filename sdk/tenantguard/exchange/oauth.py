"""The OAuth wire of RFC 8693 token exchange: constants, OAuth errors (RFC 6749 5.2), scopes, the
request model and form parsing, client authentication. No policy and no keys: what a client
and the ``/oauth2/token`` door agree on.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal
from urllib.parse import unquote_plus

from tenantguard.errors import KeyMaterialError, TenantGuardError
from tenantguard.identity.tokens import (
    ACTOR_PREFIX,
    is_scope_token,
)

if TYPE_CHECKING:
    pass


GRANT_TYPE_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE_JWT = "urn:ietf:params:oauth:token-type:jwt"
TOKEN_TYPE_ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
TOKEN_TYPE_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
SUBJECT_TOKEN_TYPES = frozenset({TOKEN_TYPE_JWT, TOKEN_TYPE_ACCESS_TOKEN, TOKEN_TYPE_ID_TOKEN})
ISSUED_TOKEN_TYPES = frozenset({TOKEN_TYPE_JWT, TOKEN_TYPE_ACCESS_TOKEN})

EXCHANGE_ENTRYPOINT = "data.tenantguard.exchange.decision"
PROPAGATION_ENTRYPOINT = "data.tenantguard.propagation.mode"
PropagationMode = Literal["forward", "exchange", "deny"]
PROPAGATION_MODES: frozenset[str] = frozenset({"forward", "exchange", "deny"})

MAX_FORM_FIELDS = 32
MAX_SCOPES = 32
MAX_SCOPE_LENGTH = 128
SERVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
# RFC 6749 5.2: error_description is limited to %x20-21 / %x23-5B / %x5D-7E.
_DESCRIPTION_UNSAFE = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")



# --------------------------------------------------------------------------- OAuth errors


class ExchangeError(TenantGuardError):
    """A refused exchange, rendered as RFC 6749 5.2 ``{"error", "error_description"}``.

    ``code`` is the OAuth ``error`` value itself, so the library and the wire agree;
    ``reason`` is the tenantguard code behind it (e.g. ``token_expired``), when one exists.
    """

    code: ClassVar[str] = "invalid_request"
    http_status: ClassVar[int] = 400

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason

    @property
    def description(self) -> str:
        text = f"{self.reason}: {self.message}" if self.reason else self.message
        return _DESCRIPTION_UNSAFE.sub("'", text)[:300]

    def to_oauth(self) -> dict[str, str]:
        return {"error": self.code, "error_description": self.description}


class InvalidRequest(ExchangeError):
    code = "invalid_request"


class InvalidClient(ExchangeError):
    """Client authentication failed: 401 with ``WWW-Authenticate: Basic`` (RFC 6749 5.2)."""

    code = "invalid_client"
    http_status = 401


class UnauthorizedClient(ExchangeError):
    code = "unauthorized_client"


class UnsupportedGrantType(ExchangeError):
    code = "unsupported_grant_type"


class InvalidScope(ExchangeError):
    code = "invalid_scope"


class InvalidTarget(ExchangeError):
    code = "invalid_target"


class TemporarilyUnavailable(ExchangeError):
    """No policy is active yet (or the IdP's keys cannot be fetched): retrying helps."""

    code = "temporarily_unavailable"
    http_status = 503
    retryable = True


# --------------------------------------------------------------------------- scopes


def parse_scope(value: str | None) -> tuple[str, ...] | None:
    """A space-delimited scope (RFC 6749 3.3) as a tuple; None when absent. Malformed: invalid_scope."""
    if value is None:
        return None
    items = tuple(dict.fromkeys(s for s in value.split(" ") if s))
    if not items:
        return None
    if len(items) > MAX_SCOPES:
        raise InvalidScope(f"at most {MAX_SCOPES} scopes may be requested")
    for item in items:
        if not is_scope_token(item):  # RFC 6749 3.3
            raise InvalidScope("scope tokens must be printable ASCII without quotes or backslashes")
    return items


def scope_covers(granted: str, wanted: str) -> bool:
    """Same rule as ``lib.scope_covers`` in the bundle: exact, or ``x:*`` covers ``x:...``."""
    return granted == wanted or (granted.endswith(":*") and wanted.startswith(granted[:-1]))


def all_covered(wanted: Iterable[str], by: Iterable[str]) -> bool:
    held = tuple(by)
    return all(any(scope_covers(g, w) for g in held) for w in wanted)


# --------------------------------------------------------------------------- request model


@dataclass(frozen=True, slots=True)
class ExchangeRequest:
    """One RFC 8693 2.1 request, already checked for shape; ``audience`` is a service name."""

    subject_token: str
    subject_token_type: str
    audience: str
    scope: tuple[str, ...] | None = None
    requested_token_type: str | None = None

    @classmethod
    def from_form(cls, pairs: Sequence[tuple[str, str]]) -> ExchangeRequest:
        """Build from decoded form pairs, per RFC 6749 3.2 and RFC 8693 2.1.

        Empty values count as omitted, unknown parameters are ignored (both RFC 6749),
        a parameter may appear once except ``audience``/``resource`` (RFC 8693 allows
        several; this STS issues single-audience tokens and says so with invalid_target).
        """
        form = _collect(pairs)
        grant_type = _single(form, "grant_type")
        if grant_type is None:
            raise InvalidRequest("grant_type is required")
        if grant_type != GRANT_TYPE_TOKEN_EXCHANGE:
            raise UnsupportedGrantType(f"only {GRANT_TYPE_TOKEN_EXCHANGE} is supported")
        subject_token = _single(form, "subject_token")
        subject_token_type = _single(form, "subject_token_type")
        if subject_token is None or subject_token_type is None:
            raise InvalidRequest("subject_token and subject_token_type are required")
        if subject_token_type not in SUBJECT_TOKEN_TYPES:
            raise InvalidRequest(f"subject_token_type {subject_token_type!r} is not supported")
        _check_actor_token(_single(form, "actor_token"), _single(form, "actor_token_type"))
        requested = _single(form, "requested_token_type")
        if requested is not None and requested not in ISSUED_TOKEN_TYPES:
            raise InvalidRequest(f"requested_token_type {requested!r} cannot be issued")
        return cls(
            subject_token=subject_token,
            subject_token_type=subject_token_type,
            audience=_target(form.get("audience", []), form.get("resource", [])),
            scope=parse_scope(_single(form, "scope")),
            requested_token_type=requested,
        )

    @property
    def issued_token_type(self) -> str:
        """What the response names: the requested type, else ``access_token`` (the token is both)."""
        return self.requested_token_type or TOKEN_TYPE_ACCESS_TOKEN


_MULTI_VALUED = frozenset({"audience", "resource"})


def _collect(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    if len(pairs) > MAX_FORM_FIELDS:
        raise InvalidRequest(f"at most {MAX_FORM_FIELDS} parameters are accepted")
    form: dict[str, list[str]] = {}
    for name, value in pairs:
        if value != "":
            form.setdefault(name, []).append(value)
    for name, values in form.items():
        if len(values) > 1 and name not in _MULTI_VALUED:
            raise InvalidRequest(f"parameter {name} is repeated")
    return form


def _single(form: Mapping[str, list[str]], name: str) -> str | None:
    values = form.get(name)
    return values[0] if values else None


def _check_actor_token(actor_token: str | None, actor_token_type: str | None) -> None:
    """RFC 8693 2.1: the type is required with an actor token and forbidden without one.

    The actor of every exchange here is the sidecar's own service, known from the local
    connection (and the client secret when configured), so a presented actor token
    would only be a second, weaker claim of it: refused rather than silently ignored.
    """
    if actor_token_type is not None and actor_token is None:
        raise InvalidRequest("actor_token_type must not be sent without actor_token")
    if actor_token is not None and actor_token_type is None:
        raise InvalidRequest("actor_token_type is required with actor_token")
    if actor_token is not None:
        raise InvalidRequest("actor_token is not accepted: the actor is this sidecar's own service")


def _target(audiences: Sequence[str], resources: Sequence[str]) -> str:
    """The one target service named by ``audience`` (a service name) and/or ``resource``."""
    if len(audiences) + len(resources) == 0:
        raise InvalidRequest("audience (or resource) naming the target service is required")
    if len(audiences) > 1 or len(resources) > 1:
        raise InvalidTarget("one target per token: send a single audience or resource")
    names = {a for a in audiences} | {_service_of_resource(r) for r in resources}
    if len(names) != 1:
        raise InvalidTarget("audience and resource name different services")
    name = names.pop()
    if not SERVICE_NAME.fullmatch(name):
        raise InvalidTarget("audience must be a service name")
    return name


def _service_of_resource(resource: str) -> str:
    """``svc:<name>`` (an absolute URI, RFC 8707) names a service; other forms are refused."""
    if not resource.startswith(ACTOR_PREFIX) or "#" in resource:
        raise InvalidTarget("resource must be an absolute URI of the form svc:<service>")
    return resource[len(ACTOR_PREFIX):]


def parse_form(body: bytes) -> list[tuple[str, str]]:
    """``application/x-www-form-urlencoded`` bytes as pairs; strict UTF-8, bounded field count."""
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        raise InvalidRequest("form body must be ASCII (percent-encode everything else)") from None
    pairs: list[tuple[str, str]] = []
    for field in text.split("&") if text else []:
        if len(pairs) >= MAX_FORM_FIELDS:
            raise InvalidRequest(f"at most {MAX_FORM_FIELDS} parameters are accepted")
        name, _, value = field.partition("=")
        try:
            pairs.append((_decode(name), _decode(value)))
        except UnicodeDecodeError:
            raise InvalidRequest("form values must be UTF-8 once percent-decoded") from None
    return pairs


def _decode(part: str) -> str:
    return unquote_plus(part, encoding="utf-8", errors="strict")


# --------------------------------------------------------------------------- client authentication


def check_client_basic(authorization: str | None, *, client_id: str, secret: bytes | None) -> None:
    """HTTP Basic client authentication (RFC 6749 2.3.1), when a secret is configured.

    Without a configured secret the local connection is the authentication (the guard
    middleware admits loopback and unix-socket callers only) and the header is ignored.
    Both the id and the secret are compared in constant time.
    """
    if secret is None:
        return
    scheme, _, encoded = (authorization or "").partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        raise InvalidClient("client authentication (HTTP Basic) is required")
    try:
        user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise InvalidClient("malformed HTTP Basic credentials") from None
    # RFC 6749 2.3.1 has the client form-urlencode id and secret before Basic encoding; most
    # clients do not (authlib, requests, httpx, curl -u send them as they are), so a secret with
    # '+', '%' or ' ' failed for them. Either spelling of the one configured secret is accepted;
    # both comparisons always run, in constant time.
    id_ok = _either_spelling(user, client_id.encode())
    secret_ok = _either_spelling(password, secret)
    if not (sep and id_ok and secret_ok):
        raise InvalidClient("client authentication failed")


def _either_spelling(sent: str, expected: bytes) -> bool:
    """``sent`` equals ``expected`` as sent or once form-urldecoded (constant time, both compared)."""
    as_sent = hmac.compare_digest(sent.encode(), expected)
    decoded = hmac.compare_digest(unquote_plus(sent).encode(), expected)
    return as_sent | decoded


def read_client_secret(path: str | os.PathLike[str]) -> bytes:
    """The client secret file's first line; refuses a file others can read."""
    target = Path(path)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
        data = target.read_bytes()
    except OSError as exc:
        raise KeyMaterialError(f"cannot read client secret file {path}: {exc.strerror}") from None
    if mode & 0o077:
        raise KeyMaterialError(f"client secret file {path} must not be readable by others (chmod 600)")
    secret = data.strip()
    if len(secret) < 16:
        raise KeyMaterialError("client secret must be at least 16 bytes")
    return secret
