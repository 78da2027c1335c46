"""Decision records on NATS: batches a sidecar publishes, and the plane's check of each record.

A message is ``{"decisions": [record, ...]}`` on ``tg.decisions.<service>.<tenant token>``
(:func:`tenantguard.feed.topology.decisions_subject`), all records of one tenant, at most
:data:`MAX_MESSAGE_BYTES`. Records are unsigned sidecar output: the plane parses each message
as bounded I-JSON and keeps a record only when :func:`validate_record` accepts it, which
also refuses a record naming another service or tenant than its subject does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from tenantguard.decisionlog.policy import REDACTED, holds_token, scrub, scrub_fields
from tenantguard.errors import TenantGuardError

MAX_RECORD_BYTES: Final = 64 * 1024
MAX_MESSAGE_BYTES: Final = 256 * 1024
MAX_RECORDS_PER_MESSAGE: Final = 2000
MAX_DEPTH: Final = 48  # a record's input nests at most the sidecar's request bound (32) + a few levels
INPUT_DROPPED: Final = "too_large"
_ID: Final = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


class RecordRefused(TenantGuardError):
    """A decision record the plane does not keep; ``reason`` says why (counted per reason)."""

    code = "decision_record_refused"
    http_status = 400

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message, reason=reason)
        self.reason = reason


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def encode_record(record: dict[str, Any]) -> bytes:
    """One record's JSON; a record over :data:`MAX_RECORD_BYTES` loses its input (``input_dropped``)."""
    data = _dumps(record)
    if len(data) > MAX_RECORD_BYTES:
        record = {**record, "input": None, "erased": [], "input_dropped": INPUT_DROPPED}
        data = _dumps(record)
    return data


def encode_batches(records: Iterable[dict[str, Any]]) -> Iterator[tuple[str | None, int, bytes]]:
    """``(tenant, records, message)``: records grouped by tenant, each message within the bounds."""
    groups: dict[str | None, list[bytes]] = {}
    for record in records:
        groups.setdefault(record.get("tenant"), []).append(encode_record(record))
    for tenant, encoded in groups.items():
        chunk: list[bytes] = []
        size = 16
        for item in encoded:
            if chunk and (size + len(item) + 1 > MAX_MESSAGE_BYTES or len(chunk) >= MAX_RECORDS_PER_MESSAGE):
                yield tenant, len(chunk), b'{"decisions":[' + b",".join(chunk) + b"]}"
                chunk, size = [], 16
            chunk.append(item)
            size += len(item) + 1
        if chunk:
            yield tenant, len(chunk), b'{"decisions":[' + b",".join(chunk) + b"]}"


def _str(record: Mapping[str, Any], name: str, limit: int, *, optional: bool = True) -> str | None:
    value = record.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise RecordRefused("malformed", f"{name} must be a string of at most {limit} characters")
    return value


def _int(record: Mapping[str, Any], name: str) -> int:
    value = record.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordRefused("malformed", f"{name} must be a non-negative integer")
    return value


def _bool(record: Mapping[str, Any], name: str, *, required: bool = False) -> bool:
    value = record.get(name, None if required else False)
    if not isinstance(value, bool):
        raise RecordRefused("malformed", f"{name} must be a boolean")
    return value


def _strings(record: Mapping[str, Any], name: str, count: int, limit: int) -> list[str]:
    value = record.get(name) or []
    if not isinstance(value, list) or len(value) > count or not all(
            isinstance(v, str) and len(v) <= limit for v in value):
        raise RecordRefused("malformed", f"{name} must be a list of at most {count} strings")
    return list(value)


def validate_record(record: Any, *, service: str, tenant: str | None) -> dict[str, Any]:
    """The record as the plane keeps it (known members only, types and sizes checked, any
    token-shaped string redacted, in the input and in the record's own members), or
    :class:`RecordRefused`.

    ``service`` and ``tenant`` come from the subject (NATS permissions bind the service to
    the publisher's identity); a record claiming others is refused, never re-labelled.
    """
    if not isinstance(record, Mapping):
        raise RecordRefused("malformed", "a record must be an object")
    decision_id = record.get("decision_id")
    if not isinstance(decision_id, str) or _ID.fullmatch(decision_id) is None:
        raise RecordRefused("malformed", "decision_id must be 1-128 characters of A-Z a-z 0-9 _ . : -")
    claimed = record.get("service")
    if claimed != service:
        raise RecordRefused("service_mismatch", f"record claims service {claimed!r:.70}, its subject {service}")
    if record.get("tenant") != tenant:
        raise RecordRefused("tenant_mismatch", "record claims another tenant than its subject")
    when = record.get("time")
    if isinstance(when, bool) or not isinstance(when, int | float) or not 0 <= when < 1e11:
        raise RecordRefused("malformed", "time must be epoch seconds")
    token = record.get("token")
    if token is not None:
        if not isinstance(token, Mapping):
            raise RecordRefused("malformed", "token must be an object or null")
        ancestry = {k: _strings(token, k, 16, 256) for k in ("chain", "chain_kids") if token.get(k) is not None}
        token = {k: _str(token, k, 256) for k in ("jti", "iss", "kid")}
        token = {k: REDACTED if v is not None and holds_token(v) else v for k, v in token.items()}
        token.update({k: [REDACTED if holds_token(v) else v for v in vs] for k, vs in ancestry.items()})
    document = record.get("input")
    if document is not None and not isinstance(document, Mapping):
        raise RecordRefused("malformed", "input must be an object or null")
    erased = [REDACTED if holds_token(e) else e for e in _strings(record, "erased", 256, 600)]
    if document is not None:
        document = scrub(document, "/input", erased, 0)
    out: dict[str, Any] = {
        "v": _int(record, "v"),
        "decision_id": decision_id,
        "time": float(when),
        "service": service,
        "sidecar": _str(record, "sidecar", 128),
        "door": _str(record, "door", 32),
        "tenant": tenant,
        "subject": _str(record, "subject", 512),
        "action": _str(record, "action", 512),
        "resource": _str(record, "resource", 1024),
        "allow": _bool(record, "allow", required=True),
        "reasons": _strings(record, "reasons", 64, 256),
        "bundle_revision": _str(record, "bundle_revision", 128),
        "relations_seq": _int(record, "relations_seq"),
        "path": _str(record, "path", 256),
        "latency_us": _int(record, "latency_us"),
        "actor_chain": _strings(record, "actor_chain", 16, 512),
        "act_as": _bool(record, "act_as"),
        "high_risk": _bool(record, "high_risk"),
        "token": token,
        "input": document,
        "erased": erased,
    }
    scrub_fields(out, erased)  # a sidecar of another version, or one that skipped it: again here
    dropped = record.get("input_dropped")
    if dropped is not None:
        out["input_dropped"] = _str(record, "input_dropped", 32)
    return out
