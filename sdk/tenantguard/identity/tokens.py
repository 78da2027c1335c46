"""Context tokens: minting at the edge and in sidecars, verifying at every hop.

A context token is a short-lived JWT carrying the tenant and user, signed with an
asymmetric key (EdDSA by default; ES256/RS256 when configured; never ``none``, never
HMAC). Verification is local: the header's ``kid`` selects a key from the
:class:`~tenantguard.identity.keys.TrustSet`, and that key's own algorithm is the only one
tried, which closes the classic HS256-with-the-public-key confusion by construction.
Verified tokens are cached by SHA-256 until their ``exp``; revocations and removed
keys are re-checked on every cache hit.

The header and payload are decoded here with :mod:`tenantguard.util.jsonlimits` (no duplicate
member names, no NaN/Infinity, bounded size and depth) and pyjwt only checks the
signature over the exact signed bytes: it never parses the JSON, so the claims checked
are the claims signed, with one meaning. Every time claim is a finite number of epoch
seconds within bounds.

An exchanged token names its ancestry: ``tg_chain`` lists the jtis of the tokens it was
exchanged from (root first), ``tg_chain_kids`` the kids of the keys that signed them (root
first) and ``tg_root_iat`` is the root token's ``iat``. Revoking any ancestor's jti or kid
refuses it, and subject and tenant cut-offs compare the root's ``iat``, so a revocation
reaches every token derived from the revoked one, on cache hits too. Tokens minted before
``tg_chain_kids`` existed are still accepted; a kid revocation reaches them only through
their own kid.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jwt
from cachetools import TLRUCache
from cryptography.exceptions import InvalidSignature

from tenantguard.errors import (
    ActorChainTooDeep,
    ActorMismatch,
    AlgorithmNotAllowed,
    AudienceInvalid,
    ClaimInvalid,
    ClaimMissing,
    ConfigError,
    IssuerNotTrusted,
    JsonInvalid,
    PayloadTooLarge,
    SignatureInvalid,
    TokenExpired,
    TokenMalformed,
    TokenMissing,
    TokenNotYetValid,
    TokenRevoked,
    TokenTooLarge,
    UnknownKey,
)
from tenantguard.feed.topology import sidecar_issuer
from tenantguard.identity.keys import (
    SUPPORTED_ALGORITHMS,
    Algorithm,
    PublicKey,
    SigningKey,
    TrustSet,
    algorithm_named,
    algorithms_named,
)
from tenantguard.identity.revocations import RevocationList
from tenantguard.relations.model import NAME_PATTERN
from tenantguard.util import jsonlimits

DEFAULT_LIFETIME = 300.0
MAX_LIFETIME = 3600.0
MAX_LEEWAY = 30.0
MAX_TOKEN_BYTES = 8 * 1024
DEFAULT_MAX_ACT_DEPTH = 4
DEFAULT_CACHE_SIZE = 10_000
SIDECAR_ISSUER_PREFIX = sidecar_issuer("")
ACTOR_PREFIX = "svc:"
TOKEN_SUBJECT_TYPE = "user"
"""The relation subject type of every context token's ``sub``: ``user:<sub>`` in tuples.
A token names a user (services appear only in ``act``), so a request carrying a token
cannot be asked as a group, a service or any other type."""
TOKEN_CLAIM_NAMES = frozenset({"iss", "sub", "tenant_id", "roles", "scope", "aud", "exp", "iat", "nbf",
                               "jti", "act", "may_act"})
"""Claims a token defines; a body's ``subject.properties`` never supplies them next to a token."""
MAX_TIMESTAMP = 253_402_300_799  # 9999-12-31T23:59:59Z: any time claim beyond it is nonsense
MAX_JTI_LENGTH = 256  # the plane's revocation API accepts jtis up to this length
# What the plane's revocation API can name (policy_plane.revocations): a jti or sub of 1..256
# printable ASCII characters without spaces, a tenant matching the relation model's names.
# A token carrying anything else could never be revoked by jti, subject or kill switch.
_REVOCABLE_TEXT = re.compile(rf"[\x21-\x7e]{{1,{MAX_JTI_LENGTH}}}")
_TENANT_NAME = re.compile(NAME_PATTERN)
# RFC 6749 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,128}")
# JOSE header members a context token never carries: key-locating (we never follow them:
# the key comes from kid and the trust set only), nested or unencoded content, encryption.
_FOREIGN_HEADERS = ("jku", "jwk", "x5u", "x5c", "cty", "b64", "zip", "enc")
_CONTEXT_TYPES = frozenset({"jwt", "application/jwt"})  # RFC 7519 5.1, compared case-insensitively
TOKEN_JSON_DEPTH = 32  # act may nest 16 deep (VerifyOptions bound); IdP claims a few levels
CHAIN_CLAIM = "tg_chain"  # jtis of the tokens this one was exchanged from, root first
ROOT_IAT_CLAIM = "tg_root_iat"  # iat of the root token (the login), for subject/tenant cut-offs
CHAIN_KIDS_CLAIM = "tg_chain_kids"  # kids of the keys that signed the tokens this one was exchanged from


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
    chain: tuple[str, ...] = ()  # jtis of the tokens this one was exchanged from, root first
    root_iat: float | None = None  # iat of the root token; None for a root token
    chain_kids: tuple[str, ...] = ()  # kids that signed the tokens this one was exchanged from, root first

    @property
    def origin_iat(self) -> float:
        """When the session this token descends from began: what revocation cut-offs compare."""
        return self.iat if self.root_iat is None else self.root_iat

    @property
    def subject_type(self) -> str:
        """The relation subject type of ``sub`` (see :data:`TOKEN_SUBJECT_TYPE`)."""
        return TOKEN_SUBJECT_TYPE

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


def _scope_tuple(scope: str | Iterable[str] | None) -> tuple[str, ...]:
    if scope is None:
        return ()
    if isinstance(scope, str):
        return tuple(s for s in scope.split(" ") if s)
    return tuple(scope)


def _check_mintable(issuer: str, sub: str, tenant_id: str, audience: str | Sequence[str], roles: list[str],
                    scopes: tuple[str, ...]) -> None:
    """Refuse to sign claims every verifier refuses (the rules of ``TokenVerifier._claims``).

    A token with ``tenant_id`` "ACME" or a ``sub`` with a space would be signed, handed
    out, and then fail at every sidecar with ``claim_invalid``: say so where it is made.
    """
    if not isinstance(issuer, str) or not issuer:
        raise ClaimInvalid("iss must be a non-empty string")
    if not is_subject_id(sub):
        raise ClaimInvalid(f"sub {sub!r:.80} must be 1..{MAX_JTI_LENGTH} printable ASCII characters "
                           "without spaces or '#'")
    if not is_tenant_name(tenant_id):
        raise ClaimInvalid(f"tenant_id {tenant_id!r:.80} must match {NAME_PATTERN} (lowercase, e.g. 'acme')")
    audiences = [audience] if isinstance(audience, str) else list(audience)
    if not audiences or not all(isinstance(a, str) and a for a in audiences):
        raise ClaimInvalid("aud must name at least one service (non-empty strings)")
    if not all(isinstance(r, str) for r in roles):
        raise ClaimInvalid("roles must be strings")
    bad = next((s for s in scopes if not is_scope_token(s)), None)
    if bad is not None:
        raise ClaimInvalid(f"scope {bad!r:.80} is not an RFC 6749 scope token "
                           "(printable ASCII without spaces, quotes or backslashes)")


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
    chain: Sequence[str] | None = None,
    root_iat: float | None = None,
    chain_kids: Sequence[str] | None = None,
    check_claims: bool = True,
) -> str:
    """Sign a context token; ``not_after`` caps ``exp`` (an exchanged token never outlives its source).

    Claims every verifier refuses (``tenant_id`` "ACME", a ``sub`` with a space or ``#``, a
    scope with a quote) raise :class:`ClaimInvalid` here; ``check_claims=False`` signs them
    anyway, for tests that show a verifier refusing a well-signed token.

    ``chain`` and ``root_iat`` are for exchanged tokens (both or neither): the jtis of the
    tokens it descends from and the root token's ``iat`` (never later than this ``iat``);
    ``chain_kids`` (with them) the kids of the keys that signed those tokens.
    """
    if not 0 < lifetime <= MAX_LIFETIME:
        raise ConfigError(f"token lifetime must be in (0, {MAX_LIFETIME:.0f}] seconds, got {lifetime}")
    if not sub or not tenant_id:
        raise ClaimMissing("a context token needs both sub and tenant_id")
    roles = list(roles)
    if check_claims:
        _check_mintable(issuer, sub, tenant_id, audience, roles, _scope_tuple(scope))
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
    if (chain is None) != (root_iat is None):
        raise ConfigError("an exchanged token needs both chain and root_iat")
    if chain is not None and root_iat is not None:
        payload[CHAIN_CLAIM] = list(chain)
        payload[ROOT_IAT_CLAIM] = min(int(root_iat), iat)
        if chain_kids is not None:
            payload[CHAIN_KIDS_CLAIM] = list(chain_kids)
    elif chain_kids is not None:
        raise ConfigError("chain_kids belong to an exchanged token (with chain and root_iat)")
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
        algorithms = algorithms_named(self.algorithms)
        if algorithms is None:
            raise ConfigError(f"algorithms must be a non-empty subset of {SUPPORTED_ALGORITHMS} (or Ed25519, "
                              f"EdDSA's RFC 9864 name), got {sorted(map(str, self.algorithms))}")
        object.__setattr__(self, "algorithms", algorithms)
        if not 0 <= self.leeway <= MAX_LEEWAY:
            raise ConfigError(f"leeway must be within 0..{MAX_LEEWAY:.0f} s")
        if not 0 < self.max_lifetime <= MAX_LIFETIME:
            raise ConfigError(f"max_lifetime must be within (0, {MAX_LIFETIME:.0f}] s")
        if not 0 <= self.max_act_depth <= 16:
            raise ConfigError("max_act_depth must be within 0..16")
        if not 0 < self.max_token_bytes <= MAX_TOKEN_BYTES:
            raise ConfigError(f"max_token_bytes must be within 1..{MAX_TOKEN_BYTES}")


_COMPACT_JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
_JWS = jwt.PyJWS()
_SIGNATURE_CHECKS: dict[str, jwt.algorithms.Algorithm] = {
    alg: _JWS.get_algorithm_by_name(alg) for alg in SUPPORTED_ALGORITHMS
}


@dataclass(frozen=True, slots=True)
class CompactJWS:
    """A compact JWS split and strictly decoded, signature not yet checked."""

    header: dict[str, Any]
    payload: dict[str, Any]
    signing_input: bytes
    signature: bytes


def _b64(segment: str, what: str) -> bytes:
    """Canonical unpadded base64url only (RFC 7515 2): set trailing bits would let one signed
    token be written several ways, each with its own cache key and log fingerprint."""
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (ValueError, binascii.Error):
        raise TokenMalformed(f"token {what} is not base64url") from None
    if base64.urlsafe_b64encode(raw).rstrip(b"=") != segment.encode("ascii"):
        raise TokenMalformed(f"token {what} is not canonical base64url")
    return raw


def _json_segment(segment: str, what: str, max_bytes: int) -> dict[str, Any]:
    try:
        value = jsonlimits.loads(_b64(segment, what), max_bytes=max_bytes, max_depth=TOKEN_JSON_DEPTH)
    except (JsonInvalid, PayloadTooLarge) as exc:
        problem = exc.detail.get("problem", exc.code)
        raise TokenMalformed(f"token {what} is not strict JSON ({exc.message})", problem=problem) from None
    if not isinstance(value, dict):
        raise TokenMalformed(f"token {what} is not a JSON object")
    return value


def _split(token: str, max_bytes: int) -> list[str]:
    if len(token) > max_bytes:
        raise TokenTooLarge(f"token exceeds {max_bytes} bytes")
    if not _COMPACT_JWS.fullmatch(token):
        raise TokenMalformed("token is not a compact JWS (three base64url segments)")
    return token.split(".")


def read_header(token: str, *, max_bytes: int = MAX_TOKEN_BYTES) -> dict[str, Any]:
    """The unverified JOSE header, strictly decoded (routing and early refusals only)."""
    return _json_segment(_split(token, max_bytes)[0], "header", max_bytes)


def parse_compact(token: str, *, max_bytes: int = MAX_TOKEN_BYTES) -> CompactJWS:
    """Split and strictly decode a compact JWS (RFC 7515 7.1); nothing is verified yet.

    The one parse of a token: the claims a verifier checks are these objects, and the
    signature is checked over ``signing_input``, the exact bytes they were decoded from.
    """
    header_b64, payload_b64, signature_b64 = _split(token, max_bytes)
    return CompactJWS(
        header=_json_segment(header_b64, "header", max_bytes),
        payload=_json_segment(payload_b64, "payload", max_bytes),
        signing_input=f"{header_b64}.{payload_b64}".encode("ascii"),
        signature=_b64(signature_b64, "signature"),
    )


def check_header(header: Mapping[str, Any]) -> None:
    """RFC 7515 4.1.11: ``crit`` names extensions the verifier must understand; we know none."""
    if "crit" in header:
        raise TokenMalformed("token header names critical extensions (crit), which are not supported")


def check_context_header(header: Mapping[str, Any]) -> None:
    """What a context token's header may say beyond ``alg`` and ``kid`` (RFC 8725 3.11).

    ``typ``, when present, must be ``JWT``: another type (``at+jwt``, ``dpop+jwt``,
    ``secevent+jwt`` ...) is another kind of token, not to be taken for a context token even
    when a trusted key signed it. Members that locate a key, nest a token or change how the
    payload is encoded are refused: :func:`mint` never writes them, and honouring none of
    them silently would leave a token meaning one thing here and another to a laxer reader.
    """
    check_header(header)
    typ = header.get("typ")
    if "typ" in header and (not isinstance(typ, str) or typ.lower() not in _CONTEXT_TYPES):
        raise TokenMalformed(f"token typ {str(typ)[:32]!r} is not a context token (JWT)")
    present = [name for name in _FOREIGN_HEADERS if name in header]
    if present:
        raise TokenMalformed(f"token header carries unsupported members: {', '.join(present)}")


def verify_signature(jws: CompactJWS, public_key: PublicKey, alg: str) -> None:
    """Check the signature with pyjwt's algorithm object (it sees bytes only, never the JSON)."""
    try:
        ok = _SIGNATURE_CHECKS[alg].verify(jws.signing_input, public_key, jws.signature)
    except (ValueError, TypeError, InvalidSignature):
        ok = False
    if not ok:
        raise SignatureInvalid("signature does not verify")


def required_timestamp(payload: Mapping[str, Any], name: str) -> float:
    """:func:`timestamp`, and the claim must be there."""
    if name not in payload:
        raise ClaimMissing(f"token lacks the {name} claim")
    return _epoch_seconds(payload[name], name)


def timestamp(payload: Mapping[str, Any], name: str) -> float | None:
    """A time claim as float, None when absent; present means a valid time (null is not)."""
    return _epoch_seconds(payload[name], name) if name in payload else None


def _epoch_seconds(value: Any, name: str) -> float:
    """An int or finite float within 0..MAX_TIMESTAMP; bools refused.

    ``NaN`` compares false with everything (``exp: NaN`` would never expire, ``iat: NaN``
    would dodge every cut-off), so no non-finite or absurd value gets past here.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_TIMESTAMP:
        raise ClaimInvalid(f"{name} must be a number of epoch seconds within 0..{MAX_TIMESTAMP}")
    return float(value)


def check_audience(payload: Mapping[str, Any], audience: str) -> tuple[str, ...]:
    """``aud`` (a string or a list of strings, RFC 7519 4.1.3) must name ``audience``."""
    aud = payload.get("aud")
    if not aud:
        raise ClaimMissing("token lacks the aud claim")
    values = (aud,) if isinstance(aud, str) else tuple(aud) if isinstance(aud, list) else None
    if values is None or not all(isinstance(a, str) for a in values):
        raise AudienceInvalid("aud must be a string or a list of strings")
    if audience not in values:
        raise AudienceInvalid("token is not for this service")
    return values


def check_times(exp: float, iat: float | None, nbf: float | None, now: float, leeway: float) -> None:
    """RFC 7519 4.1.4-4.1.6 against ``now``, with ``leeway`` seconds of clock skew allowed."""
    if now - leeway >= exp:
        raise TokenExpired("token has expired")
    if nbf is not None and nbf > now + leeway:
        raise TokenNotYetValid("token is not yet valid")
    if iat is not None and iat > now + leeway:
        raise TokenNotYetValid("token was issued in the future")


def is_jti(value: Any) -> bool:
    """A jti we carry and can revoke: 1..MAX_JTI_LENGTH printable ASCII characters, no spaces
    (exactly what the plane's revocation API accepts)."""
    return isinstance(value, str) and _REVOCABLE_TEXT.fullmatch(value) is not None


def is_subject_id(value: Any) -> bool:
    """A ``sub`` a subject revocation can name (the syntax of :func:`is_jti`) that names a
    principal: no ``#``. The decision core asks the relations about ``user:<sub>``, and
    ``user:boss#manager`` is a userset ("boss's managers"): a user who could choose the
    sub ``boss#manager`` (an IdP's username claim) would hold whatever that userset holds."""
    return is_jti(value) and "#" not in value


def is_tenant_name(value: Any) -> bool:
    """A ``tenant_id`` relations, revocations and the kill switch can name (lowercase name).

    Anything else (upper case, look-alike letters, spaces, control characters) would be a
    tenant no relationship can be written for and no kill switch can stop.
    """
    return isinstance(value, str) and _TENANT_NAME.fullmatch(value) is not None


def is_scope_token(value: Any) -> bool:
    """One RFC 6749 3.3 scope token: printable ASCII without spaces, quotes or backslashes."""
    return isinstance(value, str) and _SCOPE_TOKEN.fullmatch(value) is not None


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
        if trusted.issuer != claims.iss:  # the trust set was replaced while this entry was cached
            with self._lock:
                self._cache.clear()
            raise IssuerNotTrusted(f"key {claims.kid} no longer signs for issuer {claims.iss[:64]!r}")
        self._check_revoked(claims)

    def _check_revoked(self, claims: Claims) -> None:
        """The token's jti and key, its ancestors' jtis and keys; subject/tenant cut-offs against the root's iat.

        The cut-offs are compared with the root's ``iat`` less the leeway: this verifier takes
        an ``iat`` up to ``leeway`` seconds in the future (an issuer's clock that far ahead), so
        a token stamped that much after a cut-off may have been issued before it.
        """
        why = self.revocations.reason(
            jti=claims.jti, kid=claims.kid, tenant=claims.tenant_id, sub=claims.sub,
            iat=claims.origin_iat - self.options.leeway, chain=claims.chain, chain_kids=claims.chain_kids,
        )
        if why is not None:
            raise TokenRevoked(why)

    def _verify_uncached(self, token: str) -> Claims:
        jws = parse_compact(token, max_bytes=self.options.max_token_bytes)
        kid, alg = self._read_header(jws.header)
        trusted = self.trust.get(kid)
        if trusted is None:
            raise UnknownKey("token is signed by an unknown key", kid=kid)
        if alg != trusted.alg:
            raise AlgorithmNotAllowed(f"token alg {alg} does not match its key's alg {trusted.alg}")
        now = self._clock()
        if not trusted.is_current(now):
            raise UnknownKey("signing key has passed its not-after time", kid=kid)
        verify_signature(jws, trusted.public_key, trusted.alg)
        payload = jws.payload
        for name in ("iss", "sub", "jti"):
            if payload.get(name) is None:
                raise ClaimMissing(f"token lacks the {name} claim")
        aud = check_audience(payload, self.options.audience)
        exp, iat = required_timestamp(payload, "exp"), required_timestamp(payload, "iat")
        nbf = timestamp(payload, "nbf")
        # Checked against this verifier's clock, the same clock that expires cache entries
        # and keys, so the three can never disagree.
        check_times(exp, iat, nbf, now, self.options.leeway)
        if payload["iss"] != trusted.issuer:
            raise IssuerNotTrusted(f"key {kid} may not sign for issuer {str(payload['iss'])[:64]!r}")
        claims = self._claims(payload, kid, aud=aud, exp=exp, iat=iat, nbf=nbf)
        check_sidecar_actor(claims)
        if claims.exp - claims.iat > self.options.max_lifetime:
            raise ClaimInvalid(f"token lifetime exceeds {self.options.max_lifetime:.0f} s")
        self._check_revoked(claims)
        return claims

    def _read_header(self, header: Mapping[str, Any]) -> tuple[str, str]:
        named = header.get("alg")
        alg = algorithm_named(named)
        if alg is None or alg not in self.options.algorithms:
            # Covers "none", every HS*, and asymmetric algs this service did not enable.
            raise AlgorithmNotAllowed(f"algorithm {str(named)[:16]!r} is not accepted")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise UnknownKey("token header has no kid")
        check_context_header(header)
        return kid, alg

    def _claims(self, payload: dict[str, Any], kid: str, *, aud: tuple[str, ...], exp: float, iat: float,
                nbf: float | None) -> Claims:
        iss, sub, tenant, jti = payload["iss"], payload.get("sub"), payload.get("tenant_id"), payload["jti"]
        if not isinstance(iss, str) or not iss:
            raise ClaimInvalid("iss must be a non-empty string")
        if not isinstance(sub, str) or not sub:
            raise ClaimMissing("token has no sub")
        if not isinstance(tenant, str) or not tenant:
            raise ClaimMissing("token has no tenant_id")
        if not is_subject_id(sub):
            raise ClaimInvalid(f"sub must be 1..{MAX_JTI_LENGTH} printable ASCII characters without spaces or '#'")
        if not is_tenant_name(tenant):
            raise ClaimInvalid(f"tenant_id must match {NAME_PATTERN}")
        if not is_jti(jti):
            raise ClaimInvalid(f"jti must be 1..{MAX_JTI_LENGTH} printable ASCII characters without spaces")
        act = payload.get("act")
        depth = _checked_act_depth(act, self.options.max_act_depth)
        if depth > self.options.max_act_depth:
            raise ActorChainTooDeep(f"actor chain is deeper than {self.options.max_act_depth}")
        roles = payload.get("roles", [])
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise ClaimInvalid("roles must be a list of strings")
        scope = payload.get("scope", "")
        if not isinstance(scope, str) or not all(is_scope_token(s) for s in _scope_tuple(scope)):
            raise ClaimInvalid("scope must be a space-separated string of RFC 6749 scope tokens")
        may_act = payload.get("may_act")
        if may_act is not None and not isinstance(may_act, dict):
            raise ClaimInvalid("may_act must be an object")
        chain, root_iat, chain_kids = _ancestry(payload, iat=iat, act_depth=depth)
        return Claims(
            iss=iss,
            sub=sub,
            tenant_id=tenant,
            aud=aud,
            exp=exp,
            iat=iat,
            nbf=nbf,
            jti=jti,
            roles=tuple(roles),
            scope=_scope_tuple(scope),
            act=act,
            may_act=may_act,
            kid=kid,
            raw=payload,
            chain=chain,
            root_iat=root_iat,
            chain_kids=chain_kids,
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


def _checked_act_depth(act: Any, bound: int) -> int:
    """The actor chain's depth; every level an object naming its actor (RFC 8693 4.1).

    A level without a string ``sub``, or an ``act`` that is not an object, would reach
    policy as an actor named ``""`` or ``"1"``, or as a chain cut short.
    """
    depth = 0
    while act is not None:
        if not isinstance(act, dict):
            raise ClaimInvalid("act must be an object")
        depth += 1
        if depth > bound:
            raise ActorChainTooDeep(f"actor chain is deeper than {bound}")
        if not is_subject_id(act.get("sub")):
            raise ClaimInvalid("each act level must name its actor in sub (printable ASCII)")
        act = act.get("act")
    return depth


def _ancestry(payload: Mapping[str, Any], *, iat: float,
              act_depth: int) -> tuple[tuple[str, ...], float | None, tuple[str, ...]]:
    """``tg_chain``, ``tg_root_iat`` and ``tg_chain_kids``, checked; ``((), None, ())`` for a root token.

    Each exchange adds one actor and one ancestor, so neither list is ever longer than the
    actor chain (and so bounded by ``max_act_depth``); the root is never younger than this token.
    ``tg_chain_kids`` may be absent (a token minted before it existed: it keeps working, but
    a kid revocation reaches it through its own kid only); present, it needs the other two.
    """
    has_chain, has_root = CHAIN_CLAIM in payload, ROOT_IAT_CLAIM in payload
    has_kids = CHAIN_KIDS_CLAIM in payload
    if not has_chain and not has_root:
        if has_kids:
            raise ClaimMissing(f"{CHAIN_KIDS_CLAIM} needs {CHAIN_CLAIM} and {ROOT_IAT_CLAIM}")
        return (), None, ()
    if not has_chain or not has_root:
        raise ClaimMissing(f"{CHAIN_CLAIM} and {ROOT_IAT_CLAIM} go together")
    chain = payload[CHAIN_CLAIM]
    if not isinstance(chain, list) or not all(is_jti(j) for j in chain):
        raise ClaimInvalid(f"{CHAIN_CLAIM} must be a list of jtis (strings of 1..{MAX_JTI_LENGTH} characters)")
    if len(chain) > act_depth:
        raise ClaimInvalid(f"{CHAIN_CLAIM} is longer than the actor chain")
    kids = payload.get(CHAIN_KIDS_CLAIM, [])
    if not isinstance(kids, list) or not all(is_jti(k) for k in kids):
        raise ClaimInvalid(f"{CHAIN_KIDS_CLAIM} must be a list of kids (strings of 1..{MAX_JTI_LENGTH} characters)")
    if len(kids) > act_depth:
        raise ClaimInvalid(f"{CHAIN_KIDS_CLAIM} is longer than the actor chain")
    root_iat = required_timestamp(payload, ROOT_IAT_CLAIM)
    if root_iat > iat:
        raise ClaimInvalid(f"{ROOT_IAT_CLAIM} is later than iat")
    return tuple(chain), root_iat, tuple(kids)


def decode_unverified(token: str, *, max_bytes: int = 2 * MAX_TOKEN_BYTES) -> dict[str, Any]:
    """Header and payload, strictly decoded but not verified: ``tenantguard token show``, and the
    SDK reading claims of a token its sidecar has just verified."""
    jws = parse_compact(token, max_bytes=max_bytes)
    return {"header": jws.header, "payload": jws.payload}


__all__ = [
    "DEFAULT_LIFETIME",
    "MAX_LEEWAY",
    "MAX_LIFETIME",
    "MAX_TOKEN_BYTES",
    "SIDECAR_ISSUER_PREFIX",
    "ActorMismatch",
    "Algorithm",
    "Claims",
    "CompactJWS",
    "TokenVerifier",
    "VerifyOptions",
    "actor_chain",
    "check_sidecar_actor",
    "decode_unverified",
    "mint",
    "parse_compact",
    "token_fingerprint",
]
