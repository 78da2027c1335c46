"""Shared fixtures: real keys, real signatures, real trust sets."""

from __future__ import annotations

import pytest
from tenantguard.keys import SigningKey, TrustSet


@pytest.fixture(scope="session")
def edge_key() -> SigningKey:
    return SigningKey.generate("EdDSA")


@pytest.fixture()
def trust(edge_key: SigningKey) -> TrustSet:
    trust = TrustSet()
    trust.add_public_key(edge_key.public_key, "edge")
    return trust
