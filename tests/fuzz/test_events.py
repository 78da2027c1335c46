"""Fuzzing the signed event envelope and every payload parser behind it.

Inputs are made with the real plane key, so they pass the signature and reach the code
a forger never could: envelope members of the wrong type re-signed, every payload member
of every event type mutated and signed, and the canonical bytes themselves broken.
Property: only :class:`EventRejected` (or, past verification, the payload parser's own
typed errors) ever escapes; never ``KeyError``, ``TypeError``, ``RecursionError``...
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tenantguard.errors import TenantGuardError
from tenantguard.feed.events import (
    BUNDLE_ANNOUNCE,
    RELATIONS_BATCH,
    RELATIONS_SNAPSHOT,
    REVOCATION,
    SIGNING_PREFIX,
    TRUST_UPDATE,
    Event,
    EventMalformed,
    EventRejected,
    batch_from_event,
    sign_event,
    verify_event,
    verify_snapshot_manifest,
)
from tenantguard.feed.freshness import Heartbeat
from tenantguard.feed.topology import PLANE_HEARTBEAT
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.revocations import RevocationList

from authz_sidecar.feed.control import Announce, _mapping, apply_revocation

from .budget import budget, timeout
from .strategies import json_values, mutated, nested, odd_strings

pytestmark = timeout

PLANE = SigningKey.generate("EdDSA")
TRUST = TrustSet()
TRUST.add_public_key(PLANE.public_key, "plane")
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode


def _trust_payload() -> dict[str, Any]:
    edge = TrustSet()
    edge.add_public_key(SigningKey.generate("EdDSA").public_key, "edge")
    return {"jwks": edge.to_jwks()}


PAYLOADS: dict[str, dict[str, Any]] = {
    RELATIONS_BATCH: {"changes": [{"op": "write", "rel": {"tenant": "acme", "object": "project:p1",
                                                           "relation": "member", "subject": "user:alice"}},
                                  {"op": "delete", "rel": {"tenant": "acme", "object": "group:eng",
                                                            "relation": "member", "subject": "group:ops#member"}}]},
    RELATIONS_SNAPSHOT: {"count": 3, "size": 120, "sha256": "a" * 64},
    TRUST_UPDATE: _trust_payload(),
    REVOCATION: {"kind": "subject", "tenant": "acme", "sub": "alice", "issued_before": 1_700_000_000},
    BUNDLE_ANNOUNCE: {"scope": "all", "revision": "7", "sha256": "b" * 64, "size": 2048, "object": "bundle-7",
                      "services": ["billing"]},
    PLANE_HEARTBEAT: {"relations_seq": 3, "trust_seq": 1, "revocations_seq": 0, "bundles": {"all": 2},
                      "expires_at_ms": 4_102_444_800_000, "replica": "r1"},
}
TYPES = sorted(PAYLOADS)


def _parse_payload(event: Event) -> None:
    """What the sidecar does with a verified event of each type."""
    parsers: dict[str, Callable[[Event], object]] = {
        RELATIONS_BATCH: batch_from_event,
        RELATIONS_SNAPSHOT: lambda e: verify_snapshot_manifest(_resign_same(e), TRUST),
        TRUST_UPDATE: lambda e: list(TrustSet.from_jwks(_mapping(e.payload.get("jwks"), "jwks"))),
        REVOCATION: lambda e: apply_revocation(RevocationList(), e),
        BUNDLE_ANNOUNCE: Announce.from_event,
        PLANE_HEARTBEAT: Heartbeat.from_event,
    }
    parsers[event.type](event)


def _resign_same(event: Event) -> bytes:
    return sign_event(PLANE, event.type, event.payload, event.seq)


def resign(body: dict[str, Any], key: SigningKey = PLANE) -> bytes:
    """An envelope with exactly these members, signed as the plane signs (canonical bytes)."""
    unsigned = {k: v for k, v in body.items() if k != "sig"}
    sig = base64.urlsafe_b64encode(key.private_key.sign(SIGNING_PREFIX + _ENCODE(unsigned).encode())).rstrip(b"=")
    return _ENCODE({**unsigned, "sig": sig.decode()}).encode()


def envelope(event_type: str, payload: Any, seq: int = 5) -> dict[str, Any]:
    return {"v": 1, "type": event_type, "seq": seq, "issued_at_ms": int(time.time() * 1000), "kid": PLANE.kid,
            "payload": payload}


def accept_or_refuse(data: bytes, expected: str | None = None) -> Event | None:
    """The property: a verified event of the documented shape, or an EventRejected."""
    try:
        event = verify_event(data, TRUST, expected_type=expected)
    except EventRejected:
        return None
    assert isinstance(event.type, str) and isinstance(event.seq, int) and not isinstance(event.seq, bool)
    assert isinstance(event.payload, dict) and event.issuer == "plane"
    return event


def test_the_base_events_verify_and_parse() -> None:
    """Each unmutated event verifies and parses, so a refusal below is the mutation's."""
    for event_type in TYPES:
        event = accept_or_refuse(resign(envelope(event_type, PAYLOADS[event_type])), event_type)
        assert event is not None
        if event_type != RELATIONS_SNAPSHOT:  # its check needs the snapshot bytes
            _parse_payload(event)


@budget(120)
@given(data=st.data(), event_type=st.sampled_from(TYPES))
def test_envelope_members_of_the_wrong_type_resigned(data: st.DataObject, event_type: str) -> None:
    body = data.draw(mutated(envelope(event_type, PAYLOADS[event_type])))
    try:
        raw = resign(body)
    except (ValueError, TypeError, RecursionError):  # not JSON at all: nothing a plane key could sign
        return
    accept_or_refuse(raw)


@budget(200)
@given(data=st.data(), event_type=st.sampled_from(TYPES))
def test_payload_members_of_the_wrong_type_signed_and_parsed(data: st.DataObject, event_type: str) -> None:
    """The sidecar's payload parsers behind a genuine signature: typed refusals only."""
    payload = data.draw(mutated(PAYLOADS[event_type]))
    try:
        raw = resign(envelope(event_type, payload))
    except (ValueError, TypeError, RecursionError):
        return
    event = accept_or_refuse(raw, event_type)
    if event is None:
        return
    with contextlib.suppress(TenantGuardError):
        _parse_payload(event)


@pytest.mark.parametrize("value", [2**63, -(2**63), 10**40, 10**4000])
def test_a_genuinely_signed_integer_beyond_the_envelopes_bound_is_malformed(value: int) -> None:
    """Found by the long pass: a revocation's ``issued_before`` of 10**600 reached ``float()``
    (OverflowError, not a typed refusal). Every event integer is bounded at parse now."""
    payload = {"kind": "subject", "tenant": "acme", "sub": "alice", "issued_before": value}
    with pytest.raises(EventMalformed, match="2\\*\\*63"):
        verify_event(resign(envelope(REVOCATION, payload)), TRUST, expected_type=REVOCATION)
    with pytest.raises(EventMalformed):  # and the plane can never sign one
        sign_event(PLANE, REVOCATION, payload, 5)
    fits = verify_event(resign(envelope(REVOCATION, {**payload, "issued_before": 2**63 - 1})), TRUST)
    apply_revocation(RevocationList(), fits)


@budget(60)
@given(event_type=st.sampled_from(TYPES), value=json_values, member=odd_strings)
def test_any_value_at_an_unknown_or_known_member(event_type: str, value: Any, member: str) -> None:
    payload = {**PAYLOADS[event_type], member: value}
    try:
        raw = resign(envelope(event_type, payload))
    except (ValueError, TypeError, RecursionError):
        return
    event = accept_or_refuse(raw, event_type)
    if event is not None:
        with contextlib.suppress(TenantGuardError):
            _parse_payload(event)


@budget(100)
@given(data=st.data(), event_type=st.sampled_from(TYPES))
def test_broken_canonical_bytes(data: st.DataObject, event_type: str) -> None:
    """Flipped, inserted, deleted bytes; whitespace; non-ASCII; truncation: EventRejected only."""
    raw = bytearray(resign(envelope(event_type, PAYLOADS[event_type])))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw) - 1))
        how = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if how == "flip":
            raw[at] = data.draw(st.integers(0, 255))
        elif how == "insert":
            raw[at:at] = data.draw(st.sampled_from([b" ", b"\n", b"\xff", b"\\ud800", b"1e5", b",", b'"sig":"x",']))
        elif how == "delete":
            del raw[at]
        else:
            del raw[at:]
            break
    accept_or_refuse(bytes(raw))


@budget(20)
@given(depth=st.sampled_from([100, 1_000, 10_000, 200_000]), event_type=st.sampled_from(TYPES),
       kind=st.sampled_from(["list", "object"]))
def test_deep_nesting_signed(depth: int, event_type: str, kind: str) -> None:
    """Nesting no recursive parser survives, inside a genuinely signed payload."""
    body = envelope(event_type, {**PAYLOADS[event_type], "deep": "__deep__"})
    unsigned = _ENCODE(body).replace('"__deep__"', nested(depth, kind=kind)).encode()
    sig = base64.urlsafe_b64encode(PLANE.private_key.sign(SIGNING_PREFIX + unsigned)).rstrip(b"=").decode()
    raw = unsigned[: unsigned.rindex(b',"type"')] + f',"sig":"{sig}"'.encode() + unsigned[unsigned.rindex(b',"type"'):]
    event = accept_or_refuse(raw, event_type)
    if event is not None:
        with contextlib.suppress(TenantGuardError):
            _parse_payload(event)


@budget(60)
@given(raw=st.one_of(st.binary(max_size=300), st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_arbitrary_bytes(raw: bytes) -> None:
    accept_or_refuse(raw)


def test_snapshot_manifest_against_odd_snapshots() -> None:
    """A genuine manifest naming bytes that are not a snapshot: typed refusals only."""
    for snapshot in [b"", b"\n", b"{}\n", b"[" * 5000 + b"\n", b'{"format":1}\n', b"\xff\n", b"x" * 5000]:
        manifest_payload = {"cell": "c0", "count": 0, "size": len(snapshot),
                            "sha256": hashlib.sha256(snapshot).hexdigest()}
        manifest = verify_snapshot_manifest(resign(envelope(RELATIONS_SNAPSHOT, manifest_payload)), TRUST)
        with contextlib.suppress(TenantGuardError):
            manifest.check(snapshot)
