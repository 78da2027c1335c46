"""Bundle swaps from NATS without stalls: ``Sidecar.activate_bundle_async`` (in process).

The feed activates bundles on the serving event loop; compiling with
``RegorusEngine.prepare_steps`` one step per loop iteration lets decisions go on, on the
active revision, until the one-reference swap. The verdicts (signature, hashes, rollback,
identical content) must be exactly the synchronous path's, which is BundleStore's.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tenantguard.bundle import build_bundle
from tenantguard.errors import BundleRejected, BundleRollback
from tenantguard.identity.keys import SigningKey

from authz_sidecar.config import SidecarConfig
from authz_sidecar.runtime import Sidecar
from tests.harness.cluster import tamper

POLICY = """package swaptest

import rego.v1

default decision := {"allow": false, "reasons": ["not_listed"], "high_risk": false}

decision := {"allow": true, "reasons": [], "high_risk": false} if {
	data.swaptest.users[input.subject.id]
}
"""
QUESTION = {"subject": {"type": "user", "id": "u1", "properties": {"tenant_id": "acme"}},
            "action": {"name": "read"}, "resource": {"type": "project", "id": "p1"}}


def bundle(key: SigningKey, serial: int, users: int) -> bytes:
    manifest = {"revision": str(serial), "roots": ["swaptest"], "metadata": {"decision": "data.swaptest.decision"}}
    data = {"swaptest": {"users": {f"u{i}": {"n": i, "tags": ["a", "b"]} for i in range(users)}}}
    files = {".manifest": json.dumps(manifest), "policy.rego": POLICY, "data.json": json.dumps(data)}
    return build_bundle(files, str(serial), signing_key=key, serial=serial)


def tampered(archive: bytes) -> bytes:
    return tamper(archive, "policy.rego", b'default decision := {"allow": false', b'default decision := {"allow": true')


@pytest.fixture
def key() -> SigningKey:
    return SigningKey.generate()


def make(tmp_path: Path, key: SigningKey, name: str = "a") -> Sidecar:
    pem = tmp_path / "bundle.pem"
    if not pem.exists():
        pem.write_bytes(key.public_pem())
    return Sidecar.from_config(SidecarConfig(service="billing", bundle_keys=(pem,), state_dir=tmp_path / name,
                                             grpc_port=None))


def rejected(sidecar: Sidecar, code: str) -> float:
    return sidecar.metrics.registry.get_sample_value("tg_bundles_rejected_total", {"code": code}) or 0.0


async def test_decisions_go_on_during_an_async_swap_and_not_during_a_sync_one(tmp_path: Path,
                                                                              key: SigningKey) -> None:
    sidecar = make(tmp_path, key)
    sidecar.activate_bundle(bundle(key, 1, users=0))
    big = bundle(key, 2, users=20_000)  # several data slices: several steps
    seen: list[str | None] = []
    activating = asyncio.Event()
    finished = asyncio.Event()

    async def decide_meanwhile() -> None:
        while not finished.is_set():
            if activating.is_set():
                seen.append(sidecar.decide(QUESTION, None, door="test").bundle_revision)
            await asyncio.sleep(0)

    ticker = asyncio.create_task(decide_meanwhile())
    await asyncio.sleep(0)
    activating.set()
    revision = await sidecar.activate_bundle_async(big)
    activating.clear()
    assert revision.revision == "2" and sidecar.bundle_revision == "2"
    assert seen.count("1") >= 2  # answered on the active revision while the next one compiled
    assert sidecar.decide(QUESTION, None, door="test").allow is True

    # the synchronous path, for contrast: nothing else runs on the loop while it compiles
    seen.clear()
    activating.set()
    sidecar.activate_bundle(bundle(key, 3, users=20_000))
    activating.clear()
    finished.set()
    await ticker
    assert seen == [] and sidecar.bundle_revision == "3"


async def test_async_refusals_are_the_sync_ones(tmp_path: Path, key: SigningKey) -> None:
    sync, async_ = make(tmp_path, key, "sync"), make(tmp_path, key, "async")
    first, second = bundle(key, 5, users=3), bundle(key, 6, users=3)
    sync.activate_bundle(second)
    await async_.activate_bundle_async(second)

    cases = {"tampered": tampered(bundle(key, 7, users=3)), "older": first,
             "other signer": bundle(SigningKey.generate(), 8, users=3)}
    for name, archive in cases.items():
        with pytest.raises(BundleRejected) as sync_error:
            sync.activate_bundle(archive)
        with pytest.raises(BundleRejected) as async_error:
            await async_.activate_bundle_async(archive)
        assert type(async_error.value) is type(sync_error.value), name
        assert async_error.value.code == sync_error.value.code, name
        assert rejected(async_, async_error.value.code) == rejected(sync, sync_error.value.code) >= 1, name
        assert async_.bundle_revision == sync.bundle_revision == "6", name
    assert isinstance(async_error.value, BundleRejected)
    with pytest.raises(BundleRollback):
        await async_.activate_bundle_async(first)

    same = async_.core.active
    assert await async_.activate_bundle_async(second) is same  # identical content: a no-op
    assert async_.metrics.registry.get_sample_value("tg_bundles_activated_total") == 1.0


async def test_an_async_activation_is_persisted_for_cold_start(tmp_path: Path, key: SigningKey) -> None:
    sidecar = make(tmp_path, key)
    await sidecar.activate_bundle_async(bundle(key, 9, users=10))
    again = make(tmp_path, key)  # same state dir
    assert again.bundle_revision == "9"
    assert again.decide(QUESTION, None, door="test").allow is True
