"""RFC 8693 token exchange: the request model, the policy question, the minting rules.

A sidecar exchanges the context token its service received (the *subject token*, whose
``aud`` is this service) for a new context token for the next service (the *target*).
The library does all of it; the HTTP door (``POST /oauth2/token``) only parses the form
and renders the OAuth answer. Rules, each enforced here in Python even where the policy
also enforces it (one bug alone must not widen a token):

* the subject token is verified by this service's :class:`~tenantguard.identity.tokens.TokenVerifier`
  (or, in edge mode, by :class:`~tenantguard.identity.oidc.EdgeVerifier` against a tenant's IdP);
* ``may_act`` in the subject token, when present, must name this actor (RFC 8693 4.4);
* the actor chain grows by exactly one hop and never past ``max_act_depth``;
* the policy (``data.tenantguard.exchange.decision``) must allow this service to call the
  target on behalf of this tenant with the requested scope;
* scope is only ever narrowed: granted ⊆ requested ⊆ the subject's scope (when it has one);
* ``exp`` is never later than the subject token's, and the lifetime is at most
  min(configured lifetime, the policy's ``max_lifetime``);
* same ``sub``/``tenant_id``/``roles``, ``aud`` = target, new ``jti``,
  ``act`` = ``{"sub": "svc:<this service>", "act": <previous chain>}`` (RFC 8693 4.1),
  ``iss`` = ``sidecar:<this service>``, signed with this sidecar's own key;
* ``tg_chain`` = the subject token's ``tg_chain`` + its ``jti``, ``tg_chain_kids`` = the
  subject token's ``tg_chain_kids`` + its ``kid``, and ``tg_root_iat`` = the root token's
  ``iat``: every verifier refuses the new token as soon as any token it descends from, or
  any key that signed one of them, is revoked, or its subject or tenant is cut off after
  the root was issued;
* no exchange at all while the subject's tenant is under the kill switch, whatever the
  subject token's ``iat``.

Errors are OAuth's (RFC 6749 5.2, RFC 8693 2.2.2): each :class:`ExchangeError` carries the
``error`` value and HTTP status. RFC 8693 2.2.2 says an invalid or unacceptable subject
token MUST be answered with ``invalid_request`` (not ``invalid_grant``), so it is; the
tenantguard code that says why (``token_expired``, ``audience_invalid`` ...) leads the
``error_description``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import os
import re
import stat
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol
from urllib.parse import unquote_plus

from tenantguard.decision.core import PolicyRevision
from tenantguard.errors import KeyMaterialError, TenantGuardError, TokenError
from tenantguard.feed.topology import sidecar_issuer
from tenantguard.identity.keys import DEFAULT_ALGORITHM, Algorithm, SigningKey, write_private
from tenantguard.identity.tokens import (
    ACTOR_PREFIX,
    DEFAULT_LIFETIME,
    DEFAULT_MAX_ACT_DEPTH,
    MAX_LIFETIME,
    MAX_TOKEN_BYTES,
    TOKEN_SUBJECT_TYPE,
    Claims,
    TokenVerifier,
    is_jti,
    is_scope_token,
    is_subject_id,
    is_tenant_name,
    mint,
    parse_compact,
)

if TYPE_CHECKING:
    from tenantguard.identity.oidc import EdgeVerifier, ExternalIdentity

log = logging.getLogger(__name__)

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
_SERVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
# RFC 6749 5.2: error_description is limited to %x20-21 / %x23-5B / %x5D-7E.
_DESCRIPTION_UNSAFE = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")
KEY_FILE = Path("exchange") / "signing-key.pem"


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
    if not _SERVICE_NAME.fullmatch(name):
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


# --------------------------------------------------------------------------- keys


def load_or_create_signing_key(state_dir: Path | None, alg: Algorithm = DEFAULT_ALGORITHM) -> SigningKey:
    """The sidecar's exchange signing key: persisted 0600 under ``state_dir`` so restarts
    keep the ``kid`` other sidecars trust; in memory only when there is no state dir."""
    if state_dir is None:
        return SigningKey.generate(alg)
    path = state_dir / KEY_FILE
    if path.exists():
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            raise KeyMaterialError(f"{path} must not be readable by others (chmod 600)")
        return SigningKey.load(path)
    key = SigningKey.generate(alg)
    write_private(path, key.private_pem())
    log.info("generated exchange signing key %s at %s", key.kid, path)
    return key


def replace_signing_key(state_dir: Path | None, alg: Algorithm = DEFAULT_ALGORITHM) -> SigningKey:
    """A new exchange signing key, replacing the persisted one (0600, atomically) when
    there is a ``state_dir``: for a key that was revoked, which must never sign again."""
    key = SigningKey.generate(alg)
    if state_dir is not None:
        write_private(state_dir / KEY_FILE, key.private_pem())
    log.warning("generated replacement exchange signing key %s", key.kid)
    return key


class KeyRegistrar(Protocol):
    """Hands the sidecar's public key to whoever publishes trust (the plane, later).

    The hook for the plane issue: the plane registers the key with the service's
    credential and publishes it in the trust set. Until then :class:`LocalTrustOnly`
    does nothing, and operators build trust files from ``GET /v1/keys``.
    """

    def register(self, service: str, jwk: Mapping[str, Any]) -> None: ...


class LocalTrustOnly:
    """No plane yet: trust travels in local trust files."""

    def register(self, service: str, jwk: Mapping[str, Any]) -> None:
        log.info("exchange key %s for %s: add it to peers' trust files (GET /v1/keys)", jwk.get("kid"), service)


# --------------------------------------------------------------------------- policy questions


@dataclass(frozen=True, slots=True)
class ExchangeVerdict:
    """The policy's answer, read fail-closed: anything malformed is a deny."""

    allow: bool
    reasons: tuple[str, ...]
    scope: tuple[str, ...]
    max_lifetime: float

    @classmethod
    def from_result(cls, result: Any) -> ExchangeVerdict:
        if not isinstance(result, Mapping) or not isinstance(result.get("allow"), bool):
            return cls(False, ("policy_result_invalid",), (), 0)
        reasons = result.get("reasons") or []
        reasons = tuple(str(r) for r in reasons) if isinstance(reasons, list) else ("policy_result_invalid",)
        if not result["allow"]:
            return cls(False, reasons or ("policy_denied",), (), 0)
        scope, lifetime = result.get("scope"), result.get("max_lifetime")
        if (
            not isinstance(scope, list) or not scope or not all(isinstance(s, str) and s for s in scope)
            or isinstance(lifetime, bool) or not isinstance(lifetime, int | float) or lifetime < 1
        ):
            return cls(False, ("policy_result_invalid",), (), 0)
        return cls(True, (), tuple(scope), float(lifetime))


def exchange_input(subject: Subject, service: str, audience: str, scope: Sequence[str] | None) -> dict[str, Any]:
    """``input`` for ``data.tenantguard.exchange.decision`` (bundles/README.md)."""
    props: dict[str, Any] = {"tenant_id": subject.tenant_id, "roles": list(subject.roles)}
    if subject.scope:
        props["scope"] = " ".join(subject.scope)
    return {
        "subject": {"type": TOKEN_SUBJECT_TYPE, "id": subject.sub, "properties": props},
        "actor": {"service": service},
        "audience": audience,
        "scope": list(scope or ()),
        "actor_chain": subject.actor_chain,
    }


def propagation_mode(policy: PolicyRevision | None, source: str, target: str) -> PropagationMode:
    """How ``source`` should carry a caller's context to ``target``: forward, exchange or deny.

    Asks ``data.tenantguard.propagation.mode`` on the active revision. Fails closed:
    no policy, an evaluation error or an unexpected value all give ``"deny"``.
    """
    if policy is None or not _SERVICE_NAME.fullmatch(target):
        return "deny"
    try:
        mode = policy.policy.evaluate(PROPAGATION_ENTRYPOINT, {"source": source, "target": target})
    except Exception:  # fail closed, and say why in the log
        log.exception("propagation policy failed for %s -> %s", source, target)
        return "deny"
    return mode if isinstance(mode, str) and mode in PROPAGATION_MODES else "deny"  # type: ignore[return-value]


# --------------------------------------------------------------------------- the subject


@dataclass(frozen=True, slots=True)
class Subject:
    """Who the exchange is for, from a verified subject token (internal or external)."""

    sub: str
    tenant_id: str
    roles: tuple[str, ...]
    scope: tuple[str, ...]  # empty = unrestricted (the token carried no scope)
    exp: float
    act: Mapping[str, Any] | None = None
    may_act: Mapping[str, Any] | None = None
    chain: tuple[str, ...] = ()  # the new token's tg_chain: the subject's ancestors, then the subject
    root_iat: float = 0.0  # the new token's tg_root_iat: when the root token was issued
    chain_kids: tuple[str, ...] = ()  # the new token's tg_chain_kids: the ancestors' kids, then the subject's

    @classmethod
    def from_claims(cls, claims: Claims) -> Subject:
        return cls(claims.sub, claims.tenant_id, claims.roles, claims.scope, claims.exp, claims.act, claims.may_act,
                   (*claims.chain, claims.jti), claims.origin_iat, _nameable_kids(*claims.chain_kids, claims.kid))

    @classmethod
    def from_external(cls, identity: ExternalIdentity) -> Subject:
        """An IdP's user: no actor yet, no scope of ours (the rule's scope applies); the IdP
        token is the root (its jti, when it has a usable one, its kid and its iat)."""
        chain = (identity.jti,) if identity.jti else ()
        return cls(identity.sub, identity.tenant_id, identity.roles, (), identity.exp, chain=chain,
                   root_iat=identity.iat, chain_kids=_nameable_kids(identity.kid))

    @property
    def actor_chain(self) -> list[str]:
        chain: list[str] = []
        act = self.act
        while isinstance(act, Mapping):
            chain.append(str(act.get("sub", "")))
            act = act.get("act")
        return chain


def _nameable_kids(*kids: str) -> tuple[str, ...]:
    """The kids a kid revocation can name (the revocation API's syntax, as for jtis): what
    ``tg_chain_kids`` carries. Another kid could never be revoked, so it is left out rather
    than minted into a token every verifier would refuse."""
    return tuple(k for k in kids if is_jti(k))


@dataclass(frozen=True, slots=True)
class ExchangeResult:
    """RFC 8693 2.2.1 response members (``token_type`` is always ``Bearer``)."""

    access_token: str
    issued_token_type: str
    expires_in: int
    scope: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token,
            "issued_token_type": self.issued_token_type,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "scope": " ".join(self.scope),
        }


# Policy deny reasons -> the OAuth error that tells the client what to change.
_REASON_ERRORS: tuple[tuple[str, type[ExchangeError]], ...] = (
    ("invalid_input", InvalidRequest),
    ("missing_tenant", InvalidRequest),
    ("actor_chain_too_deep", InvalidRequest),
    ("scope_not_allowed", InvalidScope),
)


def _verdict_error(verdict: ExchangeVerdict, audience: str) -> ExchangeError:
    """Which OAuth error a policy deny becomes; everything else is ``invalid_target``
    ("unwilling or unable to issue a token for the target", RFC 8693 2.2.2)."""
    reasons = ",".join(verdict.reasons)
    for reason, error in _REASON_ERRORS:
        if reason in verdict.reasons:
            return error(f"policy refused the exchange towards {audience} ({reasons})", reason=reason)
    return InvalidTarget(f"policy refused the exchange towards {audience} ({reasons})", reason=verdict.reasons[0])


# --------------------------------------------------------------------------- the exchanger


class TokenExchanger:
    """Exchanges subject tokens for next-hop context tokens on behalf of one service.

    Holds no policy of its own: ``policy`` returns the sidecar's active revision at each
    call, so a bundle swap applies to the very next exchange.
    """

    def __init__(
        self,
        service: str,
        key: SigningKey,
        verifier: TokenVerifier,
        policy: Callable[[], PolicyRevision | None],
        *,
        lifetime: float = DEFAULT_LIFETIME,
        max_act_depth: int = DEFAULT_MAX_ACT_DEPTH,
        edge: EdgeVerifier | None = None,
        client_secret: bytes | None = None,
        clock: Callable[[], float] = time.time,
        tenant: str | None = None,
        holds_tenant: Callable[[str], bool] | None = None,
    ) -> None:
        if not 0 < lifetime <= MAX_LIFETIME:
            raise ValueError(f"exchange lifetime must be within (0, {MAX_LIFETIME:.0f}] s")
        if not 1 <= max_act_depth <= 16:
            raise ValueError("max_act_depth must be within 1..16")
        self.service = service
        self.actor = ACTOR_PREFIX + service
        self.issuer = sidecar_issuer(service)
        self.key = key
        self.verifier = verifier
        self.policy = policy
        self.lifetime = lifetime
        self.max_act_depth = max_act_depth
        self.edge = edge
        self.client_secret = client_secret
        self.tenant = tenant  # a single-tenant sidecar exchanges this tenant's tokens only
        # a sidecar scoped to some tenant cells exchanges only their tenants' tokens (out_of_scope)
        self.holds_tenant = holds_tenant
        self._clock = clock

    def jwks(self) -> dict[str, Any]:
        """This sidecar's public key in trust-file form (a JWKS whose key carries ``iss``)."""
        return {"keys": [{**self.key.public_jwk(), "iss": self.issuer}]}

    async def aclose(self) -> None:
        """Release the edge verifier's HTTP client (JWKS fetches), if any."""
        if self.edge is not None:
            await self.edge.aclose()

    def authenticate_client(self, authorization: str | None) -> None:
        check_client_basic(authorization, client_id=self.service, secret=self.client_secret)

    async def exchange(self, request: ExchangeRequest) -> ExchangeResult:
        """Verify, ask the policy, mint; raises :class:`ExchangeError` with the OAuth code."""
        subject = await self._subject(request)
        return self.exchange_subject(subject, request)

    def exchange_subject(self, subject: Subject, request: ExchangeRequest) -> ExchangeResult:
        """The synchronous rest of an exchange, once the subject is known."""
        if self.tenant is not None and subject.tenant_id != self.tenant:
            raise InvalidRequest("this sidecar serves another tenant", reason="tenant_not_served")
        if self.holds_tenant is not None and not self.holds_tenant(subject.tenant_id):
            raise InvalidRequest("the subject's tenant is outside this sidecar's cells", reason="out_of_scope")
        if subject.tenant_id in self.verifier.revocations.tenants:  # the kill switch, as decisions see it
            raise InvalidRequest("the subject's tenant is under a kill switch", reason="tenant_revoked")
        self._check_nameable(subject)
        self._check_may_act(subject)
        self._check_depth(subject)
        self._check_requested_scope(subject, request.scope)
        verdict = self._ask_policy(subject, request)
        granted = self._check_granted(subject, request.scope, verdict.scope)
        now = self._clock()
        lifetime = min(self.lifetime, verdict.max_lifetime)
        if subject.exp - now < 1:
            raise InvalidRequest("subject token expires now; nothing left to exchange", reason="token_expired")
        token = mint(
            self.key,
            issuer=self.issuer,
            sub=subject.sub,
            tenant_id=subject.tenant_id,
            audience=request.audience,
            roles=subject.roles,
            scope=granted,
            lifetime=lifetime,
            act=self._next_act(subject),
            not_after=subject.exp,
            now=now,
            jti=uuid.uuid4().hex,
            chain=subject.chain,
            root_iat=subject.root_iat,
            chain_kids=subject.chain_kids,
        )
        expires_in = int(min(int(now) + int(lifetime), int(subject.exp)) - int(now))
        return ExchangeResult(token, request.issued_token_type, expires_in, granted)

    # -- steps -----------------------------------------------------------------------

    async def _subject(self, request: ExchangeRequest) -> Subject:
        """Verify the subject token: an external IdP token in edge mode, else a context token."""
        token = request.subject_token
        try:
            if self.edge is not None and self.edge.handles(token):
                return Subject.from_external(await self.edge.verify(token))
            if request.subject_token_type == TOKEN_TYPE_ID_TOKEN:
                parse_compact(token, max_bytes=2 * MAX_TOKEN_BYTES)  # a token that does not decode says so
                raise InvalidRequest("id_token subject tokens are accepted only from configured edge issuers")
            return Subject.from_claims(self.verifier.verify(token))
        except TokenError as exc:
            raise InvalidRequest(f"subject_token rejected: {exc.message}", reason=exc.code) from None
        except TenantGuardError as exc:
            if exc.retryable:
                raise TemporarilyUnavailable(exc.message, reason=exc.code) from None
            if isinstance(exc, ExchangeError):
                raise
            raise InvalidRequest(f"subject_token rejected: {exc.message}", reason=exc.code) from None

    @staticmethod
    def _check_nameable(subject: Subject) -> None:
        """Mint only what every verifier accepts and every revocation can name.

        An IdP's ``sub`` (edge mode) is not bound by our claim syntax; a token carrying a
        subject no subject revocation can name, or a tenant no kill switch can name, is
        refused here rather than minted and refused (or worse, unstoppable) downstream.
        """
        if not is_subject_id(subject.sub):
            raise InvalidRequest("the subject's sub is not 1..256 printable ASCII characters without '#'",
                                 reason="claim_invalid")
        if not is_tenant_name(subject.tenant_id):
            raise InvalidRequest("the subject's tenant is not a tenant name", reason="claim_invalid")

    def _check_may_act(self, subject: Subject) -> None:
        """RFC 8693 4.4: a subject token naming who may act admits that party only."""
        may_act = subject.may_act
        if may_act is None:
            return
        me = {"sub": self.actor, "iss": self.issuer}
        named = {k: may_act.get(k) for k in ("sub", "iss") if k in may_act}
        if not named or any(me[k] != v for k, v in named.items()):
            raise UnauthorizedClient(f"the subject token's may_act does not name {self.actor}", reason="may_act")

    def _check_depth(self, subject: Subject) -> None:
        """Refuse before minting a token the next hop would refuse anyway."""
        if len(subject.actor_chain) + 1 > self.max_act_depth:
            raise InvalidRequest(f"actor chain would exceed {self.max_act_depth} hops", reason="actor_chain_too_deep")

    @staticmethod
    def _check_requested_scope(subject: Subject, requested: tuple[str, ...] | None) -> None:
        if requested and subject.scope and not all_covered(requested, subject.scope):
            raise InvalidScope("requested scope exceeds the subject token's scope", reason="scope_widening")

    def _ask_policy(self, subject: Subject, request: ExchangeRequest) -> ExchangeVerdict:
        active = self.policy()
        if active is None:
            raise TemporarilyUnavailable("no verified policy bundle is active yet", reason="not_ready")
        doc = exchange_input(subject, self.service, request.audience, request.scope)
        try:
            verdict = ExchangeVerdict.from_result(active.policy.evaluate(EXCHANGE_ENTRYPOINT, doc))
        except Exception as exc:  # an evaluation error never mints (fail closed)
            log.warning("exchange policy failed on revision %s: %s", active.revision, exc)
            raise InvalidTarget("the exchange policy could not be evaluated", reason="policy_error") from None
        if not verdict.allow:
            raise _verdict_error(verdict, request.audience)
        return verdict

    @staticmethod
    def _check_granted(
        subject: Subject, requested: tuple[str, ...] | None, granted: tuple[str, ...]
    ) -> tuple[str, ...]:
        """Defence in depth: whatever the policy says, a granted scope only narrows.

        Each granted item must be one scope token: ``"x:a y:b"`` is covered by a requested
        ``x:*`` as a string, yet the minted space-separated claim would read as two scopes.
        """
        if not all(is_scope_token(s) for s in granted):
            raise InvalidScope("policy granted a malformed scope token", reason="policy_widened_scope")
        if requested and not all_covered(granted, requested):
            raise InvalidScope("policy granted scope beyond the request", reason="policy_widened_scope")
        if subject.scope and not all_covered(granted, subject.scope):
            raise InvalidScope("policy granted scope beyond the subject token's", reason="policy_widened_scope")
        return tuple(sorted(set(granted)))

    def _next_act(self, subject: Subject) -> dict[str, Any]:
        """RFC 8693 4.1: this actor is current; prior actors nest beneath it."""
        act: dict[str, Any] = {"sub": self.actor}
        if subject.act is not None:
            act["act"] = dict(subject.act)
        return act


__all__ = [
    "EXCHANGE_ENTRYPOINT",
    "GRANT_TYPE_TOKEN_EXCHANGE",
    "PROPAGATION_ENTRYPOINT",
    "TOKEN_TYPE_ACCESS_TOKEN",
    "TOKEN_TYPE_ID_TOKEN",
    "TOKEN_TYPE_JWT",
    "ExchangeError",
    "ExchangeRequest",
    "ExchangeResult",
    "ExchangeVerdict",
    "InvalidClient",
    "InvalidRequest",
    "InvalidScope",
    "InvalidTarget",
    "KeyRegistrar",
    "LocalTrustOnly",
    "Subject",
    "TemporarilyUnavailable",
    "TokenExchanger",
    "UnauthorizedClient",
    "UnsupportedGrantType",
    "check_client_basic",
    "exchange_input",
    "load_or_create_signing_key",
    "parse_form",
    "parse_scope",
    "propagation_mode",
    "read_client_secret",
]
