"""Staged-rollout rules and rollback archives: pure, no NATS (the e2e tests run them for real)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from tenantguard.bundle import JwtSigner, PublicKeyVerifier, build_bundle, order_key, verify_bundle
from tenantguard.bundle.store import BundleStore
from tenantguard.errors import BundleRollback, InvalidInput, RolloutConflict
from tenantguard.identity.keys import SigningKey
from tenantguard.rollout import RolloutState, next_serial, parse_stages, restored_archive
from tenantguard.rollout.plan import ABORTED, COMPLETED, HALTED, IN_PROGRESS, MAX_HISTORY

from .conftest import BUNDLE_DIR


def test_stages_parse_and_refuse_what_cannot_be_rolled_out() -> None:
    assert parse_stages("billing;orders,reports;all") == (("billing",), ("orders", "reports"), ("all",))
    for bad in ("", "all;billing", "billing;billing", "billing,all", "Billing", "a b", ";".join(["s"] * 40)):
        with pytest.raises(InvalidInput):
            parse_stages(bad)


@pytest.fixture()
def state() -> RolloutState:
    bundle = verify_bundle(build_bundle(BUNDLE_DIR, "7", serial=70), None, require_signature=False)
    return RolloutState.start(bundle, sha256="0" * 64, size=10, object="rollouts/7.70",
                              stages=parse_stages("billing;orders;all"), actor="admin")


def test_a_rollout_advances_stage_by_stage_and_completes(state: RolloutState) -> None:
    assert (state.id, state.status, state.reached) == ("7.70", IN_PROGRESS, ("billing",))
    second = state.advance("admin")
    assert second.reached == ("billing", "orders") and second.status == IN_PROGRESS
    done = second.advance("admin")
    assert done.status == COMPLETED and done.reached == ("billing", "orders", "all")
    with pytest.raises(RolloutConflict):
        done.advance("admin")
    assert [h["action"] for h in done.history] == ["start", "advance", "advance"]


def test_a_halted_rollout_cannot_advance_until_resumed(state: RolloutState) -> None:
    halted = state.halt("admin")
    assert halted.status == HALTED
    with pytest.raises(RolloutConflict) as caught:
        halted.advance("admin")
    assert caught.value.detail["rollout_status"] == HALTED
    assert f"resume it first (`tenantguard bundle rollout resume {halted.id}`)" in caught.value.message
    with pytest.raises(RolloutConflict):
        halted.halt("admin")
    assert halted.resume("admin").advance("admin").stage == 1
    aborted = halted.abort("admin")
    assert aborted.status == ABORTED and not aborted.open
    for step in (aborted.advance, aborted.resume, aborted.abort):
        with pytest.raises(RolloutConflict):
            step("admin")


def test_the_state_round_trips_through_its_wire_form_and_history_is_bounded(state: RolloutState) -> None:
    moved = state
    for _ in range(MAX_HISTORY):
        moved = moved.halt("admin").resume("admin")
    assert len(moved.history) == MAX_HISTORY
    wire = json.loads(json.dumps(moved.to_wire()))
    assert RolloutState.from_wire(wire) == moved
    with pytest.raises(InvalidInput):
        RolloutState.from_wire({**wire, "stage": 9})
    with pytest.raises(InvalidInput):
        RolloutState.from_wire({**wire, "status": "done-ish"})


def test_a_rollback_is_old_content_under_a_newer_serial_and_replays_stay_refused(tmp_path: Path) -> None:
    key = SigningKey.generate()
    signer, verifier = JwtSigner(key, issuer="plane"), PublicKeyVerifier(key.public_key)
    old = build_bundle(BUNDLE_DIR, "1", signing_key=signer, serial=100)
    new = build_bundle(BUNDLE_DIR, "2", signing_key=signer, serial=200, metadata={"note": "changed"})
    store: BundleStore[None] = BundleStore(verifier)
    store.activate(old)
    store.activate(new)
    serial = next_serial(200)
    assert serial > 200
    restored = restored_archive(verify_bundle(old, verifier), serial=serial, rolled_back_from="2", signer=signer)
    bundle = verify_bundle(restored, verifier)
    old_bundle = verify_bundle(old, verifier)
    assert bundle.revision == f"1.rollback.{serial}" and order_key(bundle.manifest) == serial
    assert dict(bundle.manifest.metadata) == {**dict(old_bundle.manifest.metadata), "serial": serial,
                                              "rollback_of": "1", "rolled_back_from": "2"}
    assert {n: f for n, f in bundle.files.items() if n != ".manifest"} == \
        {n: f for n, f in old_bundle.files.items() if n != ".manifest"}
    assert store.activate(restored).bundle.revision == bundle.revision
    # replays of both older announcements' bytes are refused: the rollback did not lower the bar
    for replayed in (new, old):
        with pytest.raises(BundleRollback):
            store.activate(replayed)
    assert hashlib.sha256(store.active.archive).digest() == hashlib.sha256(restored).digest()
