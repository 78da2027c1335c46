"""Sidecar exchange keys at the plane: one per replica, kept alive by refreshing, pruned when gone.

A service may run many replicas, each with its own key; a fixed small bound would evict
live replicas' keys (their exchanged tokens then fail with unknown_kid everywhere).
"""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet

from authz_sidecar.registration import PlaneRegistrar, RegistrationOptions
from policy_plane.trust import MAX_KEYS_PER_SIDECAR, add_sidecar_key
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import JOIN_SECRET


def register(current: TrustSet, key: SigningKey, not_after: float | None) -> TrustSet:
    return TrustSet(add_sidecar_key(current, "billing", key.public_jwk(),
                                    None if not_after is None else int(not_after)))


def test_more_replicas_than_the_old_bound_all_stay_trusted() -> None:
    now = time.time()
    replicas = [SigningKey.generate() for _ in range(12)]
    trust = TrustSet()
    for i, key in enumerate(replicas):
        trust = register(trust, key, now + 3600 + i)
    assert all(key.kid in trust for key in replicas)


def test_beyond_the_bound_the_keys_expiring_first_go_never_the_new_one() -> None:
    now = time.time()
    legacy = SigningKey.generate()  # registered without an expiry: nothing says it is in use
    trust = register(TrustSet(), legacy, None)
    keys = [SigningKey.generate() for _ in range(MAX_KEYS_PER_SIDECAR + 2)]
    for i, key in enumerate(keys):
        trust = register(trust, key, now + 10_000 - i)  # later registrations expire sooner
    assert len([k for k in trust if k.issuer == "sidecar:billing"]) == MAX_KEYS_PER_SIDECAR
    assert legacy.kid not in trust
    assert keys[-1].kid in trust  # the one just registered stays even though it expires first
    assert keys[-2].kid not in trust and keys[0].kid in trust


def test_expired_keys_are_pruned_at_the_next_change_and_refreshing_extends() -> None:
    now = time.time()
    gone, alive = SigningKey.generate(), SigningKey.generate()
    trust = TrustSet([TrustedKey.of(gone.public_key, "sidecar:billing", now - 1)])
    trust = register(trust, alive, now + 100)
    assert gone.kid not in trust and alive.kid in trust
    same = add_sidecar_key(trust, "billing", alive.public_jwk(), int(now + 100))
    assert [k.not_after for k in same] == [trust.get(alive.kid).not_after]  # type: ignore[union-attr]
    extended = register(trust, alive, now + 200)
    assert extended.get(alive.kid).not_after == int(now + 200)  # type: ignore[union-attr]


def _register_once(registrar: PlaneRegistrar) -> None:
    """Run ``registrar`` until its first registration is settled (bounded)."""

    async def run() -> None:
        await registrar.start()
        try:
            await asyncio.wait_for(registrar.done.wait(), 20)
        finally:
            await registrar.stop()

    asyncio.run(run())


@pytest.mark.nats
@pytest.mark.timeout(60)
def test_a_running_sidecar_refreshes_its_registration(plane: PlaneProcess) -> None:
    key = SigningKey.generate()
    options = RegistrationOptions(backoff_initial=0.05, key_ttl=3600, refresh=0.3)
    registrar = PlaneRegistrar(plane.base_url, JOIN_SECRET, options=options)
    registrar.register("billing", key.public_jwk())

    async def run() -> list[float]:
        seen: list[float] = []
        await registrar.start()
        try:
            await asyncio.wait_for(registrar.done.wait(), 20)
            deadline = time.monotonic() + 20
            while len(set(seen)) < 3 and time.monotonic() < deadline:
                if registrar.expires_at is not None:
                    seen.append(registrar.expires_at)
                await asyncio.sleep(0.1)
        finally:
            await registrar.stop()
        return seen

    seen = asyncio.run(run())
    assert len(set(seen)) >= 3 and seen == sorted(seen)  # registered again, each time further out
    assert registrar.status()["state"] == "registered"
    trusted = TrustSet.from_jwks(plane.client(None).get("/.well-known/jwks.json").json()).get(key.kid)
    assert trusted is not None and trusted.issuer == "sidecar:billing"
    assert trusted.not_after is not None and abs(trusted.not_after - (time.time() + 3600)) < 30


@pytest.mark.nats
@pytest.mark.timeout(60)
def test_a_revoked_key_is_refused_and_the_registrar_moves_to_a_new_one(plane: PlaneProcess) -> None:
    """A sidecar that does not follow NATS learns of the revocation from the plane's refusal."""
    revoked, replacement = SigningKey.generate(), SigningKey.generate()
    admin = plane.client()
    r = admin.post("/v1/revocations", json={"kind": "kid", "kid": revoked.kid})
    assert r.status_code == 200, r.text
    refused = plane.client(JOIN_SECRET).post("/v1/trust/sidecars/billing/keys", json={"jwk": revoked.public_jwk()})
    deadline = time.monotonic() + 20
    while refused.status_code == 200 and time.monotonic() < deadline:  # the replica applies its own event
        time.sleep(0.1)
        refused = plane.client(JOIN_SECRET).post("/v1/trust/sidecars/billing/keys",
                                                 json={"jwk": revoked.public_jwk()})
    assert refused.status_code == 409 and refused.json()["error"] == "key_revoked", refused.text
    trusted = plane.client(None).get("/.well-known/jwks.json").json()
    assert revoked.kid not in {k["kid"] for k in trusted["keys"]}  # revoking removed it from the set

    registrar = PlaneRegistrar(plane.base_url, JOIN_SECRET, options=RegistrationOptions(backoff_initial=0.05))
    registrar.register("billing", revoked.public_jwk())
    rotations: list[str] = []

    def rotate() -> None:
        rotations.append(registrar.kid or "")
        registrar.register("billing", replacement.public_jwk())

    registrar.on_revoked = rotate

    _register_once(registrar)
    assert rotations == [revoked.kid]
    assert registrar.status()["state"] == "registered" and registrar.kid == replacement.kid
    published = {k["kid"] for k in plane.client(None).get("/.well-known/jwks.json").json()["keys"]}
    assert replacement.kid in published and revoked.kid not in published


@pytest.mark.nats
@pytest.mark.timeout(60)
def test_a_sidecar_given_several_plane_urls_registers_through_the_one_that_answers(plane: PlaneProcess) -> None:
    """``--plane-url`` with a replica that is down first: the next attempt goes to the next replica."""
    with socket.socket() as closed:  # a port nothing listens on: connection refused, at once
        closed.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{closed.getsockname()[1]}"
    key = SigningKey.generate()
    options = RegistrationOptions(backoff_initial=0.05)
    registrar = PlaneRegistrar(f"{down},{plane.base_url}", JOIN_SECRET, options=options)
    registrar.register("billing", key.public_jwk())

    _register_once(registrar)
    assert registrar.status()["state"] == "registered" and registrar.attempts == 2  # one refused, then accepted
    published = {k["kid"] for k in plane.client(None).get("/.well-known/jwks.json").json()["keys"]}
    assert key.kid in published
