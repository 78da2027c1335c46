"""Editing the persisted ``feed.json`` cannot lift a revocation by reordering its signed events.

The events are re-verified on load, so none can be forged; but they used to be applied in
file order, each only if newer than the last applied: putting a genuine later event (here a
``lift_tenant`` of another tenant, or any revocation) before a kill switch made the restored
sidecar skip the kill switch as "already applied". No NATS is needed: this is the cold start
with the broker unreachable, the case the file exists for.
"""

from __future__ import annotations

import json
from pathlib import Path

from tenantguard.feed.events import BUNDLE_ANNOUNCE, REVOCATION, sign_event
from tenantguard.identity.keys import SigningKey

from authz_sidecar.config import SidecarConfig
from authz_sidecar.feed import Feed
from authz_sidecar.feed.store import FeedStore
from authz_sidecar.runtime import Sidecar
from tests.harness.fleet import FAST

NOW = 1_767_225_600.0


def restored(state_dir: Path, plane_pem: Path, bundle_pem: Path) -> Sidecar:
    config = SidecarConfig(service="billing", nats_url="nats://127.0.0.1:1", plane_key=plane_pem,
                           bundle_keys=(bundle_pem,), state_dir=state_dir, grpc_port=None)
    sidecar = Sidecar.from_config(config)
    Feed.for_sidecar(sidecar, FAST).load_persisted()  # never started: NATS is down
    return sidecar


def write_state(state_dir: Path, events: list[bytes]) -> None:
    state = {"version": 1, "revocations": {"stream_seq": len(events), "events": [e.decode() for e in events]}}
    (state_dir / "feed").mkdir(parents=True, exist_ok=True)
    FeedStore(state_dir / "feed").state_path.write_text(json.dumps(state))


def test_reordered_revocations_still_apply_every_one(tmp_path: Path, plane_key: SigningKey, plane_pem: Path,
                                                     bundle_pem: Path) -> None:
    kill = sign_event(plane_key, REVOCATION, {"kind": "tenant", "tenant": "acme", "issued_before": int(NOW)}, 1,
                      now=NOW)
    subject = sign_event(plane_key, REVOCATION, {"kind": "subject", "tenant": "globex", "sub": "bob",
                                                 "issued_before": int(NOW)}, 2, now=NOW)
    jti = sign_event(plane_key, REVOCATION, {"kind": "jti", "jti": "j-1", "exp": int(NOW) + 10**8}, 3, now=NOW)
    write_state(tmp_path / "state", [jti, subject, kill])  # newest first: the edit
    sidecar = restored(tmp_path / "state", plane_pem, bundle_pem)
    claims = {"jti": "other", "kid": "k", "iat": NOW - 1}
    assert sidecar.revocations.reason(tenant="acme", sub="alice", **claims) == "tenant revoked"
    assert sidecar.revocations.reason(tenant="globex", sub="bob", **claims) == "subject revoked"
    assert sidecar.revocations.reason(jti="j-1", kid="k", tenant="t", sub="s", iat=NOW) == "jti revoked"
    assert sidecar.revocations_seq == 3


def test_a_duplicated_event_is_applied_once(tmp_path: Path, plane_key: SigningKey, plane_pem: Path,
                                            bundle_pem: Path) -> None:
    kill = sign_event(plane_key, REVOCATION, {"kind": "tenant", "tenant": "acme", "issued_before": int(NOW)}, 1,
                      now=NOW)
    lift = sign_event(plane_key, REVOCATION, {"kind": "lift_tenant", "tenant": "acme"}, 2, now=NOW)
    write_state(tmp_path / "state", [lift, kill, lift, kill])
    sidecar = restored(tmp_path / "state", plane_pem, bundle_pem)
    assert sidecar.revocations.reason(jti="x", kid="k", tenant="acme", sub="alice", iat=NOW - 1) is None
    assert sidecar.revocations_seq == 2


def test_a_state_file_with_non_ascii_events_is_ignored_not_a_crash(tmp_path: Path, plane_key: SigningKey,
                                                                  plane_pem: Path, bundle_pem: Path) -> None:
    kill = sign_event(plane_key, REVOCATION, {"kind": "tenant", "tenant": "acme", "issued_before": int(NOW)}, 1,
                      now=NOW)
    write_state(tmp_path / "state", [kill.replace(b"acme", "acm\u00e9".encode())])
    sidecar = restored(tmp_path / "state", plane_pem, bundle_pem)  # used to raise UnicodeEncodeError
    assert sidecar.revocations_seq == 0


def announce(key: SigningKey, scope: str, seq: int) -> bytes:
    payload = {"scope": scope, "revision": str(seq), "sha256": "0" * 64, "size": 1, "object": f"bundles/{scope}/x",
               "services": [scope]}
    return sign_event(key, BUNDLE_ANNOUNCE, payload, seq, now=NOW)


def test_a_bundle_position_is_believed_only_with_its_signed_announce(
    tmp_path: Path, plane_key: SigningKey, attacker_key: SigningKey, plane_pem: Path, bundle_pem: Path
) -> None:
    """A position raised by hand would make the sidecar ignore every new bundle while reporting
    itself in step with the plane (its seq at or past what heartbeats declare): a freeze."""
    cases: dict[str, tuple[dict[str, object], int]] = {
        "bare seq": ({"seq": 10**9}, 0),
        "forged announce": ({"seq": 10**9, "event": announce(attacker_key, "all", 10**9).decode()}, 0),
        "another scope's announce": ({"seq": 7, "event": announce(plane_key, "billing", 7).decode()}, 0),
        "a genuine announce": ({"seq": 10**9, "event": announce(plane_key, "all", 3).decode()}, 3),
    }
    for name, (position, expected) in cases.items():
        state_dir = tmp_path / name.replace(" ", "_").replace("'", "")
        (state_dir / "feed").mkdir(parents=True)
        doc = {"version": 1, "bundles": {"all": position}, "revocations": {"stream_seq": 0, "events": []}}
        FeedStore(state_dir / "feed").state_path.write_text(json.dumps(doc))
        config = SidecarConfig(service="billing", nats_url="nats://127.0.0.1:1", plane_key=plane_pem,
                               bundle_keys=(bundle_pem,), state_dir=state_dir, grpc_port=None)
        feed = Feed.for_sidecar(Sidecar.from_config(config), FAST)
        feed.load_persisted()
        assert feed.bundles[0].scope == "all"
        assert feed.bundles[0].seq == expected, name
