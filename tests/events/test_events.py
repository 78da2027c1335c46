"""The signed event envelope: round trip, every tampering, strict canonical parsing."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tenantguard.feed.events import (
    DEFAULT_MAX_BYTES,
    MAX_EVENT_DEPTH,
    RELATIONS_BATCH,
    REVOCATION,
    SIGNING_PREFIX,
    TRUST_UPDATE,
    Event,
    EventMalformed,
    EventRejected,
    EventSignatureInvalid,
    EventTooLarge,
    EventUnknownKey,
    EventUnsigned,
    EventWrongType,
    sign_event,
    verify_event,
)
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet

from .conftest import SIDECAR_ISSUER

NOW = 1767225600.0
PAYLOAD = {"kids": ["k1", "k2"], "tenant": "acme", "nested": {"n": 3, "ok": True, "none": None}}


def encode(obj: Any) -> bytes:
    """The canonical encoding, written out independently of the module under test."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def resign_free(data: bytes, **changes: Any) -> bytes:
    """Change members of a signed event but keep its signature: what a tamperer can do."""
    obj = json.loads(data)
    obj.update(changes)
    return encode(obj)


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("alg", ["EdDSA", "ES256", "RS256"])
def test_round_trip_with_each_algorithm(alg: str) -> None:
    key = SigningKey.generate(alg)
    trust = TrustSet([TrustedKey.of(key.public_key, "plane")])
    data = sign_event(key, TRUST_UPDATE, PAYLOAD, 7, now=NOW)
    event = verify_event(data, trust, expected_type=TRUST_UPDATE)
    assert event == Event(TRUST_UPDATE, 7, NOW, key.kid, "plane", PAYLOAD)


def test_golden_vector_pins_the_wire_format() -> None:
    """Ed25519 is deterministic: a fixed key gives fixed bytes another implementation can test against."""
    key = SigningKey.from_private_key(ed25519.Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
    data = sign_event(key, REVOCATION, {"jti": "t-1", "until": 1767225900}, 42, now=NOW + 0.25)
    body = {
        "issued_at_ms": 1767225600250,
        "kid": key.kid,
        "payload": {"jti": "t-1", "until": 1767225900},
        "seq": 42,
        "type": "revocation",
        "v": 1,
    }
    sig = key.private_key.sign(SIGNING_PREFIX + encode(body))
    assert data == encode({**body, "sig": b64(sig)})
    assert data.startswith(b'{"issued_at_ms":1767225600250,"kid":"')


def test_signature_covers_canonical_envelope_without_sig(plane_key: SigningKey) -> None:
    data = sign_event(plane_key, RELATIONS_BATCH, PAYLOAD, 3, now=NOW)
    obj = json.loads(data)
    sig = base64.urlsafe_b64decode(obj.pop("sig") + "==")
    plane_key.public_key.verify(sig, SIGNING_PREFIX + encode(obj))


def test_non_ascii_is_escaped_and_round_trips(plane_key: SigningKey, trust: TrustSet) -> None:
    payload = {"name": "Zoë ☃ \U0001f600", "ctl": "a\nb\x00"}
    data = sign_event(plane_key, TRUST_UPDATE, payload, 1, now=NOW)
    assert data.isascii()
    assert verify_event(data, trust).payload == payload


def test_issued_at_defaults_to_now(plane_key: SigningKey, trust: TrustSet) -> None:
    import time

    before = time.time()
    event = verify_event(sign_event(plane_key, TRUST_UPDATE, {}, 1), trust)
    assert before - 0.001 <= event.issued_at <= time.time()


# --------------------------------------------------------------------------- tampering


@pytest.fixture
def genuine(plane_key: SigningKey) -> bytes:
    return sign_event(plane_key, TRUST_UPDATE, PAYLOAD, 5, now=NOW)


@pytest.mark.parametrize(
    "changes",
    [
        {"payload": {**PAYLOAD, "tenant": "globex"}},
        {"payload": {}},
        {"type": REVOCATION},
        {"seq": 6},
        {"seq": 4},
        {"issued_at_ms": int(NOW * 1000) + 1},
    ],
    ids=["payload", "empty-payload", "type", "seq-up", "seq-down", "issued_at"],
)
def test_tampering_with_any_member_breaks_the_signature(genuine: bytes, trust: TrustSet, changes: Any) -> None:
    with pytest.raises(EventSignatureInvalid) as caught:
        verify_event(resign_free(genuine, **changes), trust)
    assert caught.value.code == "event_signature_invalid"


def test_swapped_kid_is_refused(genuine: bytes, trust: TrustSet, other_plane_key: SigningKey) -> None:
    """The named key is the only one tried: the signature does not verify under the other plane key."""
    with pytest.raises(EventSignatureInvalid):
        verify_event(resign_free(genuine, kid=other_plane_key.kid), trust)


def test_signature_from_an_untrusted_key_is_refused(attacker_key: SigningKey, trust: TrustSet) -> None:
    forged = sign_event(attacker_key, TRUST_UPDATE, PAYLOAD, 5, now=NOW)
    with pytest.raises(EventUnknownKey) as caught:
        verify_event(forged, trust)
    assert caught.value.code == "event_unknown_key"


def test_forgery_claiming_the_plane_kid_is_refused(
    attacker_key: SigningKey, plane_key: SigningKey, trust: TrustSet
) -> None:
    forged = sign_event(attacker_key, TRUST_UPDATE, PAYLOAD, 5, now=NOW)
    with pytest.raises(EventSignatureInvalid):
        verify_event(resign_free(forged, kid=plane_key.kid), trust)


def test_a_key_trusted_for_another_issuer_is_refused(sidecar_key: SigningKey, trust: TrustSet) -> None:
    data = sign_event(sidecar_key, TRUST_UPDATE, PAYLOAD, 5, now=NOW)
    with pytest.raises(EventUnknownKey, match=SIDECAR_ISSUER):
        verify_event(data, trust)
    assert verify_event(data, trust, issuer=SIDECAR_ISSUER).issuer == SIDECAR_ISSUER


def test_an_expired_key_is_refused(plane_key: SigningKey) -> None:
    trust = TrustSet([TrustedKey.of(plane_key.public_key, "plane", not_after=NOW + 60)])
    data = sign_event(plane_key, TRUST_UPDATE, PAYLOAD, 5, now=NOW)
    assert verify_event(data, trust, now=NOW + 59).seq == 5
    with pytest.raises(EventUnknownKey, match="expired"):
        verify_event(data, trust, now=NOW + 60)


def test_a_removed_key_is_refused(genuine: bytes, trust: TrustSet, plane_key: SigningKey) -> None:
    trust.remove(plane_key.kid)
    with pytest.raises(EventUnknownKey):
        verify_event(genuine, trust)


def test_wrong_type_is_refused_only_after_the_signature_checks(
    genuine: bytes, trust: TrustSet, attacker_key: SigningKey
) -> None:
    with pytest.raises(EventWrongType) as caught:
        verify_event(genuine, trust, expected_type=RELATIONS_BATCH)
    assert caught.value.detail == {"expected": RELATIONS_BATCH, "got": TRUST_UPDATE}
    forged = sign_event(attacker_key, TRUST_UPDATE, PAYLOAD, 5, now=NOW)
    with pytest.raises(EventUnknownKey):  # a forgery is reported as one, whatever its type
        verify_event(forged, trust, expected_type=RELATIONS_BATCH)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_single_byte_change_is_refused(genuine: bytes, trust: TrustSet, data: st.DataObject) -> None:
    position = data.draw(st.integers(0, len(genuine) - 1))
    replacement = data.draw(st.integers(0, 255).filter(lambda b: b != genuine[position]))
    mutated = genuine[:position] + bytes([replacement]) + genuine[position + 1 :]
    with pytest.raises(EventRejected):
        verify_event(mutated, trust)


# --------------------------------------------------------------------------- bad input


def test_unsigned_event_is_refused(plane_key: SigningKey, genuine: bytes, trust: TrustSet) -> None:
    obj = json.loads(genuine)
    del obj["sig"]
    with pytest.raises(EventUnsigned) as caught:
        verify_event(encode(obj), trust)
    assert caught.value.code == "event_unsigned"
    with pytest.raises(EventUnsigned):
        verify_event(resign_free(genuine, sig=""), trust)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\xff\xfe",
        b"not json",
        b"[1,2,3]",
        b'"sig"',
        '{"sig":"é"}'.encode(),
        b"[" * 100_000 + b"]" * 100_000,
        b'{"sig":"AA","v":1.5}',
        b'{"sig":"AA","v":NaN}',
        b'{"sig":"AA","v":1e400}',
        b'{"sig":"AA","v":' + b"9" * 5000 + b"}",
    ],
    ids=["empty", "binary", "text", "array", "string", "utf8", "deep", "float", "nan", "huge-float", "huge-int"],
)
def test_garbage_is_malformed(data: bytes, trust: TrustSet) -> None:
    with pytest.raises(EventMalformed) as caught:
        verify_event(data, trust, max_bytes=len(data) + 1)
    assert caught.value.code == "event_malformed"


def test_not_bytes_is_malformed(genuine: bytes, trust: TrustSet) -> None:
    with pytest.raises(EventMalformed):
        verify_event(genuine.decode(), trust)
    assert verify_event(memoryview(genuine), trust).seq == 5


def test_oversized_input_is_refused_before_parsing(trust: TrustSet) -> None:
    with pytest.raises(EventTooLarge) as caught:
        verify_event(b"{" * (DEFAULT_MAX_BYTES + 1), trust)
    assert caught.value.code == "event_too_large" and caught.value.http_status == 413
    with pytest.raises(EventTooLarge):
        verify_event(b"x" * 101, trust, max_bytes=100)


def _spliced(genuine: bytes, old: bytes, new: bytes) -> bytes:
    assert genuine.count(old) == 1
    return genuine.replace(old, new)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda g: g.replace(b",", b", "),
        lambda g: g + b"\n",
        lambda g: b" " + g,
        lambda g: json.dumps(dict(reversed(json.loads(g).items())), separators=(",", ":")).encode(),
        lambda g: _spliced(g, b'"tenant":"acme"', b'"tenant":"\\u0061cme"'),  # escape spelled differently
        lambda g: _spliced(g, b'"n":3', b'"n":3.0'),
        lambda g: _spliced(g, b'"n":3', b'"n":03'),
        lambda g: _spliced(g, b'"n":3', b'"n":3e0'),
    ],
    ids=["spaces", "newline", "leading-space", "unsorted", "escape", "float", "leading-zero", "exponent"],
)
def test_non_canonical_encodings_are_refused(genuine: bytes, trust: TrustSet, mutate: Any) -> None:
    with pytest.raises(EventMalformed):
        verify_event(mutate(genuine), trust)


def test_duplicate_keys_are_refused(genuine: bytes, trust: TrustSet) -> None:
    """First-wins and last-wins parsers would read different sequences: refuse both readings."""
    first = _spliced(genuine, b'{"issued_at_ms"', b'{"issued_at_ms":1,"issued_at_ms"')
    with pytest.raises(EventMalformed, match="canonical"):
        verify_event(first, trust)
    inner = _spliced(genuine, b'"tenant":"acme"', b'"tenant":"acme","tenant":"globex"')
    with pytest.raises(EventMalformed, match="canonical"):
        verify_event(inner, trust)


def test_non_canonical_base64_signature_is_refused(genuine: bytes, trust: TrustSet) -> None:
    """A 64-byte signature leaves spare bits in the last character; other spellings must not pass."""
    sig = json.loads(genuine)["sig"]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    twin = sig[:-1] + alphabet[alphabet.index(sig[-1]) ^ 1]
    assert base64.urlsafe_b64decode(twin + "==") == base64.urlsafe_b64decode(sig + "==")
    with pytest.raises(EventMalformed, match="canonical base64url"):
        verify_event(resign_free(genuine, sig=twin), trust)
    for bad in (sig + "=", sig[:-1] + "+", 12):
        with pytest.raises(EventMalformed):
            verify_event(resign_free(genuine, sig=bad), trust)


@pytest.mark.parametrize(
    "changes",
    [
        {"v": 2},
        {"v": True},
        {"v": "1"},
        {"extra": 1},
        {"payload": [1]},
        {"payload": "x"},
        {"seq": -1},
        {"seq": 2**63},
        {"seq": "5"},
        {"seq": True},
        {"issued_at_ms": -5},
        {"type": "Relations.Batch"},
        {"type": "relations..batch"},
        {"type": ""},
        {"kid": ""},
        {"kid": 5},
        {"kid": "k" * 129},
    ],
)
def test_bad_members_are_malformed(genuine: bytes, trust: TrustSet, changes: Any) -> None:
    with pytest.raises(EventMalformed):
        verify_event(resign_free(genuine, **changes), trust)


def test_missing_member_is_malformed(genuine: bytes, trust: TrustSet) -> None:
    obj = json.loads(genuine)
    del obj["issued_at_ms"]
    with pytest.raises(EventMalformed, match="missing"):
        verify_event(encode(obj), trust)


def test_errors_carry_codes_and_transport_mapping() -> None:
    for cls, code in [
        (EventUnsigned, "event_unsigned"),
        (EventSignatureInvalid, "event_signature_invalid"),
        (EventUnknownKey, "event_unknown_key"),
        (EventMalformed, "event_malformed"),
        (EventTooLarge, "event_too_large"),
        (EventWrongType, "event_wrong_type"),
    ]:
        assert issubclass(cls, EventRejected) and cls.code == code
        assert cls("x").to_dict()["error"] == code
    assert EventRejected.http_status == 422 and not EventRejected.retryable


# --------------------------------------------------------------------------- signing side


@pytest.mark.parametrize(
    "payload",
    [
        {"x": 1.5},
        {"x": float("nan")},
        {"x": {1, 2}},
        {"x": b"bytes"},
        {1: "a", "1": "b"},
        {"x": "\ud800"},
    ],
    ids=["float", "nan", "set", "bytes", "colliding-keys", "lone-surrogate"],
)
def test_sign_refuses_content_without_a_canonical_encoding(plane_key: SigningKey, payload: Any) -> None:
    with pytest.raises(EventMalformed):
        sign_event(plane_key, TRUST_UPDATE, payload, 1, now=NOW)


def test_sign_refuses_bad_envelope_fields(plane_key: SigningKey) -> None:
    with pytest.raises(EventMalformed):
        sign_event(plane_key, "Bad Type", {}, 1)
    with pytest.raises(EventMalformed):
        sign_event(plane_key, TRUST_UPDATE, {}, -1)
    with pytest.raises(EventMalformed):
        sign_event(plane_key, TRUST_UPDATE, [1, 2], 1)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.dictionaries(st.text(max_size=8), json_values, max_size=5), seq=st.integers(0, 2**63 - 1))
def test_any_json_payload_round_trips(
    plane_key: SigningKey, trust: TrustSet, payload: dict[str, Any], seq: int
) -> None:
    if _has_surrogate(payload):
        with pytest.raises(EventMalformed, match="surrogate"):
            sign_event(plane_key, TRUST_UPDATE, payload, seq, now=NOW)
        return
    if _has_int_beyond(payload, 2**63 - 1):
        with pytest.raises(EventMalformed, match="2\\*\\*63"):
            sign_event(plane_key, TRUST_UPDATE, payload, seq, now=NOW)
        return
    data = sign_event(plane_key, TRUST_UPDATE, payload, seq, now=NOW)
    event = verify_event(data, trust)
    assert (event.payload, event.seq) == (payload, seq)


def _has_int_beyond(value: Any, bound: int) -> bool:
    if isinstance(value, dict):
        return any(_has_int_beyond(v, bound) for v in value.values())
    if isinstance(value, list):
        return any(_has_int_beyond(v, bound) for v in value)
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > bound


def _has_surrogate(value: Any) -> bool:
    text = json.dumps(value, ensure_ascii=False)
    return any("\ud800" <= c <= "\udfff" for c in text)


def test_lone_surrogate_escapes_are_refused(genuine: bytes, trust: TrustSet) -> None:
    """Python keeps ``\\ud800``, Go reads U+FFFD: two keys could collapse into one."""
    tampered = resign_free(genuine, payload={chr(0xD800): 1, chr(0xD801): 2})
    assert b"\\ud800" in tampered
    with pytest.raises(EventMalformed, match="surrogate"):
        verify_event(tampered, trust)


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("levels", [MAX_EVENT_DEPTH + 1, 990, 5000, 100_000])
def test_deep_events_are_typed_rejections(genuine: bytes, trust: TrustSet, levels: int) -> None:
    """Nested past the bound, signed or not: EventMalformed before json.loads recurses.

    Byte-built (json.dumps itself would recurse); 990 levels stays under Python's
    recursion limit, so only the explicit bound refuses it."""
    payload = b"[" * levels + b"1" + b"]" * levels
    data = genuine.replace(b'"payload":', b'"payload":{"x":' + payload + b"},", 1)
    with pytest.raises(EventMalformed, match="deeper than"):
        verify_event(data, trust)
    with pytest.raises(EventMalformed, match="deeper than"):
        verify_event(b"[" * levels + b"]" * levels, trust)


def test_payloads_up_to_the_bound_sign_and_verify(plane_key: SigningKey, trust: TrustSet) -> None:
    fits = {"x": _nested(MAX_EVENT_DEPTH - 3)}  # envelope, payload, x's array: MAX_EVENT_DEPTH - 1 + 1
    assert verify_event(sign_event(plane_key, TRUST_UPDATE, fits, 1, now=NOW), trust).payload == fits
    with pytest.raises(EventMalformed, match="deeper than"):
        sign_event(plane_key, TRUST_UPDATE, {"x": _nested(MAX_EVENT_DEPTH - 1)}, 1, now=NOW)
