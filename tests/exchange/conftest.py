"""One mesh of real sidecars for the package: edge (edge mode), orders (client secret),
billing, reports and exports, each with its own key, trusting each other's; and a real
local IdP serving JWKS for tenants acme and globex; and the example policy for the in-process tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tenantguard.decision.core import PolicyRevision

from tests.harness.example_bundle import example_revision
from tests.harness.sidecar_world import World

from .idp import LocalIdP
from .mesh import Mesh

ORDERS_SECRET = "orders-client-secret-0123456789"
ORDERS_AUTH = ("orders", ORDERS_SECRET)


@pytest.fixture(scope="module")
def revision() -> PolicyRevision:
    """The example bundle prepared without its tests (the in-process exchange tests' policy)."""
    return example_revision("test", include_tests=False)


@pytest.fixture(scope="package")
def idp() -> Iterator[LocalIdP]:
    server = LocalIdP()
    server.realm("acme")
    server.realm("globex", "ES256")
    yield server
    server.close()


def write_edge_config(path: Path, idp: LocalIdP) -> Path:
    path.write_text(json.dumps({
        "tenants": [idp.tenant_config("acme", "acme"), idp.tenant_config("globex", "globex")],
        "jwks_ttl": 300, "min_refetch_interval": 1, "http_timeout": 2,
    }))
    return path


@pytest.fixture(scope="package")
def mesh(tmp_path_factory: pytest.TempPathFactory, idp: LocalIdP) -> Iterator[Mesh]:
    root = tmp_path_factory.mktemp("mesh")
    world = World(root)
    secret = root / "orders.secret"
    secret.write_text(ORDERS_SECRET + "\n")
    secret.chmod(0o600)
    edge_config = write_edge_config(root / "edge.json", idp)
    running = Mesh(world, {
        "edge": ["--edge-config", str(edge_config)],
        "orders": ["--exchange-client-secret-file", str(secret)],
        "billing": [],
        "reports": [],
        "exports": [],
    })
    running.build_trust()
    yield running
    running.stop_all()
