"""The exchanger: the policy questions (exchange, propagation), the subject of an exchange, and
:class:`TokenExchanger`, which enforces the minting rules listed in ``tenantguard.exchange``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenantguard.decision.core import PolicyRevision
from tenantguard.decision.hold import DecisionHold
from tenantguard.errors import TenantGuardError, TokenError
from tenantguard.feed.topology import sidecar_issuer
from tenantguard.identity.keys import SigningKey
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

from .oauth import (
    EXCHANGE_ENTRYPOINT,
    PROPAGATION_ENTRYPOINT,
    PROPAGATION_MODES,
    SERVICE_NAME,
    TOKEN_TYPE_ID_TOKEN,
    ExchangeError,
    ExchangeRequest,
    InvalidRequest,
    InvalidScope,
    InvalidTarget,
    PropagationMode,
    TemporarilyUnavailable,
    UnauthorizedClient,
    all_covered,
    check_client_basic,
)

log = logging.getLogger(__package__)  # "tenantguard.exchange", as before the split

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
    if policy is None or not SERVICE_NAME.fullmatch(target):
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
        hold: DecisionHold | None = None,
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
        # the decision core's hold: while decisions are held (revocations not replayed), nothing is minted
        self.hold = hold
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
        self._check_hold()
        subject = await self._subject(request)
        return self.exchange_subject(subject, request)

    def exchange_subject(self, subject: Subject, request: ExchangeRequest) -> ExchangeResult:
        """The synchronous rest of an exchange, once the subject is known."""
        self._check_hold()
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

    def _check_hold(self) -> None:
        """503 ``temporarily_unavailable`` while decisions are held: a token revoked but not yet
        replayed here would otherwise be exchanged for a fresh one."""
        held = self.hold.current if self.hold is not None else None
        if held is not None:
            raise TemporarilyUnavailable(held.message, reason=held.code)

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
