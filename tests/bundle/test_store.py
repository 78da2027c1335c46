"""Activation: order, no-ops, failures that leave the active bundle alone, persistence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tenantguard.bundle import (
    Bundle,
    BundlePersistError,
    BundleStore,
    build_bundle,
    read_archive,
    sign_bundle,
    write_archive,
)
from tenantguard.errors import (
    BundleHashMismatch,
    BundleMalformed,
    BundleRejected,
    BundleRollback,
    BundleUnknownKey,
)
from tenantguard.identity.keys import SigningKey


@pytest.fixture
def make(source, key):
    """Signed bundle with a given serial; ``extra`` changes the policy content."""

    def make(serial: int, extra: str = "", revision: str | None = None) -> bytes:
        files = dict(source)
        files["authz/policy.rego"] = files["authz/policy.rego"] + extra.encode()
        return build_bundle(files, revision or f"r{serial}", signing_key=key, serial=serial)

    return make


@pytest.fixture
def store(verifier, tmp_path: Path) -> BundleStore[str]:
    return BundleStore(verifier, persist_dir=tmp_path / "state")


def _by_revision(key: SigningKey, revision: str) -> bytes:
    """A signed bundle whose manifest has no serial, only a revision."""
    manifest = json.dumps({"revision": revision}).encode()
    return sign_bundle(write_archive({".manifest": manifest, "p.rego": b"package p\n"}), key)


def test_newer_replaces_older_is_refused_force_accepts(store, make) -> None:
    store.activate(make(10))
    assert store.activate(make(11)).bundle.revision == "r11"
    with pytest.raises(BundleRollback, match="older than active"):
        store.activate(make(9))
    assert store.active is not None and store.active.bundle.revision == "r11"
    assert store.activate(make(9), force=True).bundle.revision == "r9"
    assert store.active.bundle.revision == "r9"


def test_identical_content_is_a_no_op(store, make, keys) -> None:
    calls: list[str] = []
    first = store.activate(make(5), prepare=lambda b: calls.append(b.revision) or "compiled")
    resigned = sign_bundle(make(5), keys["ES256"])  # same files, other signature
    again = store.activate(resigned, prepare=lambda b: calls.append(b.revision) or "other")
    assert again is first
    assert calls == ["r5"]
    assert again.prepared == "compiled"


def test_same_order_key_with_different_content_is_refused(store, make) -> None:
    store.activate(make(5))
    with pytest.raises(BundleRollback, match="different content"):
        store.activate(make(5, extra="# changed\n"))
    assert store.active.bundle.modules["authz/policy.rego"].endswith('"alice"\n')


def test_numeric_revisions_order_bundles_without_serial(verifier, key) -> None:
    store: BundleStore[None] = BundleStore(verifier)
    store.activate(_by_revision(key, "10"))
    with pytest.raises(BundleRollback):
        store.activate(_by_revision(key, "9"))
    assert store.activate(_by_revision(key, "11")).order == 11


def test_unorderable_bundles_need_force_against_an_active_one(verifier, key) -> None:
    store: BundleStore[None] = BundleStore(verifier)
    assert store.activate(_by_revision(key, "abc")).order is None  # first one: accepted
    with pytest.raises(BundleRollback, match="cannot be ordered"):
        store.activate(_by_revision(key, "def"))
    with pytest.raises(BundleRollback, match="cannot be ordered"):
        store.activate(_by_revision(key, "12"))
    assert store.activate(_by_revision(key, "def"), force=True).bundle.revision == "def"


def test_a_non_integer_serial_is_refused(store, source, key) -> None:
    archive = build_bundle(source, "r", signing_key=key, metadata={"serial": "12"})
    with pytest.raises(BundleMalformed, match="serial"):
        store.activate(archive)
    assert store.active is None


def test_a_rejected_bundle_keeps_the_previous_one(store, make, tar, source) -> None:
    good = store.activate(make(1))
    persisted = store.persisted_path.read_bytes()
    tampered = tar.repack(make(2), lambda f: f.update({"data.json": b'{"tenants": {}}'}))
    with pytest.raises(BundleHashMismatch):
        store.activate(tampered)
    stranger = build_bundle(source, "r3", signing_key=SigningKey.generate(), serial=3)
    with pytest.raises(BundleUnknownKey):
        store.activate(stranger)
    assert store.active is good
    assert store.persisted_path.read_bytes() == persisted


def test_prepare_runs_before_the_swap_and_its_failure_rejects(store, make) -> None:
    store.activate(make(1), prepare=lambda b: f"engine:{b.revision}")
    seen_active: list[str] = []

    def prepare(bundle: Bundle) -> str:
        seen_active.append(store.active.bundle.revision)
        return f"engine:{bundle.revision}"

    activation = store.activate(make(2), prepare=prepare)
    assert seen_active == ["r1"]  # prepared while the old bundle was still serving
    assert activation.prepared == "engine:r2" and store.active is activation

    def broken(bundle: Bundle) -> str:
        raise ValueError("rego_parse_error: unexpected token")

    with pytest.raises(BundleRejected, match="failed to prepare") as exc:
        store.activate(make(3), prepare=broken)
    assert isinstance(exc.value.__cause__, ValueError)
    assert store.active is activation
    persisted = read_archive(store.persisted_path.read_bytes())[".manifest"]
    assert json.loads(persisted)["revision"] == "r2"


def test_persisted_bundle_restores_on_cold_start(verifier, make, tmp_path: Path) -> None:
    first: BundleStore[str] = BundleStore(verifier, persist_dir=tmp_path)
    first.activate(make(1))
    first.activate(make(2))
    restarted: BundleStore[str] = BundleStore(verifier, persist_dir=tmp_path)
    restored = restarted.load_persisted(prepare=lambda b: f"engine:{b.revision}")
    assert restored is not None and restored.bundle.revision == "r2"
    assert restored.prepared == "engine:r2"
    assert restored.digest == first.active.digest
    assert list(tmp_path.iterdir()) == [tmp_path / "bundle.tar.gz"]  # no temp files left


def test_nothing_persisted_means_nothing_loaded(verifier, tmp_path: Path) -> None:
    assert BundleStore(verifier, persist_dir=tmp_path / "empty").load_persisted() is None
    assert BundleStore(verifier).load_persisted() is None


@pytest.mark.parametrize("damage", ["truncated", "tampered", "garbage"])
def test_a_corrupted_persisted_file_is_never_activated(verifier, make, tar, tmp_path, damage) -> None:
    BundleStore(verifier, persist_dir=tmp_path).activate(make(1))
    path = tmp_path / "bundle.tar.gz"
    good = path.read_bytes()
    path.write_bytes(
        {
            "truncated": good[: len(good) // 2],
            "tampered": tar.repack(good, lambda f: f.update({"data.json": b'{"tenants": 1}'})),
            "garbage": b"\x1f\x8b" + bytes(100),
        }[damage]
    )
    restarted: BundleStore[None] = BundleStore(verifier, persist_dir=tmp_path)
    with pytest.raises(BundleRejected):
        restarted.load_persisted()
    assert restarted.active is None


def test_a_persist_failure_leaves_the_active_bundle(verifier, make, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state directory should be")
    store: BundleStore[None] = BundleStore(verifier, persist_dir=blocker / "state")
    with pytest.raises(BundlePersistError) as exc:
        store.activate(make(1))
    assert exc.value.retryable
    assert store.active is None


def test_persisted_bytes_are_the_verified_archive(store, make) -> None:
    archive = make(4)
    store.activate(archive)
    assert store.persisted_path.read_bytes() == archive
