"""What both Envoy doors share: an HTTP request seen by Envoy -> one question -> one outcome.

The gRPC door (``Authorization/Check``, ``grpc_ext_authz``) and the HTTP door
(``http_service`` mode, ``http/envoy_http``) only translate their wire format into an
:class:`EnvoyRequest` and an :class:`Outcome` back, so the two can never decide differently.

The mapping (docs/decision-input.md):

- the request target must be normal (``request_target``), else 400 ``path_rejected``;
- a header an upstream may read as another method or target (``X-HTTP-Method-Override``,
  ``X-Original-URL``...) that names another than the request's: 400 ``header_overrides_request``;
- action ``route:read`` for GET/HEAD/OPTIONS, ``route:write`` otherwise, with ``method``,
  ``path`` (normal, without the query) and ``query`` (when present) in ``action.properties``;
- resource ``{"type": "route", "id": <normal path>}``; a tenant named by the path
  (``/tenants/<t>/...``, the literal ``tenants`` in any case) or by ``x-tenant-id`` headers
  becomes ``resource.properties.tenant_id``, so the built-in tenant check compares it with
  the token's tenant instead of trusting it; two different names conflict (deny).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tenantguard.errors import InvalidInput, TokenError
from tenantguard.server.asgi import bearer_challenge

from .http.wire import DuplicateHeader
from .request_target import PathRejected, normal_target
from .runtime import Sidecar

log = logging.getLogger(__name__)

DEFAULT_TENANT_PATH = re.compile(r"^/(?i:tenants)/(?P<tenant>[^/]+)")
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
TENANT_HEADER = "x-tenant-id"
SUBJECT_HEADER = "x-tenant-subject"
DECISION_HEADER = "x-tenantguard-decision-id"
CONFLICTING = "\x00conflicting"  # a tenant nobody can be
MAX_HEADER_VALUES = 32
REALM = "tenantguard"  # the sidecar's RFC 6750 realm (authz_sidecar.app.REALM)


@dataclass(frozen=True, slots=True)
class EnvoyRequest:
    """The parts of the original request a decision reads; header names in lower case."""

    method: str
    target: str  # path[?query] as Envoy forwards it (no decoding performed)
    headers: Mapping[str, tuple[str, ...]]
    host: str = ""
    query: str | None = None  # Envoy's separate ``http.query``, when the target has none
    fragment: str = ""

    def header(self, name: str) -> str | None:
        """The single value of ``name``; DuplicateHeader when it came with different values."""
        values = set(self.headers.get(name, ()))
        if len(values) > 1:
            raise DuplicateHeader(f"the {name} header appears with different values", header=name)
        return values.pop() if values else None


class TooManyHeaderValues(InvalidInput):
    """One header name repeated beyond ``MAX_HEADER_VALUES`` (400)."""

    code = "too_many_header_values"


def collect_headers(pairs: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """Name (lower case) -> values; :class:`TooManyHeaderValues` past ``MAX_HEADER_VALUES`` of one name.

    Why refuse rather than keep the first few: a dropped repeat is a value the decision
    never saw (a second ``authorization`` or ``x-tenant-id`` after 32 copies of the first)
    while the upstream still receives it.
    """
    out: dict[str, list[str]] = {}
    for name, value in pairs:
        key = name.lower()
        values = out.setdefault(key, [])
        if len(values) >= MAX_HEADER_VALUES:
            raise TooManyHeaderValues(f"the {key[:64]} header appears more than {MAX_HEADER_VALUES} times",
                                      header=key[:64])
        values.append(value)
    return {k: tuple(v) for k, v in out.items()}


@dataclass(frozen=True, slots=True)
class Outcome:
    """A door-neutral answer: allowed with upstream headers, or denied with a status and body."""

    allow: bool
    http_status: int
    rpc_code: int  # google.rpc.Code
    body: dict[str, Any] = field(default_factory=dict)
    upstream_headers: tuple[tuple[str, str], ...] = ()
    challenge: str | None = None  # WWW-Authenticate of a 401, as every other door writes it


def unauthenticated(exc: TokenError | None, body: dict[str, Any]) -> Outcome:
    """A 401 for either Envoy door: the challenge names ``invalid_token`` when a token was refused
    (the doors wrote the bare challenge, so a client behind Envoy could not tell an expired
    token from a missing one, as it can at every other door)."""
    return Outcome(False, 401, 16, body, challenge=bearer_challenge(exc, realm=REALM))


class AliasedHeader(InvalidInput):
    """A header spelled so that an upstream may read it as one the sidecar sets (400)."""

    code = "header_aliased"


SIDECAR_HEADERS = frozenset({TENANT_HEADER, SUBJECT_HEADER, DECISION_HEADER})


def refuse_aliases(headers: Mapping[str, tuple[str, ...]]) -> None:
    """:class:`AliasedHeader` for ``x_tenant_id`` and the like.

    Why: CGI/WSGI servers and some proxies fold ``_`` and ``-`` together (both become
    ``HTTP_X_TENANT_ID``), so a client's ``x_tenant_id: globex`` could reach the app beside,
    or instead of, the ``x-tenant-id`` the sidecar sets from the token (and likewise a
    subject beside ``x-tenant-subject``). Envoy's ``headers_with_underscores_action:
    REJECT_REQUEST`` (deploy/) stops them first; this door does not rely on it.
    """
    for name in headers:
        if "_" in name and name.replace("_", "-") in SIDECAR_HEADERS:
            raise AliasedHeader(f"the {name[:64]} header aliases {name.replace('_', '-')}", header=name[:64])


def tenant_claims(values: Iterable[str]) -> set[str]:
    """The tenant names ``x-tenant-id`` values state, each value read as a comma-separated list.

    Why: Envoy folds a repeated header into one value joined by ``,`` before asking (both
    doors), so a client's two identical ``x-tenant-id: acme`` lines arrived as ``acme,acme``
    and were denied as a tenant mismatch, while the same request sent to a door directly is
    one claim. No tenant name contains a comma (``tokens.is_tenant_name``), so the split never
    cuts a name; empty elements are kept, so ``acme,`` still names two tenants (a deny).
    """
    return {element.strip(" \t") for value in values for element in value.split(",")}


class OverridingHeader(InvalidInput):
    """A header some frameworks read as the request's real method or target (400)."""

    code = "header_overrides_request"


# Headers with which an upstream framework replaces the method (Express method-override,
# Spring's HiddenHttpMethodFilter behind proxies, Symfony with http_method_override, ASP.NET)
# or the target (Symfony and IIS read X-Original-URL / X-Rewrite-URL to route).
METHOD_OVERRIDES = ("x-http-method-override", "x-http-method", "x-method-override")
TARGET_OVERRIDES = ("x-original-url", "x-rewrite-url")


def refuse_overrides(request: EnvoyRequest, method: str) -> None:
    """:class:`OverridingHeader` when a client header names another method or target than the
    one decided on. Why: the decision is taken on Envoy's ``:method`` and ``:path``; an upstream
    that honours ``X-HTTP-Method-Override: DELETE`` or ``X-Original-URL: /tenants/globex/...``
    would run another request than the one allowed. A header repeating the request's own
    method or target is harmless and passes.
    """
    for name in METHOD_OVERRIDES:
        for value in request.headers.get(name, ()):
            if value.strip().upper() != method:
                raise OverridingHeader(f"the {name} header names another method than {method}", header=name)
    sent = request.target if request.query is None or "?" in request.target else f"{request.target}?{request.query}"
    for name in TARGET_OVERRIDES:
        for value in request.headers.get(name, ()):
            if value.strip() != sent:
                raise OverridingHeader(f"the {name} header names another target than the request's", header=name)


def question_for(request: EnvoyRequest, tenant_path: re.Pattern[str] = DEFAULT_TENANT_PATH) -> dict[str, Any]:
    """The AuthZEN-shaped question for one request; PathRejected for a target that is not normal."""
    refuse_aliases(request.headers)
    if request.fragment:
        raise PathRejected("a request target carries no fragment", rule="fragment")
    target = normal_target(request.target or "/", request.query or None)
    method = (request.method or "GET").upper()
    refuse_overrides(request, method)
    named = tenant_claims(request.headers.get(TENANT_HEADER, ()))
    match = tenant_path.match(target.path)
    if match:
        named.add(match.group("tenant"))
    properties: dict[str, Any] = {"host": request.host}
    if len(named) > 1:  # the path and the header (or two headers) disagree: nobody can be that tenant
        properties["tenant_id"] = CONFLICTING
    elif named:
        properties["tenant_id"] = named.pop()
    action: dict[str, Any] = {"method": method, "path": target.path}
    if target.query is not None:
        action["query"] = target.query
    return {
        "action": {"name": "route:read" if method in READ_METHODS else "route:write", "properties": action},
        "resource": {"type": "route", "id": target.path, "properties": properties},
        "context": {"transport": "envoy"},
    }


def authorize(sidecar: Sidecar, request: EnvoyRequest, tenant_path: re.Pattern[str] = DEFAULT_TENANT_PATH,
              *, metric: str = "envoy_total") -> Outcome:
    """Decide one request for either Envoy door; never raises (fails closed)."""
    start = time.perf_counter()
    try:
        authorization = request.header("authorization")
        if not authorization:
            return unauthenticated(None, {"error": "token_missing", "message": "a context token is required"})
        claims = sidecar.authenticate(authorization)
        question = question_for(request, tenant_path)
        decision = sidecar.decide(question, claims, door="envoy")
    except TokenError as exc:
        return unauthenticated(exc, exc.to_dict())
    except InvalidInput as exc:
        return Outcome(False, 400, 3, exc.to_dict())
    except Exception:  # fail closed, never a traceback to Envoy
        log.exception("ext_authz check failed closed")
        return Outcome(False, 403, 7, {"error": "internal_error"})
    finally:
        sidecar.metrics.latency.labels(metric).observe(time.perf_counter() - start)
    if claims is None or not decision.allow:
        return Outcome(False, 403, 7, {"error": "forbidden", "reasons": list(decision.reasons),
                                       "decision_id": decision.decision_id})
    return Outcome(True, 200, 0, upstream_headers=(
        (TENANT_HEADER, claims.tenant_id), (SUBJECT_HEADER, claims.sub), (DECISION_HEADER, decision.decision_id)))
