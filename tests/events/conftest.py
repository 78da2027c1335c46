"""Keys for the event tests: the plane's, a second plane key, an attacker's, a sidecar's."""

from __future__ import annotations

import pytest
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet

SIDECAR_ISSUER = "sidecar:orders"


@pytest.fixture(scope="session")
def plane_key() -> SigningKey:
    return SigningKey.generate("EdDSA")


@pytest.fixture(scope="session")
def other_plane_key() -> SigningKey:
    """A second trusted plane key (rotation overlap): its kid is a tempting one to swap in."""
    return SigningKey.generate("EdDSA")


@pytest.fixture(scope="session")
def attacker_key() -> SigningKey:
    return SigningKey.generate("EdDSA")


@pytest.fixture(scope="session")
def sidecar_key() -> SigningKey:
    return SigningKey.generate("EdDSA")


@pytest.fixture
def trust(plane_key: SigningKey, other_plane_key: SigningKey, sidecar_key: SigningKey) -> TrustSet:
    return TrustSet(
        [
            TrustedKey.of(plane_key.public_key, "plane"),
            TrustedKey.of(other_plane_key.public_key, "plane"),
            TrustedKey.of(sidecar_key.public_key, SIDECAR_ISSUER),
        ]
    )
