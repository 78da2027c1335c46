"""Context tokens: minting at the edge and in sidecars, verifying at every hop.

A context token is a short-lived JWT carrying the tenant and user, signed with an
asymmetric key (EdDSA by default; ES256/RS256 when configured; never ``none``, never
HMAC). Verification is local: the header's ``kid`` selects a key from the
:class:`~tenantguard.keys.TrustSet`, and that key's own algorithm is the only one
tried, which closes the classic HS256-with-the-public-key confusion by construction.
Verified tokens are cached by SHA-256 until their ``exp``; revocations and removed
keys are re-checked on every cache hit.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jwt
from cachetools import TLRUCache

from .errors import (
    ActorChainTooDeep,
    ActorMismatch,
    AlgorithmNotAllowed,
    AudienceInvalid,
    ClaimInvalid,
    ClaimMissing,
    ConfigError,
    IssuerNotTrusted,
    SignatureInvalid,
    TokenError,
    TokenExpired,
    TokenMalformed,
    TokenMissing,
    TokenNotYetValid,
    TokenRevoked,
    TokenTooLarge,
    UnknownKey,
)
from .keys import SUPPORTED_ALGORITHMS, Algorithm, SigningKey, TrustSet
from .revocations import RevocationList
from .topology import sidecar_issuer

DEFAULT_LIFETIME = 300.0
MAX_LIFETIME = 3600.0
MAX_LEEWAY = 30.0
MAX_TOKEN_BYTES = 8 * 1024
DEFAULT_MAX_ACT_DEPTH = 4
DEFAULT_CACHE_SIZE = 10_000
SIDECAR_ISSUER_PREFIX = sidecar_issuer("")
ACTOR_PREFIX = "svc:"


@dataclass(frozen=True, slots=True)
class Claims:
    """The verified contents of a context token; the only source of the tenant."""

    iss: str
    sub: str
    tenant_id: str
    aud: tuple[str, ...]
    exp: float
    iat: float
    nbf: float | None
    jti: str
    roles: tuple[str, ...] = ()
    scope: tuple[str, ...] = ()
    act: Mapping[str, Any] | None = None
    may_act: Mapping[str, Any] | None = None
    kid: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def actor_chain(self) -> list[str]:
        """Actors nearest first: ``act.sub``, then ``act.act.sub`` and so on."""
        return actor_chain(self.act)

    def to_dict(self) -> dict[str, Any]:
        """The claims as plain JSON, e.g. for the policy input (never the raw token)."""
        return dict(self.raw)


def actor_chain(act: Mapping[str, Any] | None) -> list[str]:
    chain: list[str] = []
    while isinstance(act, Mapping):
        chain.append(str(act.get("sub", "")))
        act = act.get("act")
    return chain


def _act_depth(act: Any) -> int:
    depth = 0
    while isinstance(act, Mapping):
        depth += 1
        act = act.get("act")
    return depth


def _scope_tuple(scope: str | Iterable[str] | None) -> tuple[str, ...]:
    if scope is None:
        return ()
    if isinstance(scope, str):
        return tuple(s for s in scope.split(" ") if s)
    return tuple(scope)


def mint(
    key: SigningKey,
    *,
    issuer: str,
    sub: str,
    tenant_id: str,
    audience: str | Sequence[str],
    roles: Iterable[str] = (),
    scope: str | Iterable[str] | None = None,
    lifetime: float = DEFAULT_LIFETIME,
    act: Mapping[str, Any] | None = None,
    may_act: Mapping[str, Any] | None = None,
    not_after: float | None = None,
    now: float | None = None,
    jti: str | None = None,
) -> str:
    """Sign a context token; ``not_after`` caps ``exp`` (an exchanged token never outlives its source)."""
    if not 0 < lifetime <= MAX_LIFETIME:
        raise ConfigError(f"token lifetime must be in (0, {MAX_LIFETIME:.0f}] seconds, got {lifetime}")
    if not sub or not tenant_id:
        raise ClaimMissing("a context token needs both sub and tenant_id")
    now = time.time() if now is None else now
    iat = int(now)
    exp = iat + int(lifetime)
    if not_after is not None:
        exp = min(exp, int(not_after))
    payload: dict[str, Any] = {
        "iss": issuer,
        "sub": sub,
        "tenant_id": tenant_id,
        "aud": audience if isinstance(audience, str) else list(audience),
        "iat": iat,
        "nbf": iat,
        "exp": exp,
        "jti": jti or uuid.uuid4().hex,
        "roles": list(roles),
    }
    scopes = _scope_tuple(scope)
    if scopes:
        payload["scope"] = " ".join(scopes)
    if act is not None:
        payload["act"] = dict(act)
    if may_act is not None:
        payload["may_act"] = dict(may_act)
    return jwt.encode(payload, key.private_key, algorithm=key.alg, headers={"kid": key.kid, "typ": "JWT"})


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    """What a service accepts; bounds are enforced at construction."""

    audience: str
    algorithms: frozenset[str] = frozenset({"EdDSA"})
    leeway: float = 0.0
    max_act_depth: int = DEFAULT_MAX_ACT_DEPTH
    max_lifetime: float = MAX_LIFETIME
    max_token_bytes: int = MAX_TOKEN_BYTES

    def __post_init__(self) -> None:
        if not self.audience:
            raise ConfigError("a verifier needs the audience (this service's name)")
        unsupported = set(self.algorithms) - set(SUPPORTED_ALGORITHMS)
        if unsupported or not self.algorithms:
            raise ConfigError(
                f"algorithms must be a non-empty subset of {SUPPORTED_ALGORITHMS}, got {sorted(self.algorithms)}"
            )
        if not 0 <= self.leeway <= MAX_LEEWAY:
            raise ConfigError(f"leeway must be within 0..{MAX_LEEWAY:.0f} s")
        if not 0 < self.max_lifetime <= MAX_LIFETIME:
            raise ConfigError(f"max_lifetime must be within (0, {MAX_LIFETIME:.0f}] s")
        if not 0 <= self.max_act_depth <= 16:
            raise ConfigError("max_act_depth must be within 0..16")
        if not 0 < self.max_token_bytes <= MAX_TOKEN_BYTES:
            raise ConfigError(f"max_token_bytes must be within 1..{MAX_TOKEN_BYTES}")


_JWT_ERRORS: tuple[tuple[type[Exception], type[TokenError], str], ...] = (
    (jwt.InvalidAudienceError, AudienceInvalid, "token is not for this service"),
    (jwt.MissingRequiredClaimError, ClaimMissing, "token lacks a required claim"),
    (jwt.InvalidSignatureError, SignatureInvalid, "signature does not verify"),
)


def _translate(exc: jwt.PyJWTError) -> TokenError:
    """pyjwt's errors become ours at the boundary, with stable codes."""
    for source, target, message in _JWT_ERRORS:
        if isinstance(exc, source):
            return target(message)
    return TokenMalformed(f"token cannot be decoded: {exc}")


_COMPACT_JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def read_header(token: str) -> dict[str, Any]:
    """The unverified JOSE header, parsed once with a strict shape check.

    pyjwt parses the header again inside ``decode``; its character-by-character
    alphabet check costs ~25 µs a call, so this pre-check (one C regex) keeps the
    uncached path close to the bare signature verify.
    """
    if not _COMPACT_JWS.fullmatch(token):
        raise TokenMalformed("token is not a compact JWS (three base64url segments)")
    segment = token.split(".", 1)[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (ValueError, binascii.Error):
        raise TokenMalformed("token header is not base64url JSON") from None
    if not isinstance(header, dict):
        raise TokenMalformed("token header is not a JSON object")
    return header


def token_digest(token: str) -> bytes:
    """The cache key of a token; also what logs may show instead of the token."""
    return hashlib.sha256(token.encode()).digest()


def token_fingerprint(token: str) -> str:
    """A short, non-reversible label for a token in logs (never log the token)."""
    return token_digest(token)[:8].hex()


class TokenVerifier:
    """Verifies context tokens for one service, with a bounded cache of successes."""

    def __init__(
        self,
        trust: TrustSet,
        options: VerifyOptions,
        *,
        revocations: RevocationList | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        clock: Any = time.time,
    ) -> None:
        self.trust = trust
        self.options = options
        self.revocations = revocations if revocations is not None else RevocationList()
        self._clock = clock
        # Each entry expires exactly at the token's exp; only successes are stored.
        self._cache: TLRUCache[bytes, Claims] = TLRUCache(
            maxsize=cache_size, ttu=lambda _k, claims, _now: claims.exp, timer=clock
        )
        self._lock = threading.Lock()
        self.cache_hits = 0
        self.cache_misses = 0

    def verify(self, token: str | None) -> Claims:
        """The verified claims, or a typed :class:`TokenError` saying exactly why not."""
        if not token:
            raise TokenMissing("no context token was presented")
        if len(token) > self.options.max_token_bytes:
            raise TokenTooLarge(f"token exceeds {self.options.max_token_bytes} bytes")
        if not token.isascii():  # a compact JWS is ASCII; other text cannot even be hashed (surrogates)
            raise TokenMalformed("token is not a compact JWS (three base64url segments)")
        digest = token_digest(token)
        with self._lock:
            claims = self._cache.get(digest)
        if claims is not None:
            self.cache_hits += 1
            self._recheck(claims)
            return claims
        self.cache_misses += 1
        claims = self._verify_uncached(token)
        with self._lock:
            self._cache[digest] = claims
        return claims

    def _recheck(self, claims: Claims) -> None:
        """What may have changed since the entry was cached: key removal, revocation."""
        trusted = self.trust.get(claims.kid)
        if trusted is None or not trusted.is_current(self._clock()):
            with self._lock:
                self._cache.clear()
            raise UnknownKey("signing key is no longer trusted", kid=claims.kid)
        self._check_revoked(claims)

    def _check_revoked(self, claims: Claims) -> None:
        why = self.revocations.reason(
            jti=claims.jti, kid=claims.kid, tenant=claims.tenant_id, sub=claims.sub, iat=claims.iat
        )
        if why is not None:
            raise TokenRevoked(why)

    def _verify_uncached(self, token: str) -> Claims:
        kid, alg = self._read_header(token)
        trusted = self.trust.get(kid)
        if trusted is None:
            raise UnknownKey("token is signed by an unknown key", kid=kid)
        if alg != trusted.alg:
            raise AlgorithmNotAllowed(f"token alg {alg} does not match its key's alg {trusted.alg}")
        now = self._clock()
        if not trusted.is_current(now):
            raise UnknownKey("signing key has passed its not-after time", kid=kid)
        try:
            payload = jwt.decode(
                token,
                key=trusted.public_key,
                algorithms=[trusted.alg],
                audience=self.options.audience,
                # Time is checked below against this verifier's clock, the same clock
                # that expires cache entries and keys, so the three can never disagree.
                options={
                    "require": ["exp", "iat", "iss", "sub", "aud", "jti"],
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as exc:
            raise _translate(exc) from None
        self._check_times(payload, now)
        if payload["iss"] != trusted.issuer:
            raise IssuerNotTrusted(f"key {kid} may not sign for issuer {payload['iss']!r}")
        claims = self._claims(payload, kid)
        check_sidecar_actor(claims)
        if claims.exp - claims.iat > self.options.max_lifetime:
            raise ClaimInvalid(f"token lifetime exceeds {self.options.max_lifetime:.0f} s")
        self._check_revoked(claims)
        return claims

    def _check_times(self, payload: Mapping[str, Any], now: float) -> None:
        leeway = self.options.leeway
        times = {name: payload.get(name) for name in ("exp", "iat", "nbf")}
        for name, value in times.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ClaimInvalid(f"{name} must be a number")
        if now - leeway >= times["exp"]:  # type: ignore[operator]
            raise TokenExpired("token has expired")
        if times["nbf"] is not None and times["nbf"] > now + leeway:  # type: ignore[operator]
            raise TokenNotYetValid("token is not yet valid")
        if times["iat"] > now + leeway:  # type: ignore[operator]
            raise TokenNotYetValid("token was issued in the future")

    def _read_header(self, token: str) -> tuple[str, str]:
        header = read_header(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.options.algorithms:
            # Covers "none", every HS*, and asymmetric algs this service did not enable.
            raise AlgorithmNotAllowed(f"algorithm {alg!r} is not accepted")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise UnknownKey("token header has no kid")
        return kid, alg

    def _claims(self, payload: dict[str, Any], kid: str) -> Claims:
        sub, tenant = payload.get("sub"), payload.get("tenant_id")
        if not isinstance(sub, str) or not sub:
            raise ClaimMissing("token has no sub")
        if not isinstance(tenant, str) or not tenant:
            raise ClaimMissing("token has no tenant_id")
        act = payload.get("act")
        if act is not None and not isinstance(act, dict):
            raise ClaimInvalid("act must be an object")
        if _act_depth(act) > self.options.max_act_depth:
            raise ActorChainTooDeep(f"actor chain is deeper than {self.options.max_act_depth}")
        roles = payload.get("roles", [])
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise ClaimInvalid("roles must be a list of strings")
        scope = payload.get("scope", "")
        if not isinstance(scope, str):
            raise ClaimInvalid("scope must be a space-separated string")
        aud = payload["aud"]
        may_act = payload.get("may_act")
        if may_act is not None and not isinstance(may_act, dict):
            raise ClaimInvalid("may_act must be an object")
        return Claims(
            iss=payload["iss"],
            sub=sub,
            tenant_id=tenant,
            aud=(aud,) if isinstance(aud, str) else tuple(aud),
            exp=float(payload["exp"]),
            iat=float(payload["iat"]),
            nbf=float(payload["nbf"]) if "nbf" in payload else None,
            jti=str(payload["jti"]),
            roles=tuple(roles),
            scope=_scope_tuple(scope),
            act=act,
            may_act=may_act,
            kid=kid,
            raw=payload,
        )

    def invalidate(self) -> None:
        """Drop every cached success, e.g. after a trust-set replacement."""
        with self._lock:
            self._cache.clear()


def check_sidecar_actor(claims: Claims) -> None:
    """A token issued as ``sidecar:X`` must name ``svc:X`` as its current actor.

    A sidecar only mints by exchange, naming itself in ``act.sub`` (RFC 8693 4.1), so a
    sidecar key cannot put words in another service's mouth: the actor chain that
    reaches policy always starts with the service whose key signed the token.
    """
    if not claims.iss.startswith(SIDECAR_ISSUER_PREFIX):
        return
    expected = ACTOR_PREFIX + claims.iss[len(SIDECAR_ISSUER_PREFIX):]
    current = claims.act.get("sub") if claims.act is not None else None
    if current != expected:
        raise ActorMismatch(f"a token issued by {claims.iss} must name {expected} as its actor, not {current!r}")


def decode_unverified(token: str) -> dict[str, Any]:
    """Header and payload without any check: for ``tenantguard token show`` only."""
    try:
        return {
            "header": jwt.get_unverified_header(token),
            "payload": jwt.decode(token, options={"verify_signature": False}),
        }
    except jwt.PyJWTError as exc:
        raise TokenMalformed(f"token cannot be decoded: {exc}") from None
    except UnicodeError:  # e.g. undecodable argv bytes, which Python turns into lone surrogates
        raise TokenMalformed("token is not a compact JWS (three base64url segments)") from None


__all__ = [
    "DEFAULT_LIFETIME",
    "MAX_LEEWAY",
    "MAX_LIFETIME",
    "MAX_TOKEN_BYTES",
    "SIDECAR_ISSUER_PREFIX",
    "ActorMismatch",
    "Algorithm",
    "Claims",
    "TokenVerifier",
    "VerifyOptions",
    "actor_chain",
    "check_sidecar_actor",
    "decode_unverified",
    "mint",
    "token_fingerprint",
]
