"""Shared fixtures: real keys, real signatures, real trust sets; and how xdist hands out tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from tenantguard.identity.keys import SigningKey, TrustSet


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (pyproject's addopts): whole files per worker, whole packages where
    their files share a deployment, longest first (tests/xdist_schedule.py). Other ``--dist``
    values keep xdist's own meaning."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.xdist_schedule import FileOrPackageScheduling

    return FileOrPackageScheduling(config, log)


@pytest.fixture(scope="session")
def edge_key() -> SigningKey:
    return SigningKey.generate("EdDSA")


@pytest.fixture()
def trust(edge_key: SigningKey) -> TrustSet:
    trust = TrustSet()
    trust.add_public_key(edge_key.public_key, "edge")
    return trust


@pytest.fixture()
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test: bound but never listening
    (the kernel answers RST), and held, so no other process (another xdist worker's server)
    can take it between the pick and the connect, as it could a port bound and released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])
