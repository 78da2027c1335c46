"""Changes to the token trust set, computed as pure functions of the current set.

The plane never edits its trust set in place: it computes the whole new set, publishes
it as one ``trust.update`` event (read-modify-write under optimistic concurrency, see
:mod:`.writer`), and adopts it when its follower reads the event back. A pure
``change(current) -> new`` can therefore be re-run on a newer set after a conflict.

Issuers ``plane`` and ``sidecar:*`` are reserved: the plane's own keys are configured
out of band, and a sidecar key enters only through its join secret.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from typing import Any, Final

from tenantguard.errors import InvalidInput, KeyMaterialError
from tenantguard.feed import topology as topo
from tenantguard.identity.keys import TrustedKey, TrustSet, key_id, public_key_from_jwk

from .errors import KeyRevoked, NotFound

# One key per live sidecar replica (each generates its own), plus the keys of replicas
# restarted within their registration's lifetime: sidecars register with a not_after
# (24 h by default) and refresh it while they run, so the keys of replicas that are gone
# expire and are pruned. The bound only stops a runaway (or a leaked join secret) from
# growing the trust set without limit.
MAX_KEYS_PER_SIDECAR: Final = 64
_SIDECAR_PREFIX: Final = topo.sidecar_issuer("")
_MAX_ISSUER_CHARS: Final = 256


def _not_after(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= time.time():
        raise InvalidInput("not_after must be a future time in integer epoch seconds", field="not_after")
    return float(value)


def _key(jwk: Mapping[str, Any], issuer: str, not_after: float | None) -> TrustedKey:
    if not isinstance(jwk, Mapping):
        raise InvalidInput("jwk must be a JSON object")
    public = public_key_from_jwk(jwk)  # refuses private members, oct keys, weak RSA, odd curves
    key = TrustedKey.of(public, issuer, not_after)
    if jwk.get("kid", key.kid) != key.kid:
        raise KeyMaterialError(f"JWK kid {jwk.get('kid')!r:.80} is not its RFC 7638 thumbprint {key.kid}")
    return key


def refuse_revoked(jwk: Mapping[str, Any], revoked: Collection[str]) -> str:
    """The JWK's kid (its RFC 7638 thumbprint), unless that kid is revoked (:class:`KeyRevoked`).

    A revoked kid is refused by every verifier anyway; trusting it again would only make
    the trust set lie, and a sidecar that still holds a leaked key must rotate instead.
    """
    if not isinstance(jwk, Mapping):
        raise InvalidInput("jwk must be a JSON object")
    kid = key_id(public_key_from_jwk(jwk))
    if kid in revoked:
        raise KeyRevoked(f"key {kid} is revoked and cannot be trusted again; generate a new key", kid=kid)
    return kid


def add_issuer_key(current: TrustSet, jwk: Mapping[str, Any], not_after: Any = None) -> list[TrustedKey]:
    """An edge (or other) issuer key; its ``iss`` member names the issuer."""
    issuer = jwk.get("iss") if isinstance(jwk, Mapping) else None
    if not isinstance(issuer, str) or not 0 < len(issuer) <= _MAX_ISSUER_CHARS:
        raise InvalidInput("the JWK needs an 'iss' member naming its issuer", field="jwk.iss")
    if issuer == topo.PLANE_ISSUER or issuer.startswith(_SIDECAR_PREFIX):
        raise InvalidInput(f"issuer {issuer!r} is reserved (plane keys are configured, sidecars register)")
    expiry = _not_after(not_after if not_after is not None else jwk.get("exp"))
    return _with(current, _key(jwk, issuer, expiry))


def add_sidecar_key(current: TrustSet, service: str, jwk: Mapping[str, Any],
                    not_after: Any = None) -> list[TrustedKey]:
    """A sidecar's own exchange key, trusted for ``sidecar:<service>`` only.

    Every replica registers its own key, and registering it again with a later
    ``not_after`` extends it. Beyond :data:`MAX_KEYS_PER_SIDECAR` the keys that expire
    first go (keys registered without an expiry count as expiring first: nothing says
    they are still in use); the key being registered always stays.
    """
    issuer = topo.sidecar_issuer(service)
    key = _key(jwk, issuer, _not_after(not_after))
    keys = _with(current, key)
    others = sorted((k for k in keys if k.issuer == issuer and k.kid != key.kid),
                    key=lambda k: -1.0 if k.not_after is None else k.not_after)
    drop = {k.kid for k in others[: max(0, len(others) + 1 - MAX_KEYS_PER_SIDECAR)]}
    return [k for k in keys if k.kid not in drop]


def remove_key(current: TrustSet, kid: str) -> list[TrustedKey]:
    if kid not in current:
        raise NotFound(f"no trusted key {kid!r:.80}", kid=kid[:128])
    return [k for k in current if k.kid != kid]


def _with(current: TrustSet, key: TrustedKey) -> list[TrustedKey]:
    """``current`` with ``key`` added or its expiry changed; keys already expired are pruned."""
    existing = current.get(key.kid)
    if existing is not None and existing.issuer != key.issuer:
        raise KeyMaterialError(f"key {key.kid} is already trusted for issuer {existing.issuer!r}")
    now = time.time()
    if existing is not None and existing.not_after == key.not_after and all(k.is_current(now) for k in current):
        return list(current)  # already trusted as asked: no change, no event
    return [k for k in current if k.kid != key.kid and k.is_current(now)] + [key]


def jwks_of(keys: list[TrustedKey]) -> dict[str, Any]:
    return {"keys": [k.to_jwk() for k in keys]}
