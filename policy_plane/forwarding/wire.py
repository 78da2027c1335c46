"""The authenticated messages replicas exchange to hand relation writes to their cell's writer.

A request carries the writes one replica queued for a cell, each with the hashes of its
``Idempotency-Key`` exactly as the local group commit takes them; the answer carries one
outcome per write, in order, or a refusal of the whole request (nothing of it was queued,
so the sender may commit it itself).

A forwarded request becomes a signed batch, so anyone who could put one on NATS could have
the plane sign writes: every message carries an HMAC-SHA256 under a key only the replicas
can derive (:mod:`..replicamac`). A MAC, not the event signature: an Ed25519 signature made
and checked four times per forwarded group measured slower than the replicas racing.

Wire: 32 bytes of MAC, then the JSON body it covers (``type``, ``n``: the sender's request
number, ``sent_ms``: its clock, ``from``/``to``/``epoch``, and the content). The receiver
checks freshness and numbering (:mod:`.receiver`); the sender checks that an answer is for
the request it sent, from the replica it sent it to.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tenantguard.errors import TenantGuardError, Unavailable
from tenantguard.events import EventMalformed, EventSignatureInvalid
from tenantguard.keys import SigningKey
from tenantguard.relations import MAX_BATCH_CHANGES, RelationChange
from tenantguard.relations.errors import ChangeBatchInvalid, RelationshipInvalid
from tenantguard.topology import PLANE_FORWARD, PLANE_FORWARD_REPLY

from ..replicamac import replica_key
from ..writer import Written

MAC_BYTES: Final = 32
_TOKEN: Final = re.compile(r"[A-Za-z0-9_:-]{1,128}")
_DETAIL_TYPES: Final = (str, int, bool)  # what an error's detail keeps across the hop


def channel_key(event_key: SigningKey) -> bytes:
    """The MAC key of the replicas' channel, derived from the event key they all hold."""
    return replica_key(event_key, b"forwarding v1")


@dataclass(frozen=True, slots=True)
class Write:
    """One client request inside a forwarded request: its changes and key hashes (see ``.idempotency``)."""

    changes: tuple[RelationChange, ...]
    key: str | None = None
    digest: str | None = None
    legacy: str | None = None


@dataclass(frozen=True, slots=True)
class ForwardRequest:
    sender: str  # the replica that queued the writes
    epoch: str  # the sender's run (random per start): request numbers count within it
    number: int  # increasing per epoch
    to: str  # the replica asked to commit them
    cell: str
    writes: tuple[Write, ...]
    issued_at: float = 0.0  # the sender's clock, seconds (set by verify)


class Refused(TenantGuardError):
    """The replica asked did not queue any write of the request (not ready, stopping, refused the
    request's shape): nothing of it was committed there, so the sender may commit it itself."""

    code = "forward_refused"
    http_status = 503
    retryable = True


Outcome = Written | TenantGuardError


def sign_request(key: bytes, request: ForwardRequest, *, now: float | None = None) -> bytes:
    return _seal(key, {"type": PLANE_FORWARD, "n": request.number, "from": request.sender, "epoch": request.epoch,
                       "to": request.to, "cell": request.cell, "sent_ms": _ms(now),
                       "writes": [_write_wire(w) for w in request.writes]})


def verify_request(data: bytes, key: bytes, *, max_bytes: int) -> ForwardRequest:
    """An authenticated request (MAC, shape, bounds); freshness and numbering are the receiver's."""
    p = _open(data, key, PLANE_FORWARD, max_bytes)
    writes = p.get("writes")
    if not isinstance(writes, list) or not writes:
        raise EventMalformed("a forwarded request holds a non-empty list of writes")
    parsed = tuple(_write_of(w) for w in writes)
    if sum(len(w.changes) for w in parsed) > MAX_BATCH_CHANGES:
        raise EventMalformed(f"a forwarded request holds at most {MAX_BATCH_CHANGES} changes (one batch)")
    sent = p.get("sent_ms")
    if type(sent) is not int:
        raise EventMalformed("a forwarded request states when it was sent")
    return ForwardRequest(_token(p, "from"), _token(p, "epoch"), _number(p), _token(p, "to"), _token(p, "cell"),
                          parsed, sent / 1000)


def sign_reply(key: bytes, request: ForwardRequest, sender: str, outcomes: Sequence[Outcome] | None = None,
               *, refused: TenantGuardError | None = None) -> bytes:
    """The answer to ``request``: one outcome per write, or the whole request ``refused``."""
    body: dict[str, Any] = {"type": PLANE_FORWARD_REPLY, "n": request.number, "from": sender, "to": request.sender,
                            "epoch": request.epoch}
    if refused is not None:
        body["refused"] = error_wire(refused)
    else:
        body["outcomes"] = [_outcome_wire(o) for o in outcomes or ()]
    return _seal(key, body)


def verify_reply(data: bytes, key: bytes, request: ForwardRequest, *, max_bytes: int) -> list[Outcome]:
    """The outcomes of ``request`` (raises :class:`Refused` for a refusal, :class:`EventMalformed` for
    an answer that is not to this request, from the replica it went to, with one outcome per write)."""
    p = _open(data, key, PLANE_FORWARD_REPLY, max_bytes)
    if (p.get("n") != request.number or p.get("epoch") != request.epoch or p.get("from") != request.to
            or p.get("to") != request.sender):
        raise EventMalformed("the answer is not for this request")
    if "refused" in p:
        refusal = error_of(p["refused"])
        raise Refused(refusal.message, cause=refusal.code)
    outcomes = p.get("outcomes")
    if not isinstance(outcomes, list) or len(outcomes) != len(request.writes):
        raise EventMalformed("the answer does not hold one outcome per write")
    return [_outcome_of(o) for o in outcomes]


# --------------------------------------------------------------------------- the MAC


def _seal(key: bytes, body: dict[str, Any]) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    return hmac.new(key, data, hashlib.sha256).digest() + data


def _open(data: bytes, key: bytes, expected_type: str, max_bytes: int) -> dict[str, Any]:
    """The body of a message this channel's key authenticated, of ``expected_type``."""
    if len(data) > max_bytes:
        raise EventMalformed(f"a forwarding message is at most {max_bytes} bytes")
    mac, body = data[:MAC_BYTES], data[MAC_BYTES:]
    if len(mac) != MAC_BYTES or not hmac.compare_digest(mac, hmac.new(key, body, hashlib.sha256).digest()):
        raise EventSignatureInvalid("the message is not authenticated by the replicas' channel key")
    try:
        p = json.loads(body)
    except (ValueError, RecursionError):
        raise EventMalformed("an authenticated forwarding message is not JSON") from None
    if not isinstance(p, dict) or p.get("type") != expected_type:
        raise EventMalformed(f"expected a {expected_type!r} message")
    return p


def _ms(now: float | None) -> int:
    return int((time.time() if now is None else now) * 1000)


def _number(p: Mapping[str, Any]) -> int:
    n = p.get("n")
    if type(n) is not int or not 1 <= n < 2**63:
        raise EventMalformed("a forwarded request has a positive number")
    return n


# --------------------------------------------------------------------------- members


def _write_wire(w: Write) -> dict[str, Any]:
    out: dict[str, Any] = {"changes": [c.to_wire() for c in w.changes]}
    for name in ("key", "digest", "legacy"):
        if getattr(w, name) is not None:
            out[name] = getattr(w, name)
    return out


def _write_of(data: object) -> Write:
    if not isinstance(data, Mapping) or not isinstance(data.get("changes"), list) or not data["changes"]:
        raise EventMalformed("a forwarded write holds a non-empty list of changes")
    try:
        changes = tuple(RelationChange.from_wire(c) for c in data["changes"])
    except (ChangeBatchInvalid, RelationshipInvalid) as exc:
        raise EventMalformed(f"a forwarded change does not parse: {exc.message}") from exc
    key, digest, legacy = (_optional_token(data, name) for name in ("key", "digest", "legacy"))
    if (key is None) != (digest is None):
        raise EventMalformed("a forwarded write's key and digest come together")
    return Write(changes, key, digest, legacy)


def _outcome_wire(o: Outcome) -> dict[str, Any]:
    if isinstance(o, TenantGuardError):
        return {"error": error_wire(o)}
    return {"seq": o.seq, "replayed": o.replayed, "applied": o.applied}


def _outcome_of(data: object) -> Outcome:
    if not isinstance(data, Mapping):
        raise EventMalformed("an outcome is an object")
    if "error" in data:
        return error_of(data["error"])
    seq, replayed, applied = data.get("seq"), data.get("replayed"), data.get("applied")
    if type(seq) is not int or seq < 0 or type(replayed) is not bool or type(applied) is not bool:
        raise EventMalformed("an outcome holds seq, replayed and applied")
    return Written(seq, replayed=replayed, applied=applied)


# --------------------------------------------------------------------------- errors across the hop


def error_wire(exc: TenantGuardError) -> dict[str, Any]:
    """``exc`` as its callers see it, with the detail values a canonical event can carry."""
    detail = {k: v for k, v in exc.detail.items() if isinstance(v, _DETAIL_TYPES)}
    return {"code": exc.code, "message": exc.message[:1000], "detail": detail}


def error_of(data: object) -> TenantGuardError:
    """The error an answer names, as its own class where this replica knows the code (so callers
    get the same status, retryability and headers as from a local commit), else a 503."""
    if not isinstance(data, Mapping) or not isinstance(data.get("code"), str) or not isinstance(
            data.get("message"), str) or not isinstance(data.get("detail", {}), Mapping):
        raise EventMalformed("an error holds a code, a message and a detail object")
    cls = _error_classes().get(data["code"], Unavailable)
    exc = cls.__new__(cls)
    TenantGuardError.__init__(exc, data["message"], **dict(data.get("detail", {})))
    return exc


def _error_classes() -> dict[str, type[TenantGuardError]]:
    found: dict[str, type[TenantGuardError]] = {}
    todo: list[type[TenantGuardError]] = [TenantGuardError]
    while todo:
        cls = todo.pop()
        found.setdefault(cls.code, cls)
        todo.extend(cls.__subclasses__())
    return found


def _token(p: Mapping[str, Any], name: str) -> str:
    value = p.get(name)
    if not isinstance(value, str) or _TOKEN.fullmatch(value) is None:
        raise EventMalformed(f"forwarded {name!r} must be a short token")
    return value


def _optional_token(p: Mapping[str, Any], name: str) -> str | None:
    return None if p.get(name) is None else _token(p, name)
