"""Fixtures for the bundle tests: real keys, a sample bundle tree, hand-made tarballs."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tenantguard.bundle import TrustSetVerifier
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet

from tests.harness.tarballs import Tar

ISSUER = "policy-plane"

SOURCE: dict[str, bytes] = {
    "authz/policy.rego": b"package authz\n\ndefault allow := false\n\nallow if input.user == \"alice\"\n",
    "authz/roles/data.json": b'{"admin": ["alice"], "viewer": ["bob", "carol"]}',
    "data.json": b'{"tenants": {"t1": {"plan": "gold"}}}',
}


@pytest.fixture(scope="session")
def keys() -> dict[str, SigningKey]:
    return {alg: SigningKey.generate(alg) for alg in ("EdDSA", "ES256", "RS256")}


@pytest.fixture
def key(keys: dict[str, SigningKey]) -> SigningKey:
    return keys["EdDSA"]


@pytest.fixture
def trust(keys: dict[str, SigningKey]) -> TrustSet:
    return TrustSet(TrustedKey.of(k.public_key, ISSUER) for k in keys.values())


@pytest.fixture
def verifier(trust: TrustSet) -> TrustSetVerifier:
    return TrustSetVerifier(trust)


@pytest.fixture
def source() -> dict[str, bytes]:
    return dict(SOURCE)


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    """A bundle repository: policy and data, a manifest, and files that must be left out."""
    root = tmp_path / "bundle"
    for name, content in SOURCE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    (root / ".manifest").write_text(json.dumps({"revision": "old", "roots": ["authz", "tenants"]}))
    (root / "README.md").write_text("not part of the bundle\n")
    (root / ".git").mkdir()
    (root / ".git" / "data.json").write_text("{}")
    (root / "authz" / "fixtures.json").write_text("{}")
    return root


@pytest.fixture
def tar() -> type[Tar]:
    return Tar


def jwt_parts(archive: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Header and payload of the bundle JWT, decoded without verification."""
    token = json.loads(Tar.unpack(archive)[".signatures.json"])["signatures"][0]
    header, payload, _ = token.split(".")
    return b64json(header), b64json(payload)


def b64json(segment: str) -> dict[str, Any]:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


@pytest.fixture
def decode_jwt() -> Callable[[bytes], tuple[dict[str, Any], dict[str, Any]]]:
    return jwt_parts
