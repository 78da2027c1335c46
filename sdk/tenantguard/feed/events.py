"""The signed event envelope: everything the plane publishes on NATS, signed per message.

A sidecar believes an event only if it verifies against a key the trust set holds for
the plane, so write access to NATS alone cannot grant access to anything. One message
is signed once, whatever it carries (a batch of up to 1,000 relation changes, a trust
update, a revocation, a manifest): one Ed25519 verify costs about 100 us, so signing
per tuple would not scale (see DESIGN.md, "Relationships").

Wire format (version 1): one JSON object, and its bytes must be exactly the canonical
encoding defined below::

    {"issued_at_ms":1767225600000,"kid":"<RFC 7638 thumbprint>","payload":{...},
     "seq":42,"sig":"<base64url, no padding>","type":"relations.batch","v":1}

- ``v``: 1. ``type``: dotted lowercase name (:data:`RELATIONS_BATCH`, ...). ``seq``: the
  publisher's logical sequence for this stream of events, 0 to 2**63-1 (not the
  JetStream stream sequence, which purges and shared streams make differ).
  ``issued_at_ms``: integer milliseconds since the epoch, informational only (lag and
  staleness metrics), never a validity window, because a stream is replayed long after
  it was written. ``kid``: the signing key. ``payload``: a JSON object. Large objects
  (snapshots, bundles) never travel inside an event: a small signed manifest names
  their size and SHA-256 and the bytes travel separately (e.g. in the Object Store).
  No other members are allowed: new members mean a new ``v``.
- Canonical encoding: UTF-8 JSON, object keys sorted by code point, separators ``,``
  and ``:`` with no whitespace, non-ASCII characters written as ``\\uXXXX`` escapes (so
  the bytes are plain ASCII), the escapes Python's ``json`` writes for ``"``, ``\\`` and
  control characters, and numbers integers only. Floats are refused because their
  text differs between languages (Python ``repr``, ES6, Go ``strconv``); times are
  integer milliseconds for that reason. Verification re-encodes what it parsed and
  requires the same bytes, so whitespace, key order, escape spelling, number spelling
  and duplicate keys (which parsers resolve differently: first wins or last wins) are
  all refused: two parsers can never disagree about what was signed.
- Signature: over ``b"tenantguard.event.v1\\n"`` followed by the canonical encoding of
  the object without ``sig``. The prefix separates these signatures from any other the
  same key makes (bundle JWS, tokens). The algorithm is the key's own one (EdDSA by
  default; ES256 as raw ``r||s``, RS256 as PKCS#1 v1.5), taken from the trust set and
  never from the message, so there is no algorithm to confuse. ``sig`` must be the
  canonical base64url of the signature (no padding, no stray trailing bits).

Why the signature sits in the body and not in NATS headers (``Tg-Kid``/``Tg-Sig``): an
event stays one self-contained byte string that can be stored (KV, Object Store, the
sidecar's cold-start cache), forwarded and replayed without a second channel for its
proof, and ``type`` and ``seq`` are covered by construction rather than by a separate
signing-input recipe that has to bind headers to the body. It still reads as JSON in
``nats sub``.

Replay. A genuine event can be re-published by anyone with NATS write access, so
verification alone does not make it current. It is bound to its ``type`` and ``seq``:
the caller passes ``expected_type`` for the subject it consumes (a trust update replayed
on the relations subject is refused with ``event_wrong_type``), and applies an event
only when its ``seq`` is the next one (:class:`~tenantguard.relations.RelationIndex`
already ignores ``seq <= applied`` and raises on gaps; trust and revocation consumers
must keep the same rule). Signature failures are checked before the type, so
``event_wrong_type`` always means "genuine event in the wrong place", not a forgery.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from tenantguard.errors import GRPC_FAILED_PRECONDITION, TenantGuardError
from tenantguard.feed.topology import DEFAULT_CELL
from tenantguard.identity.keys import PrivateKey, PublicKey, SigningKey, TrustedKey, TrustSet
from tenantguard.relations import (
    ChangeBatch,
    ChangeBatchInvalid,
    ChangeBatchTooLarge,
    RelationshipInvalid,
    SnapshotHeader,
    SnapshotInvalid,
    read_header,
    snapshot_digest,
)
from tenantguard.util.jsonlimits import MAX_DEPTH, exceeds_depth

VERSION: Final = 1
SIGNING_PREFIX: Final = b"tenantguard.event.v1\n"
DEFAULT_MAX_BYTES: Final = 1024 * 1024  # nats-server's default max_payload
MAX_INT: Final = 2**63 - 1
MAX_KID_CHARS: Final = 128
MAX_EVENT_DEPTH: Final = MAX_DEPTH  # the deepest event (a relations batch) nests 5 levels
PLANE_ISSUER: Final = "plane"

RELATIONS_BATCH: Final = "relations.batch"
RELATIONS_SNAPSHOT: Final = "relations.snapshot"
TRUST_UPDATE: Final = "trust.update"
REVOCATION: Final = "revocation"
BUNDLE_ANNOUNCE: Final = "bundle.announce"

TYPE_RE: Final = re.compile(r"[a-z][a-z0-9_]{0,31}(?:\.[a-z][a-z0-9_]{0,31}){0,3}")
_SIG_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,1024}")
_MEMBERS: Final = frozenset({"v", "type", "seq", "issued_at_ms", "kid", "payload", "sig"})
_SHA256_RE: Final = re.compile(r"[0-9a-f]{64}")
_ENCODER: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
_UTF8_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


# --------------------------------------------------------------------------- errors


class EventRejected(TenantGuardError):
    """An event cannot be believed; drop it, alarm, and keep the last good state."""

    code = "event_rejected"
    http_status = 422
    grpc_status = GRPC_FAILED_PRECONDITION


class EventUnsigned(EventRejected):
    code = "event_unsigned"


class EventSignatureInvalid(EventRejected):
    code = "event_signature_invalid"


class EventUnknownKey(EventRejected):
    """The ``kid`` is not in the trust set, is trusted for another issuer, or has expired."""

    code = "event_unknown_key"


class EventMalformed(EventRejected):
    """Not a canonical version-1 envelope, or a verified payload that does not parse."""

    code = "event_malformed"


class EventTooLarge(EventRejected):
    code = "event_too_large"
    http_status = 413


class EventWrongType(EventRejected):
    """A genuine event consumed where another type was expected (misrouted or replayed)."""

    code = "event_wrong_type"


class EventWrongCell(EventRejected):
    """A genuine relations batch or snapshot manifest of one tenant cell read on another cell's
    subject (misrouted or replayed): every cell has its own sequence, so it must never apply."""

    code = "event_wrong_cell"


class EventDigestMismatch(EventRejected):
    """Bytes carried beside a signed manifest are not the bytes the manifest names."""

    code = "event_digest_mismatch"


# --------------------------------------------------------------------------- model


@dataclass(frozen=True, slots=True)
class Event:
    """A verified event. ``issuer`` is the trust-set issuer of the key that signed it."""

    type: str
    seq: int
    issued_at: float  # seconds since the epoch; milliseconds on the wire
    kid: str
    issuer: str
    payload: dict[str, Any]


# --------------------------------------------------------------------------- sign


def sign_event(
    key: SigningKey,
    event_type: str,
    payload: Mapping[str, Any],
    seq: int,
    *,
    now: float | None = None,
) -> bytes:
    """Encode and sign one event; the result is the exact bytes to publish.

    Raises :class:`EventMalformed` for content that has no canonical encoding (floats,
    NaN, non-JSON types, non-string keys), so the plane can never emit an event that a
    sidecar would refuse.
    """
    _check_type(event_type)
    _check_int("seq", seq)
    issued_ms = int((time.time() if now is None else now) * 1000)
    _check_int("issued_at_ms", issued_ms)
    body = {"v": VERSION, "type": event_type, "seq": seq, "issued_at_ms": issued_ms, "kid": key.kid}
    body["payload"] = _canonical_payload(payload)
    unsigned = _encode(body)
    sig = _b64(_sign(key.private_key, SIGNING_PREFIX + unsigned))
    return _encode({**body, "sig": sig})


def _canonical_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The payload as the verifier will parse it; refuse what cannot round-trip exactly."""
    if not isinstance(payload, Mapping):
        raise EventMalformed("payload must be a JSON object (a mapping)")
    text = _encode(dict(payload))
    parsed = _parse(text, MAX_EVENT_DEPTH - 1)  # the envelope adds one level
    if _encode(parsed) != text:  # e.g. keys 1 and "1" in one mapping
        raise EventMalformed("payload has no canonical JSON encoding (non-string keys?)")
    _refuse_lone_surrogates(text, parsed)
    return parsed


def _encode(value: Any) -> bytes:
    try:
        return _ENCODER.encode(value).encode("ascii")
    except (TypeError, ValueError, RecursionError) as exc:
        raise EventMalformed(f"not encodable as canonical JSON: {exc}") from None


def _sign(private: PrivateKey, message: bytes) -> bytes:
    if isinstance(private, ed25519.Ed25519PrivateKey):
        return private.sign(message)
    if isinstance(private, ec.EllipticCurvePrivateKey):
        r, s = decode_dss_signature(private.sign(message, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return private.sign(message, padding.PKCS1v15(), hashes.SHA256())


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


# --------------------------------------------------------------------------- verify


def verify_event(
    data: bytes,
    trust: TrustSet,
    *,
    issuer: str = PLANE_ISSUER,
    expected_type: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    now: float | None = None,
) -> Event:
    """Parse and verify one event; raise an :class:`EventRejected` subclass otherwise.

    Only the key named by ``kid`` is tried, only if the trust set holds it for
    ``issuer`` and it has not expired, and only with that key's own algorithm.
    """
    data = _as_bytes(data)
    body = _parse_envelope(data, max_bytes)
    event_type, seq, issued_ms, kid, sig = _fields(body)
    trusted = _trusted_key(trust, kid, issuer, time.time() if now is None else now)
    message = SIGNING_PREFIX + _unsigned_bytes(data, sig, event_type)
    if not _verify(trusted, sig, message):
        raise EventSignatureInvalid(f"signature does not verify with key {kid}", kid=kid)
    if expected_type is not None and event_type != expected_type:
        raise EventWrongType(
            f"expected a {expected_type!r} event, got {event_type!r}", expected=expected_type, got=event_type
        )
    return Event(event_type, seq, issued_ms / 1000, kid, trusted.issuer, body["payload"])


def _parse_envelope(data: bytes, max_bytes: int) -> dict[str, Any]:
    """Bounded, strict parse: size first, then JSON, then canonical bytes."""
    if len(data) > max_bytes:
        raise EventTooLarge(f"event is {len(data)} bytes, limit {max_bytes}", limit=max_bytes)
    body = _parse(data)
    if not isinstance(body, dict):
        raise EventMalformed("an event is a JSON object")
    if not body.get("sig"):
        raise EventUnsigned("event carries no signature")
    if body.keys() != _MEMBERS:
        _malformed_members(body)
    if _encode(body) != data:
        raise EventMalformed("event is not canonical JSON (whitespace, key order, escapes or duplicate keys)")
    _refuse_lone_surrogates(data, body)
    return body


def _as_bytes(data: bytes) -> bytes:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise EventMalformed("an event is bytes")
    return bytes(data)


def _parse(data: bytes, max_depth: int = MAX_EVENT_DEPTH) -> Any:
    """JSON of bounded depth, integers only; any failure is :class:`EventMalformed`.

    Depth is bounded before ``json.loads`` (which recurses per level): a deep event is a
    typed rejection, never a ``RecursionError`` here or in what walks the payload later.
    """
    if exceeds_depth(data, max_depth):
        raise EventMalformed(f"event nests deeper than {MAX_EVENT_DEPTH} levels", limit=MAX_EVENT_DEPTH)
    try:
        return json.loads(data.decode("ascii"), parse_float=_refuse_float, parse_constant=_refuse_float,
                          parse_int=_bounded_int)
    except UnicodeDecodeError:
        raise EventMalformed("canonical events are ASCII (non-ASCII is written as \\u escapes)") from None
    except (ValueError, RecursionError) as exc:
        raise EventMalformed(f"not JSON: {str(exc)[:120]}") from None


def _refuse_lone_surrogates(text: bytes, value: Any) -> None:
    """Refuse escapes like ``\\ud800`` that decode to no character (RFC 7493, I-JSON).

    Parsers disagree about them (Python keeps them, Go writes U+FFFD), so two distinct
    keys could become one. Only text holding a ``\\ud`` escape needs the full check.
    """
    if b"\\ud" not in text:
        return
    try:
        _UTF8_ENCODER.encode(value).encode("utf-8")
    except UnicodeEncodeError:
        raise EventMalformed("a string holds a lone UTF-16 surrogate") from None


def _bounded_int(token: str) -> int:
    """Integers within +-(2**63 - 1), the envelope's own bound, anywhere in an event: a larger
    one has no meaning here and breaks conversions (``float()`` of it raises OverflowError)."""
    value = int(token) if len(token) <= 20 else None  # 20: a sign and 19 digits
    if value is None or not -MAX_INT <= value <= MAX_INT:
        raise ValueError(f"integer {token[:24]} is beyond +-(2**63 - 1)")
    return value


def _refuse_float(token: str) -> NoReturn:
    raise ValueError(f"number {token[:40]} is not an integer; canonical events carry integers only")


def _malformed_members(body: Mapping[str, Any]) -> NoReturn:
    missing = sorted(_MEMBERS - body.keys())
    unknown = sorted(body.keys() - _MEMBERS)
    raise EventMalformed(f"envelope members wrong: missing {missing}, unknown {unknown[:5]}")


def _fields(body: Mapping[str, Any]) -> tuple[str, int, int, str, str]:
    if body["v"] != VERSION or isinstance(body["v"], bool):
        raise EventMalformed(f"envelope version {body['v']!r:.20} is not supported")
    if not isinstance(body["payload"], dict):
        raise EventMalformed("payload must be a JSON object")
    kid, sig = body["kid"], body["sig"]
    if not isinstance(kid, str) or not 0 < len(kid) <= MAX_KID_CHARS:
        raise EventMalformed(f"kid must be a string of 1-{MAX_KID_CHARS} characters")
    if not isinstance(sig, str) or _SIG_RE.fullmatch(sig) is None:
        raise EventMalformed("sig must be base64url without padding")
    seq, issued_ms = _check_int("seq", body["seq"]), _check_int("issued_at_ms", body["issued_at_ms"])
    return _check_type(body["type"]), seq, issued_ms, kid, sig


def _check_type(value: object) -> str:
    if not isinstance(value, str) or TYPE_RE.fullmatch(value) is None:
        raise EventMalformed(f"type {value!r:.60} must be a dotted lowercase name like 'relations.batch'")
    return value


def _check_int(field: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_INT:
        raise EventMalformed(f"{field} must be an integer from 0 to 2**63-1")
    return value


def _trusted_key(trust: TrustSet, kid: str, issuer: str, now: float) -> TrustedKey:
    key = trust.get(kid)
    if key is None:
        raise EventUnknownKey(f"key {kid!r:.60} is not trusted", kid=kid[:MAX_KID_CHARS])
    if key.issuer != issuer:
        raise EventUnknownKey(
            f"key {kid} is trusted for issuer {key.issuer!r}, not {issuer!r}", kid=kid, issuer=key.issuer
        )
    if not key.is_current(now):
        raise EventUnknownKey(f"key {kid} expired", kid=kid)
    return key


def _unsigned_bytes(data: bytes, sig: str, event_type: str) -> bytes:
    """The canonical encoding without ``sig``, cut from the (already canonical) input.

    Members sort as issued_at_ms, kid, payload, seq, sig, type, v, and ``sig``, ``type``
    and ``v`` hold no characters that need escaping, so canonical input always ends with
    exactly this tail; removing the ``sig`` member from it yields the encoding of the
    object without ``sig`` (a test checks this against a full re-encoding).
    """
    rest = f',"type":"{event_type}","v":{VERSION}}}'.encode()
    tail = f',"sig":"{sig}"'.encode() + rest
    if not data.endswith(tail):
        raise EventMalformed("event is not canonical JSON")
    return data[: len(data) - len(tail)] + rest


def _verify(key: TrustedKey, sig: str, message: bytes) -> bool:
    raw = _unb64(sig)
    try:
        _verify_raw(key.public_key, raw, message)
    except InvalidSignature:
        return False
    return True


def _unb64(sig: str) -> bytes:
    """Decode, and insist on the one canonical spelling (no malleable trailing bits)."""
    try:
        raw = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
    except (binascii.Error, ValueError):
        raise EventMalformed("sig is not base64url") from None
    if _b64(raw) != sig:
        raise EventMalformed("sig is not canonical base64url")
    return raw


def _verify_raw(public: PublicKey, raw: bytes, message: bytes) -> None:
    if isinstance(public, ed25519.Ed25519PublicKey):
        public.verify(raw, message)
    elif isinstance(public, ec.EllipticCurvePublicKey):
        if len(raw) != 64:
            raise InvalidSignature
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public.verify(der, message, ec.ECDSA(hashes.SHA256()))
    elif isinstance(public, rsa.RSAPublicKey):
        public.verify(raw, message, padding.PKCS1v15(), hashes.SHA256())
    else:  # keys.algorithm_for admits nothing else into a trust set
        raise InvalidSignature


# --------------------------------------------------------------------------- relations batches


def sign_batch(key: SigningKey, batch: ChangeBatch, *, cell: str = DEFAULT_CELL, now: float | None = None,
               keys: Sequence[Sequence[str]] = ()) -> bytes:
    """Sign a relations batch of ``cell``; the envelope ``seq`` is the batch sequence (stated once),
    the payload names the cell, so a batch replayed onto another cell's subject is refused.

    ``keys``: the plane's idempotency records for the writes the batch carries, one
    ``[key hash, changes digest]`` pair per write that had an ``Idempotency-Key``, in the
    payload member ``keys`` (absent when there are none). Readers other than the plane
    ignore it; the plane's replicas rebuild their "key already committed" window from it.
    """
    payload: dict[str, Any] = {"cell": cell, "changes": batch.to_wire()["changes"]}
    if keys:
        payload["keys"] = [list(pair) for pair in keys]
    if not _plain_batch_extras(cell, keys):
        return sign_event(key, RELATIONS_BATCH, payload, batch.seq, now=now)  # which refuses what it cannot sign
    # The changes are validated tuples (a narrow ASCII grammar), the cell and keys plain tokens: the
    # payload is canonical as built, so the round trip ``sign_event`` makes to prove it is skipped, and
    # the signed bytes are made by one encoding (tests check they equal ``sign_event``'s, byte for byte).
    issued_ms = _check_int("issued_at_ms", int((time.time() if now is None else now) * 1000))
    body = {"v": VERSION, "type": RELATIONS_BATCH, "seq": _check_int("seq", batch.seq), "issued_at_ms": issued_ms,
            "kid": key.kid, "payload": payload}
    unsigned = _encode(body)
    sig = _b64(_sign(key.private_key, SIGNING_PREFIX + unsigned))
    return unsigned[: len(unsigned) - len(_BATCH_TAIL)] + f',"sig":"{sig}"'.encode() + _BATCH_TAIL


# What ends the canonical encoding of a batch: members sort as issued_at_ms, kid, payload, seq,
# sig, type, v (the inverse of ``_unsigned_bytes``).
_BATCH_TAIL: Final = f',"type":"{RELATIONS_BATCH}","v":{VERSION}}}'.encode()
_PLAIN_TOKEN: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _plain_batch_extras(cell: object, keys: Sequence[Sequence[str]]) -> bool:
    """True when ``cell`` and every key pair are short plain ASCII tokens (what the plane passes)."""
    if type(cell) is not str or _PLAIN_TOKEN.fullmatch(cell) is None:
        return False
    for pair in keys:
        if len(pair) != 2 or any(type(x) is not str or _PLAIN_TOKEN.fullmatch(x) is None for x in pair):
            return False
    return True


def verify_batch(
    data: bytes,
    trust: TrustSet,
    *,
    cell: str | None = None,
    issuer: str = PLANE_ISSUER,
    max_bytes: int = DEFAULT_MAX_BYTES,
    now: float | None = None,
) -> ChangeBatch:
    """Verify a ``relations.batch`` event and return the batch it carries; with ``cell``, the
    batch must be signed for that cell (:class:`EventWrongCell` otherwise)."""
    event = verify_event(data, trust, issuer=issuer, expected_type=RELATIONS_BATCH, max_bytes=max_bytes, now=now)
    return batch_from_event(event, cell=cell)


def batch_from_event(event: Event, *, cell: str | None = None) -> ChangeBatch:
    """The batch in a verified event (for callers that also want ``issued_at``); with ``cell``,
    refuse a batch signed for another cell (or for none)."""
    if event.type != RELATIONS_BATCH:
        raise EventWrongType(f"expected a {RELATIONS_BATCH!r} event, got {event.type!r}")
    check_cell(event, cell)
    try:
        return ChangeBatch.from_wire({"seq": event.seq, "changes": event.payload.get("changes")})
    except (ChangeBatchInvalid, ChangeBatchTooLarge, RelationshipInvalid) as exc:
        raise EventMalformed(f"signed batch {event.seq} does not parse: {exc.message}", cause=exc.code) from exc


def check_cell(event: Event, cell: str | None) -> None:
    """Refuse a verified relations event signed for another cell than ``cell`` (None: any)."""
    if cell is None:
        return
    signed = event.payload.get("cell")
    if signed != cell:
        raise EventWrongCell(f"{event.type} {event.seq} is signed for cell {str(signed)[:16]!r}, read on {cell!r}",
                             expected=cell, got=str(signed)[:16])


# --------------------------------------------------------------------------- relations snapshots


@dataclass(frozen=True, slots=True)
class SnapshotManifest:
    """What the plane signed about a snapshot; the bytes themselves travel separately.

    ``size`` lets the downloader bound its read before fetching anything.
    """

    seq: int
    count: int
    size: int
    sha256: str
    issued_at: float
    kid: str
    cell: str = DEFAULT_CELL

    def check(self, snapshot: bytes) -> SnapshotHeader:
        """Refuse ``snapshot`` unless it is exactly the object this manifest names.

        On success, load it with :func:`tenantguard.relations.index_from_snapshot_bytes`.
        """
        if len(snapshot) != self.size:
            raise EventDigestMismatch(f"snapshot is {len(snapshot)} bytes, manifest says {self.size}")
        if snapshot_digest(snapshot) != self.sha256:
            raise EventDigestMismatch(f"snapshot SHA-256 does not match the signed manifest (seq {self.seq})")
        try:
            header = read_header(snapshot)
        except SnapshotInvalid as exc:
            raise EventMalformed(f"signed snapshot is invalid: {exc.message}", cause=exc.code) from exc
        if (header.seq, header.count) != (self.seq, self.count):
            raise EventMalformed("snapshot header disagrees with its signed manifest about seq or count")
        return header


def sign_snapshot_manifest(key: SigningKey, snapshot: bytes, *, cell: str = DEFAULT_CELL,
                           now: float | None = None) -> bytes:
    """Sign ``{cell, count, size, sha256}`` of a snapshot of ``cell`` (SHA-256 over the whole object)."""
    try:
        header = read_header(snapshot)
    except SnapshotInvalid as exc:
        raise EventMalformed(f"refusing to sign an invalid snapshot: {exc.message}") from exc
    payload = {"cell": cell, "count": header.count, "size": len(snapshot), "sha256": snapshot_digest(snapshot)}
    return sign_event(key, RELATIONS_SNAPSHOT, payload, header.seq, now=now)


def verify_snapshot_manifest(
    data: bytes,
    trust: TrustSet,
    *,
    cell: str | None = None,
    issuer: str = PLANE_ISSUER,
    now: float | None = None,
) -> SnapshotManifest:
    """Verify a ``relations.snapshot`` manifest (of ``cell``, when given: :class:`EventWrongCell`
    otherwise); then call :meth:`SnapshotManifest.check`."""
    event = verify_event(data, trust, issuer=issuer, expected_type=RELATIONS_SNAPSHOT, now=now)
    check_cell(event, cell)
    payload = event.payload
    count, size, digest = payload.get("count"), payload.get("size"), payload.get("sha256")
    for name, value in (("count", count), ("size", size)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise EventMalformed(f"snapshot manifest {name} must be a non-negative integer")
    if not isinstance(digest, str) or _SHA256_RE.fullmatch(digest) is None:
        raise EventMalformed("snapshot manifest sha256 must be 64 lowercase hex digits")
    signed_cell = payload.get("cell")
    if not isinstance(signed_cell, str):
        raise EventMalformed("snapshot manifest names no cell")
    return SnapshotManifest(event.seq, count, size, digest, event.issued_at, event.kid,  # type: ignore[arg-type]
                            signed_cell)
