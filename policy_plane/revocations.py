"""Revocation records: validated once at the API, signed, replayed by every consumer.

Wire payloads of ``revocation`` events (integers only, as the event envelope requires)::

    {"kind": "jti", "jti": "...", "exp": 1767225600}          # forget after exp (epoch s)
    {"kind": "subject", "tenant": "acme", "sub": "alice", "issued_before": 1767225600}  # the token's sub
    {"kind": "kid", "kid": "<RFC 7638 thumbprint>"}
    {"kind": "tenant", "tenant": "acme", "issued_before": 1767225600}   # the kill switch
    {"kind": "lift_tenant", "tenant": "acme"}

``issued_before`` is filled in by the plane (now) when the caller leaves it out: a
replayed event must carry its own cut-off, or a sidecar starting tomorrow would refuse
tokens issued after the revocation.

A revocation written with an ``Idempotency-Key`` also carries ``request_digest``: the digest
of what the request stated, before any default was filled in, so that a retry is recognised
exactly (:func:`same_request`); readers ignore it.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Mapping
from typing import Any, Final

from tenantguard.errors import InvalidInput
from tenantguard.identity.revocations import RevocationList
from tenantguard.relations.model import NAME_PATTERN

KINDS: Final = ("jti", "subject", "kid", "tenant", "lift_tenant")
_TENANT_RE: Final = re.compile(NAME_PATTERN)
_TOKEN_RE: Final = re.compile(r"[\x21-\x7e]{1,256}")  # printable ASCII, no spaces
_MAX_TIME: Final = 2**42
REQUEST_DIGEST: Final = "request_digest"
_DIGEST_PREFIX: Final = b"tenantguard.revocation-request.v1\n"


def _tenant(body: Mapping[str, Any]) -> str:
    tenant = body.get("tenant")
    if not isinstance(tenant, str) or _TENANT_RE.fullmatch(tenant) is None:
        raise InvalidInput(f"tenant must match {NAME_PATTERN}", field="tenant")
    return tenant


def _text(body: Mapping[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or _TOKEN_RE.fullmatch(value) is None:
        raise InvalidInput(f"{field} must be 1-256 printable ASCII characters", field=field)
    return value


def _time(body: Mapping[str, Any], field: str, default: int | None) -> int:
    value = body.get(field, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < _MAX_TIME:
        raise InvalidInput(f"{field} must be a positive integer (epoch seconds)", field=field)
    return value


def revocation_payload(body: Mapping[str, Any], *, now: float | None = None) -> dict[str, Any]:
    """The canonical event payload for a revocation request; raise ``InvalidInput``."""
    kind = body.get("kind")
    current = int(time.time() if now is None else now)
    if kind == "jti":
        return {"kind": kind, "jti": _text(body, "jti"), "exp": _time(body, "exp", None)}
    if kind == "subject":
        return {"kind": kind, "tenant": _tenant(body), "sub": _text(body, "sub"),
                "issued_before": _time(body, "issued_before", current)}
    if kind == "kid":
        return {"kind": kind, "kid": _text(body, "kid")}
    if kind == "tenant":
        return {"kind": kind, "tenant": _tenant(body), "issued_before": _time(body, "issued_before", current)}
    if kind == "lift_tenant":
        return {"kind": kind, "tenant": _tenant(body)}
    raise InvalidInput(f"kind must be one of {', '.join(KINDS)}", field="kind")


def request_digest(stated: Mapping[str, Any]) -> str:
    """What a request stated (its non-null members), as 32 hex characters: canonical JSON, so
    member order and spacing do not matter, and a member left out differs from one stated."""
    wire = json.dumps(dict(stated), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(_DIGEST_PREFIX + wire.encode()).digest()[:16].hex()


def same_request(stored: Mapping[str, Any], stated: Mapping[str, Any]) -> bool:
    """Whether ``stated`` repeats the request that published ``stored``, exactly.

    A record from a plane older than ``request_digest`` can only be compared one way (every
    stated member must match the record): such records leave the JetStream duplicate window
    minutes after an upgrade.
    """
    digest = stored.get(REQUEST_DIGEST)
    if isinstance(digest, str):
        return digest == request_digest(stated)  # not a secret: it digests what the record shows
    return all(stored.get(k) == v for k, v in stated.items())


def apply_record(target: RevocationList, payload: Mapping[str, Any]) -> None:
    """Replay one verified record into ``target`` (unknown kinds are ignored: forward compatible)."""
    kind = payload.get("kind")
    if kind == "jti":
        target.revoke_jti(payload["jti"], payload["exp"])
    elif kind == "subject":
        target.revoke_subject(payload["tenant"], payload["sub"], payload["issued_before"])
    elif kind == "kid":
        target.revoke_kid(payload["kid"])
    elif kind == "tenant":
        target.revoke_tenant(payload["tenant"], payload["issued_before"])
    elif kind == "lift_tenant":
        target.lift_tenant(payload["tenant"])
