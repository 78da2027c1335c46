"""Real sidecars serving the AuthZEN interop Todo bundle (bundles/authzen-todo), signed
like any bundle, answering PEPs that send no context token and name no tenant."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tenantguard.bundle import build_bundle
from tenantguard.identity.keys import SigningKey, TrustSet

from authz_sidecar.pep import secret_digest
from tests.harness.sidecar_process import SidecarProcess, drain, start_sidecar

REPO = Path(__file__).resolve().parents[2]
TODO_BUNDLE = REPO / "bundles" / "authzen-todo"
DECISIONS = Path(__file__).resolve().parent / "interop" / "decisions-authorization-api-1_0-02.json"
TENANT = "acme"


def decision_table() -> dict[str, list[dict[str, Any]]]:
    """The working group's table: ``evaluation`` rows and ``evaluations`` (boxcar) rows."""
    table: dict[str, list[dict[str, Any]]] = json.loads(DECISIONS.read_text())
    return table


@dataclass
class TodoWorld:
    """Signed Todo bundle, the edge key and its trust file, and two PEP keys."""

    root: Path
    edge: SigningKey
    trust_file: Path
    plane_pub: Path
    bundle_file: Path
    pep_keys_file: Path
    acme_key: str
    globex_key: str

    def args(self, *extra: str) -> list[str]:
        return ["--service", "todo", "--bundle", str(self.bundle_file), "--bundle-key", str(self.plane_pub),
                "--trust", str(self.trust_file), "--port", "0", "--grpc-port", "-1", *extra]


@pytest.fixture(scope="session")
def todo_world(tmp_path_factory: pytest.TempPathFactory) -> TodoWorld:
    root = tmp_path_factory.mktemp("todo")
    plane, edge = SigningKey.generate(), SigningKey.generate()
    plane_pub = plane.save(root / "plane.pem")
    trust = TrustSet()
    trust.add_public_key(edge.public_key, "edge")
    trust_file = root / "trust.json"
    trust.save(trust_file)
    bundle_file = root / "todo.tar.gz"
    bundle_file.write_bytes(build_bundle(TODO_BUNDLE, "1", signing_key=plane))
    acme_key, globex_key = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    pep_keys_file = root / "pep-keys.json"
    pep_keys_file.write_text(json.dumps({"keys": [
        {"name": "todo-backend", "tenant": TENANT, "secret_sha256": secret_digest(acme_key)},
        {"name": "globex-gateway", "tenant": "globex", "secret_sha256": secret_digest(globex_key)},
    ]}))
    return TodoWorld(root, edge, trust_file, plane_pub, bundle_file, pep_keys_file, acme_key, globex_key)


def _running(args: list[str]) -> Iterator[SidecarProcess]:
    proc = start_sidecar(args)
    drain(proc)
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def single_tenant(todo_world: TodoWorld) -> Iterator[SidecarProcess]:
    """``--tenant acme``: the way the interop PEP (no token, no tenant) is served."""
    yield from _running(todo_world.args("--tenant", TENANT))


@pytest.fixture(scope="module")
def pep_keyed(todo_world: TodoWorld) -> Iterator[SidecarProcess]:
    """``--pep-keys``: the tenant comes from the key the PEP presents."""
    yield from _running(todo_world.args("--pep-keys", str(todo_world.pep_keys_file)))
