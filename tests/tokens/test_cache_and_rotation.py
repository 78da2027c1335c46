"""The verified-token cache, revocation of cached tokens, and key rotation."""

from __future__ import annotations

import time

import pytest
from tenantguard import errors
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import TokenVerifier, VerifyOptions, mint


class Clock:
    """A clock the test moves forward; the verifier and the cache both read it."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def token(key: SigningKey, **kw: object) -> str:
    args: dict[str, object] = dict(issuer="edge", sub="alice", tenant_id="acme", audience="orders")
    args.update(kw)
    return mint(key, **args)  # type: ignore[arg-type]


def test_second_verify_is_a_cache_hit(edge_key: SigningKey, trust: TrustSet) -> None:
    v = TokenVerifier(trust, VerifyOptions(audience="orders"))
    t = token(edge_key)
    first, second = v.verify(t), v.verify(t)
    assert first is second
    assert (v.cache_misses, v.cache_hits) == (1, 1)


def test_cache_entry_dies_at_the_tokens_exp(edge_key: SigningKey, trust: TrustSet) -> None:
    clock = Clock()
    v = TokenVerifier(trust, VerifyOptions(audience="orders"), clock=clock)
    t = token(edge_key, lifetime=60, now=clock.now)
    v.verify(t)
    clock.now += 61
    with pytest.raises(errors.TokenExpired):
        v.verify(t)  # not served from cache: re-verified and refused


def test_cache_is_bounded(edge_key: SigningKey, trust: TrustSet) -> None:
    v = TokenVerifier(trust, VerifyOptions(audience="orders"), cache_size=3)
    tokens = [token(edge_key, jti=f"j{i}") for i in range(10)]
    for t in tokens:
        v.verify(t)
    assert len(v._cache) == 3


def test_failures_are_not_cached(edge_key: SigningKey, trust: TrustSet) -> None:
    v = TokenVerifier(trust, VerifyOptions(audience="orders"))
    bad = token(edge_key, audience="billing")
    for _ in range(2):
        with pytest.raises(errors.AudienceInvalid):
            v.verify(bad)
    assert v.cache_hits == 0 and len(v._cache) == 0


def test_revoking_a_jti_invalidates_a_cached_token(edge_key: SigningKey, trust: TrustSet) -> None:
    v = TokenVerifier(trust, VerifyOptions(audience="orders"))
    t = token(edge_key)
    claims = v.verify(t)
    v.revocations.revoke_jti(claims.jti, until=claims.exp)
    with pytest.raises(errors.TokenRevoked):
        v.verify(t)


def test_revoking_a_kid_invalidates_a_cached_token(edge_key: SigningKey, trust: TrustSet) -> None:
    v = TokenVerifier(trust, VerifyOptions(audience="orders"))
    t = token(edge_key)
    v.verify(t)
    v.revocations.revoke_kid(edge_key.kid)
    with pytest.raises(errors.TokenRevoked):
        v.verify(t)


def test_removing_a_kid_from_the_trust_set_invalidates_cached_tokens(edge_key: SigningKey, trust: TrustSet) -> None:
    v = TokenVerifier(trust, VerifyOptions(audience="orders"))
    t = token(edge_key)
    v.verify(t)
    trust.remove(edge_key.kid)
    with pytest.raises(errors.UnknownKey):
        v.verify(t)


def test_subject_and_tenant_revocation_cut_off_by_issue_time(edge_key: SigningKey, trust: TrustSet) -> None:
    clock = Clock()
    v = TokenVerifier(trust, VerifyOptions(audience="orders"), clock=clock)
    old = token(edge_key, now=clock.now - 10)
    other_user = token(edge_key, sub="bob", now=clock.now - 10)
    v.verify(old)
    v.revocations.revoke_subject("acme", "alice", issued_before=clock.now - 5)
    with pytest.raises(errors.TokenRevoked):
        v.verify(old)
    assert v.verify(other_user).sub == "bob"
    fresh = token(edge_key, now=clock.now)  # a re-login after the revocation lives
    assert v.verify(fresh).sub == "alice"
    v.revocations.revoke_tenant("acme", issued_before=clock.now)  # the kill switch
    for t in (fresh, other_user):
        with pytest.raises(errors.TokenRevoked):
            v.verify(t)
    v.revocations.lift_tenant("acme")
    assert v.verify(other_user).sub == "bob"


def test_rotation_overlap_then_removal(trust: TrustSet, edge_key: SigningKey) -> None:
    """Old and new kid both verify during the overlap; the removed kid then fails."""
    new_key = SigningKey.generate()
    trust.add_public_key(new_key.public_key, "edge")
    v = TokenVerifier(trust, VerifyOptions(audience="orders"))
    old_token, new_token = token(edge_key), token(new_key)
    assert v.verify(old_token).kid == edge_key.kid
    assert v.verify(new_token).kid == new_key.kid
    assert {k.kid for k in trust.for_issuer("edge")} == {edge_key.kid, new_key.kid}
    trust.remove(edge_key.kid)
    with pytest.raises(errors.UnknownKey):
        v.verify(old_token)
    assert v.verify(new_token).sub == "alice"


def test_key_past_its_not_after_stops_verifying(edge_key: SigningKey) -> None:
    clock = Clock()
    trust = TrustSet()
    trust.add_public_key(edge_key.public_key, "edge", not_after=clock.now + 30)
    v = TokenVerifier(trust, VerifyOptions(audience="orders"), clock=clock)
    t = token(edge_key, now=clock.now)
    v.verify(t)
    clock.now += 31
    with pytest.raises(errors.UnknownKey):
        v.verify(t)  # even the cached success is dropped
