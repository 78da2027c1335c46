"""Real nats-server, a stand-in plane publishing signed events, and in-process sidecars each with its own
feed (:mod:`tests.harness.fleet`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.identity.keys import SigningKey

from tests.harness.fleet import Fleet, make_bundle
from tests.harness.stand_in_plane import TestPlane


@pytest.fixture(scope="session")
def plane_key() -> SigningKey:
    return SigningKey.generate("EdDSA")


@pytest.fixture(scope="session")
def bundle_key() -> SigningKey:
    """The plane signs bundles with a key of their own, never with its event key."""
    return SigningKey.generate("EdDSA")


@pytest.fixture
def bundle_pem(tmp_path: Path, bundle_key: SigningKey) -> Path:
    path = tmp_path / "bundle.pem"
    path.write_bytes(bundle_key.public_pem())
    return path


@pytest.fixture(scope="session")
def attacker_key() -> SigningKey:
    return SigningKey.generate("EdDSA")


@pytest.fixture
def plane_pem(tmp_path: Path, plane_key: SigningKey) -> Path:
    path = tmp_path / "plane.pem"
    path.write_bytes(plane_key.public_pem())
    return path


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    with NatsServer(tmp_path / "nats") as server:
        yield server


@pytest.fixture
async def plane(nats_server: NatsServer, plane_key: SigningKey, bundle_key: SigningKey) -> AsyncIterator[TestPlane]:
    publisher = await TestPlane.connect(nats_server.url, plane_key)
    await publisher.create_topology()
    await publisher.bundle(make_bundle(bundle_key, 1), "1")
    yield publisher
    await publisher.close()


@pytest.fixture
async def fleet(tmp_path: Path, nats_server: NatsServer, plane_pem: Path, bundle_pem: Path) -> AsyncIterator[Fleet]:
    sidecars = Fleet(tmp_path / "sidecars", nats_server.url, plane_pem, bundle_pem)
    yield sidecars
    await sidecars.close()
