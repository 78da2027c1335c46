"""Edge mode: verify a tenant's external IdP token (OIDC ID or JWT access token).

The edge service's sidecar exchanges the user's IdP token for an internal context
token (see :mod:`tenantguard.exchange`). Each tenant names its IdP in the edge
configuration: issuer URL, JWKS URL, expected audience, allowed algorithms and how its
claims map onto ours. The tenant is *derived from the configured issuer* that verified
the token, never from anything the request says.

Keys come from the IdP's JWKS, fetched over HTTP(S) with finite timeouts and a size
bound, cached for ``jwks_ttl`` seconds (cachetools ``TTLCache``; only successful fetches
are cached). A token naming an unknown ``kid`` triggers one refetch (key rotation), at
most once per ``min_refetch_interval`` per JWKS URL, so a stream of made-up kids cannot
turn the sidecar into a load generator against the IdP. Concurrent fetches of the same
URL share one request.

Algorithms are RS256, ES256 and EdDSA only (never ``none``, never HMAC); the key's
type must match the header's algorithm, so an RSA JWK cannot be "used" as HMAC secret.

The token is decoded once, strictly (:func:`tenantguard.identity.tokens.parse_compact`: no
duplicate member names, no NaN/Infinity, bounded size and depth); the issuer that routes
it, the claims checked and the signature all come from that one decode, and pyjwt only
checks the signature bytes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from cachetools import TTLCache

from tenantguard.errors import (
    AlgorithmNotAllowed,
    ClaimInvalid,
    ClaimMissing,
    ConfigError,
    IssuerNotTrusted,
    KeyMaterialError,
    TokenError,
    TokenRevoked,
    Unavailable,
    UnknownKey,
)
from tenantguard.identity.keys import (
    SUPPORTED_ALGORITHMS,
    PublicKey,
    algorithm_for,
    algorithm_named,
    algorithms_named,
    public_key_from_jwk,
)
from tenantguard.identity.revocations import RevocationList
from tenantguard.identity.tokens import (
    CompactJWS,
    check_audience,
    check_header,
    check_times,
    is_jti,
    parse_compact,
    required_timestamp,
    timestamp,
    verify_signature,
)
from tenantguard.util.urls import is_loopback_host

log = logging.getLogger(__name__)

DEFAULT_JWKS_TTL = 300.0
DEFAULT_MIN_REFETCH_INTERVAL = 30.0
DEFAULT_HTTP_TIMEOUT = 3.0
MAX_JWKS_BYTES = 64 * 1024
MAX_JWKS_KEYS = 64
MAX_EXTERNAL_TOKEN_BYTES = 16 * 1024
MAX_LEEWAY = 60.0
MAX_ROLES = 64
MAX_SUB_LENGTH = 256


# --------------------------------------------------------------------------- configuration


def _check_url(value: Any, what: str) -> str:
    """https, or plain http to a loopback host only (a local IdP in development and tests)."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{what} must be a URL")
    parts = urlsplit(value)
    if parts.scheme == "https" and parts.hostname:
        return value
    if parts.scheme == "http" and parts.hostname and is_loopback_host(parts.hostname):
        return value
    raise ConfigError(f"{what} must be https (plain http only to a loopback host): {value!r}")




@dataclass(frozen=True, slots=True)
class EdgeTenant:
    """One tenant's IdP: the issuer that, when it verifies a token, makes it this tenant's."""

    tenant_id: str
    issuer: str
    jwks_uri: str
    audience: str
    algorithms: frozenset[str] = frozenset({"RS256"})
    sub_claim: str = "sub"
    roles_claim: str = "roles"  # dotted path, e.g. "realm_access.roles"
    role_map: Mapping[str, str] | None = None  # IdP value -> our role; unmapped values dropped

    def __post_init__(self) -> None:
        if not self.tenant_id or not isinstance(self.tenant_id, str):
            raise ConfigError("edge tenant needs a tenant_id")
        _check_url(self.issuer, f"issuer of tenant {self.tenant_id}")
        _check_url(self.jwks_uri, f"jwks_uri of tenant {self.tenant_id}")
        if not self.audience or not isinstance(self.audience, str):
            raise ConfigError(f"tenant {self.tenant_id} needs the audience its IdP issues tokens for")
        algorithms = algorithms_named(self.algorithms)
        if algorithms is None:
            raise ConfigError(f"tenant {self.tenant_id}: algorithms must be a subset of {SUPPORTED_ALGORITHMS} "
                              "(Ed25519, EdDSA's RFC 9864 name, is taken too)")
        object.__setattr__(self, "algorithms", algorithms)

    @classmethod
    def from_wire(cls, doc: Mapping[str, Any]) -> EdgeTenant:
        if not isinstance(doc, Mapping):
            raise ConfigError("each edge tenant must be an object")
        claims = doc.get("claims") or {}
        algorithms = doc.get("algorithms", ["RS256"])
        role_map = doc.get("role_map")
        if not isinstance(claims, Mapping) or not isinstance(algorithms, list):
            raise ConfigError("edge tenant 'claims' must be an object and 'algorithms' a list")
        if role_map is not None and not (
            isinstance(role_map, Mapping) and all(isinstance(v, str) for v in role_map.values())
        ):
            raise ConfigError("edge tenant 'role_map' must map IdP values to role names")
        return cls(
            tenant_id=str(doc.get("tenant_id") or ""),
            issuer=doc.get("issuer"),  # type: ignore[arg-type]  # checked in __post_init__
            jwks_uri=doc.get("jwks_uri"),  # type: ignore[arg-type]
            audience=doc.get("audience"),  # type: ignore[arg-type]
            algorithms=frozenset(str(a) for a in algorithms),
            sub_claim=str(claims.get("sub", "sub")),
            roles_claim=str(claims.get("roles", "roles")),
            role_map=dict(role_map) if role_map is not None else None,
        )


@dataclass(frozen=True, slots=True)
class EdgeConfig:
    """The edge file: tenants plus fetch and verification bounds (all in seconds)."""

    tenants: tuple[EdgeTenant, ...]
    jwks_ttl: float = DEFAULT_JWKS_TTL
    min_refetch_interval: float = DEFAULT_MIN_REFETCH_INTERVAL
    http_timeout: float = DEFAULT_HTTP_TIMEOUT
    leeway: float = 5.0

    def __post_init__(self) -> None:
        if not self.tenants:
            raise ConfigError("edge configuration lists no tenants")
        issuers = [t.issuer for t in self.tenants]
        if len(set(issuers)) != len(issuers):
            raise ConfigError("each issuer may belong to one tenant only (the tenant comes from the issuer)")
        if not 1 <= self.jwks_ttl <= 86_400:
            raise ConfigError("jwks_ttl must be within 1..86400 s")
        if not 0 <= self.min_refetch_interval <= 3600:
            raise ConfigError("min_refetch_interval must be within 0..3600 s")
        if not 0 < self.http_timeout <= 30:
            raise ConfigError("http_timeout must be within (0, 30] s")
        if not 0 <= self.leeway <= MAX_LEEWAY:
            raise ConfigError(f"leeway must be within 0..{MAX_LEEWAY:.0f} s")

    @classmethod
    def from_wire(cls, doc: Mapping[str, Any]) -> EdgeConfig:
        if not isinstance(doc, Mapping) or not isinstance(doc.get("tenants"), list):
            raise ConfigError('edge configuration must be {"tenants": [...], ...}')
        numbers = {k: doc[k] for k in ("jwks_ttl", "min_refetch_interval", "http_timeout", "leeway") if k in doc}
        for name, value in numbers.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"{name} must be a number of seconds")
        return cls(tenants=tuple(EdgeTenant.from_wire(t) for t in doc["tenants"]), **numbers)

    @classmethod
    def load(cls, path: str | Path) -> EdgeConfig:
        try:
            return cls.from_wire(json.loads(Path(path).read_text()))
        except OSError as exc:
            raise ConfigError(f"cannot read edge configuration {path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"edge configuration {path} is not JSON: {exc.msg}") from None


# --------------------------------------------------------------------------- JWKS


@dataclass(frozen=True, slots=True)
class JwkKey:
    kid: str
    alg: str
    public_key: PublicKey


def parse_jwks(doc: Any) -> dict[str, JwkKey]:
    """Usable signing keys by ``kid``; keys we cannot or must not use are skipped, not fatal
    (IdPs publish encryption keys and algorithms we do not accept beside the good ones)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("keys"), list):
        raise KeyMaterialError("JWKS must be an object with a 'keys' list")
    if len(doc["keys"]) > MAX_JWKS_KEYS:
        raise KeyMaterialError(f"JWKS holds more than {MAX_JWKS_KEYS} keys")
    keys: dict[str, JwkKey] = {}
    for jwk in doc["keys"]:
        parsed = _parse_jwk(jwk)
        if parsed is not None:
            keys[parsed.kid] = parsed
    return keys


def _parse_jwk(jwk: Any) -> JwkKey | None:
    if not isinstance(jwk, Mapping) or not isinstance(jwk.get("kid"), str) or not jwk["kid"]:
        return None
    if jwk.get("use", "sig") != "sig":
        return None
    try:
        key = public_key_from_jwk(jwk)
        alg = algorithm_for(key)
    except KeyMaterialError as exc:
        log.debug("skipping JWK %s: %s", jwk.get("kid"), exc)
        return None
    if algorithm_named(jwk.get("alg", alg)) != alg:
        return None
    return JwkKey(jwk["kid"], alg, key)


class JwksCache:
    """JWKS by URL: TTL-cached, size-bounded fetches, rate-limited refetch on unknown kid."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_JWKS_TTL,
        min_refetch_interval: float = DEFAULT_MIN_REFETCH_INTERVAL,
        timeout: float = DEFAULT_HTTP_TIMEOUT,
        max_bytes: int = MAX_JWKS_BYTES,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sets: TTLCache[str, dict[str, JwkKey]] = TTLCache(maxsize=256, ttl=ttl, timer=clock)
        self._last_fetch: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._min_refetch = min_refetch_interval
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._client = client
        self._own_client = client is None
        self._clock = clock
        self.fetches = 0

    async def key(self, uri: str, kid: str) -> JwkKey:
        """The key ``kid`` from ``uri``'s JWKS; :class:`UnknownKey` or :class:`Unavailable` if not."""
        keys = self._sets.get(uri)
        if keys is None:
            keys = await self._refresh(uri, cached=None)
        elif kid not in keys and self._may_refetch(uri):
            keys = await self._refresh(uri, cached=keys)
        found = keys.get(kid)
        if found is None:
            raise UnknownKey("token is signed by a key the IdP does not publish", kid=kid)
        return found

    def _may_refetch(self, uri: str) -> bool:
        last = self._last_fetch.get(uri)
        return last is None or self._clock() - last >= self._min_refetch

    async def _refresh(self, uri: str, cached: dict[str, JwkKey] | None) -> dict[str, JwkKey]:
        """One fetch per URL at a time; waiters reuse the result of the fetch they waited on."""
        started = self._last_fetch.get(uri)
        lock = self._locks.setdefault(uri, asyncio.Lock())
        async with lock:
            if self._last_fetch.get(uri) != started:  # someone fetched while we waited: share it
                fresh = self._sets.get(uri)
                if fresh is not None:
                    return fresh
                if cached is not None:
                    return cached
                raise Unavailable(f"JWKS from {uri} is unavailable (the fetch just tried failed)")
            self._last_fetch[uri] = self._clock()
            try:
                keys = parse_jwks(await self._fetch(uri))
            except (Unavailable, KeyMaterialError) as exc:
                if cached is not None:
                    log.warning("JWKS refetch from %s failed (%s); keeping the cached keys", uri, exc)
                    return cached
                if isinstance(exc, KeyMaterialError):
                    raise Unavailable(f"JWKS from {uri} is unusable: {exc.message}") from None
                raise
            self._sets[uri] = keys
            return keys

    async def _fetch(self, uri: str) -> Any:
        self.fetches += 1
        client = self._http()
        try:
            async with client.stream("GET", uri, headers={"Accept": "application/json"}) as response:
                if response.status_code != 200:
                    raise Unavailable(f"JWKS fetch from {uri} answered HTTP {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > self._max_bytes:
                        raise Unavailable(f"JWKS from {uri} exceeds {self._max_bytes} bytes")
        except httpx.HTTPError as exc:
            raise Unavailable(f"JWKS fetch from {uri} failed: {type(exc).__name__}") from None
        try:
            return json.loads(bytes(body))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise Unavailable(f"JWKS from {uri} is not JSON") from None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # No redirects: the configured URL is the one trusted, not wherever it points.
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self._timeout), follow_redirects=False,
                                             limits=httpx.Limits(max_connections=8))
        return self._client

    async def aclose(self) -> None:
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None


# --------------------------------------------------------------------------- verification


@dataclass(frozen=True, slots=True)
class ExternalIdentity:
    """A user verified by a tenant's IdP, mapped onto our claims.

    ``iat``, ``jti`` and ``kid`` travel into tokens exchanged from it (``tg_root_iat``,
    ``tg_chain``, ``tg_chain_kids``), so revoking the IdP token's jti, its key or its subject
    reaches them too.
    """

    sub: str
    tenant_id: str
    roles: tuple[str, ...]
    exp: float
    issuer: str
    claims: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    iat: float = 0.0
    jti: str | None = None  # only a jti we can carry and revoke (see tokens.is_jti)
    kid: str = ""  # the IdP key that signed it: carried into tg_chain_kids, so revoking it reaches them


def _unverified_issuer(jws: CompactJWS) -> str | None:
    issuer = jws.payload.get("iss")
    return issuer if isinstance(issuer, str) else None


def _claim_path(claims: Mapping[str, Any], path: str) -> Any:
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


class EdgeVerifier:
    """Verifies external IdP tokens for the configured tenants (async: it may fetch keys)."""

    def __init__(
        self,
        config: EdgeConfig,
        *,
        revocations: RevocationList | None = None,
        jwks: JwksCache | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._clock = clock
        self.revocations = revocations if revocations is not None else RevocationList()
        self._by_issuer = {t.issuer: t for t in config.tenants}
        self.jwks = jwks or JwksCache(ttl=config.jwks_ttl, min_refetch_interval=config.min_refetch_interval,
                                      timeout=config.http_timeout)

    @classmethod
    def load(cls, path: str | Path, *, revocations: RevocationList | None = None) -> EdgeVerifier:
        return cls(EdgeConfig.load(path), revocations=revocations)

    def handles(self, token: str) -> bool:
        """Whether the token *claims* a configured issuer (routing only; :meth:`verify` checks).

        A token that does not even decode strictly is not ours: the context-token verifier
        then refuses it with its own typed error.
        """
        try:
            jws = parse_compact(token, max_bytes=MAX_EXTERNAL_TOKEN_BYTES)
        except TokenError:
            return False
        return _unverified_issuer(jws) in self._by_issuer

    async def verify(self, token: str) -> ExternalIdentity:
        """The mapped identity, or a typed :class:`TokenError` (Unavailable if keys cannot be had)."""
        jws = parse_compact(token, max_bytes=MAX_EXTERNAL_TOKEN_BYTES)
        tenant = self._by_issuer.get(_unverified_issuer(jws) or "")
        if tenant is None:
            raise IssuerNotTrusted("token's issuer is not a configured edge tenant")
        named, kid = jws.header.get("alg"), jws.header.get("kid")
        alg = algorithm_named(named)
        if alg is None or alg not in tenant.algorithms:
            raise AlgorithmNotAllowed(f"algorithm {str(named)[:16]!r} is not accepted for tenant {tenant.tenant_id}")
        if not isinstance(kid, str) or not kid:
            raise UnknownKey("token header has no kid")
        check_header(jws.header)
        key = await self.jwks.key(tenant.jwks_uri, kid)
        if key.alg != alg:
            raise AlgorithmNotAllowed(f"token alg {alg} does not match its key's alg {key.alg}")
        verify_signature(jws, key.public_key, key.alg)
        identity = dataclasses.replace(self._identity(jws.payload, tenant, self._clock()), kid=kid)
        self._check_revoked(identity, kid)
        return identity

    def _identity(self, claims: Mapping[str, Any], tenant: EdgeTenant, now: float) -> ExternalIdentity:
        """The registered claims (RFC 7519 4.1) checked, then ours mapped from the tenant's."""
        for name in ("iss", "aud"):
            if claims.get(name) is None:
                raise ClaimMissing(f"token lacks the {name} claim")
        if claims["iss"] != tenant.issuer:
            raise IssuerNotTrusted("issuer does not match")
        check_audience(claims, tenant.audience)
        exp, iat = required_timestamp(claims, "exp"), required_timestamp(claims, "iat")
        check_times(exp, iat, timestamp(claims, "nbf"), now, self.config.leeway)
        sub = _claim_path(claims, tenant.sub_claim)
        if not isinstance(sub, str) or not sub:
            raise ClaimMissing(f"token has no {tenant.sub_claim!r} claim for the subject")
        if len(sub) > MAX_SUB_LENGTH:
            raise ClaimInvalid("subject is too long")
        jti = claims.get("jti")
        return ExternalIdentity(sub=sub, tenant_id=tenant.tenant_id, roles=_roles(claims, tenant),
                                exp=exp, issuer=tenant.issuer, claims=claims, iat=iat,
                                jti=jti if is_jti(jti) else None)

    def _check_revoked(self, identity: ExternalIdentity, kid: str) -> None:
        """Tenant kill switch, subject revocations and the IdP token's jti apply to IdP tokens too."""
        jti = identity.claims.get("jti")
        why = self.revocations.reason(jti=jti if isinstance(jti, str) else "", kid=kid, tenant=identity.tenant_id,
                                      sub=identity.sub, iat=identity.iat - self.config.leeway)  # as TokenVerifier
        if why is not None:
            raise TokenRevoked(why)

    async def aclose(self) -> None:
        await self.jwks.aclose()


def _roles(claims: Mapping[str, Any], tenant: EdgeTenant) -> tuple[str, ...]:
    raw = _claim_path(claims, tenant.roles_claim)
    values: Sequence[Any]
    if raw is None:
        values = ()
    elif isinstance(raw, str):
        values = raw.split()
    elif isinstance(raw, list):
        values = raw
    else:
        raise ClaimInvalid(f"{tenant.roles_claim!r} must be a list or a space-separated string")
    names = [v for v in values if isinstance(v, str) and v][:MAX_ROLES]
    if tenant.role_map is not None:
        names = [tenant.role_map[v] for v in names if v in tenant.role_map]
    return tuple(dict.fromkeys(names))


__all__ = [
    "EdgeConfig",
    "EdgeTenant",
    "EdgeVerifier",
    "ExternalIdentity",
    "JwkKey",
    "JwksCache",
    "parse_jwks",
]
