"""A real nats-server per test: free port, its own JetStream store, always stopped; and the same with
authorization on (:mod:`tests.harness.secure_nats`), with a stand-in plane publishing on it.

Other test packages start servers the same way, importing :mod:`tenantguard.dev.natsserver`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import natsconn
from tenantguard.identity.keys import SigningKey

from tests.harness.fleet import make_bundle
from tests.harness.secure_nats import plane_conn, users, write_credentials
from tests.harness.stand_in_plane import TestPlane


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    with NatsServer(tmp_path / "nats") as server:
        yield server


@pytest.fixture(scope="module")
def plane_key() -> SigningKey:
    return SigningKey.generate("EdDSA")


@pytest.fixture(scope="module")
def bundle_key() -> SigningKey:
    return SigningKey.generate("EdDSA")


@pytest.fixture
def plane_pem(tmp_path: Path, plane_key: SigningKey) -> Path:
    path = tmp_path / "plane.pem"
    path.write_bytes(plane_key.public_pem())
    return path


@pytest.fixture
def bundle_pem(tmp_path: Path, bundle_key: SigningKey) -> Path:
    path = tmp_path / "bundle.pem"
    path.write_bytes(bundle_key.public_pem())
    return path


@pytest.fixture
def creds(tmp_path: Path) -> dict[str, Path]:
    """The plane's password file and the billing sidecar's nkey seed file (both 0600)."""
    return write_credentials(tmp_path / "auth")


@pytest.fixture
def secure_nats(tmp_path: Path, creds: dict[str, Path]) -> Iterator[NatsServer]:
    with NatsServer(tmp_path / "nats", users=users(creds)) as server:
        yield server


@pytest.fixture
async def plane(secure_nats: NatsServer, creds: dict[str, Path], plane_key: SigningKey,
                bundle_key: SigningKey) -> AsyncIterator[TestPlane]:
    nc = await natsconn.connect(plane_conn(secure_nats, creds), timeout=5, allow_reconnect=False)
    publisher = TestPlane(nc, plane_key)
    await publisher.create_topology()
    await publisher.bundle(make_bundle(bundle_key, 1), "1")
    yield publisher
    await publisher.close()
