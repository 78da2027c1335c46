"""A decision query: filters, order, page size, and the opaque cursor that continues it.

A record's position is ``(stream sequence, index in its message)``; pages are ordered by
it (newest first by default, ``asc`` for export and tail). The cursor carries the last
position examined, the order and a fingerprint of the filters, so a cursor is refused
with another query (a console cannot page one query with another's cursor by mistake).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from tenantguard.errors import InvalidInput, TenantGuardError
from tenantguard.feed import topology as topo
from tenantguard.util.jsonlimits import loads

MAX_LIMIT: Final = 1000
MAX_POSITION: Final = 2**63 - 1  # a JetStream sequence is a uint64; the cursors this plane issues stay below
Order = Literal["desc", "asc"]
Position = tuple[int, int]  # (stream seq, index of the record in its message)


@dataclass(frozen=True, slots=True)
class DecisionQuery:
    """Every filter is optional; ``tenant``/``service`` narrow the stream scan server-side
    (a subject filter), the others are checked on each record."""

    tenant: str | None = None
    service: str | None = None
    subject: str | None = None
    resource: str | None = None
    action: str | None = None
    allow: bool | None = None
    reason: str | None = None
    decision_id: str | None = None
    jti: str | None = None
    since: float | None = None
    until: float | None = None
    limit: int = 100
    order: Order = "desc"

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be within 1..{MAX_LIMIT}", field="limit")
        if self.order not in ("desc", "asc"):
            raise InvalidInput("order must be desc or asc", field="order")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise InvalidInput("since is after until", field="since")

    @property
    def subject_filter(self) -> str:
        return topo.decisions_filter(self.service, self.tenant, tenant_given=self.tenant is not None)

    def fingerprint(self) -> str:
        filters = {k: getattr(self, k) for k in self.__slots__ if k not in ("limit",)}  # type: ignore[attr-defined]
        return hashlib.sha256(json.dumps(filters, sort_keys=True).encode()).hexdigest()[:16]

    def matches(self, record: dict[str, Any]) -> bool:
        if self.decision_id is not None and record["decision_id"] != self.decision_id:
            return False
        if self.tenant is not None and record["tenant"] != self.tenant:
            return False
        if self.service is not None and record["service"] != self.service:
            return False
        if self.subject is not None and record["subject"] != self.subject:
            return False
        if self.resource is not None and record["resource"] != self.resource:
            return False
        if self.action is not None and record["action"] != self.action:
            return False
        if self.allow is not None and record["allow"] is not self.allow:
            return False
        if self.reason is not None and self.reason not in record["reasons"]:
            return False
        if self.jti is not None and (record["token"] or {}).get("jti") != self.jti:
            return False
        when = record["time"]
        if self.since is not None and when < self.since:
            return False
        return not (self.until is not None and when > self.until)


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a query continues: after (``asc``) or before (``desc``) ``position``."""

    position: Position
    order: Order
    fingerprint: str

    def encode(self) -> str:
        raw = json.dumps({"p": list(self.position), "o": self.order, "f": self.fingerprint}).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str, query: DecisionQuery) -> Cursor:
        """The cursor in ``text`` when it is exactly what :meth:`encode` writes: bounded I-JSON, a
        position of two integers within 0..2**63-1 and strings for order and fingerprint. Anything
        else is 400: a query string is untrusted (``Infinity`` or ``"12"`` once reached ``int()``)."""
        try:
            raw = loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), max_depth=4)
        except (binascii.Error, ValueError, TenantGuardError):
            raise InvalidInput("cursor is not one this plane issued", field="cursor") from None
        position = raw.get("p") if type(raw) is dict else None
        order, fingerprint = (raw.get("o"), raw.get("f")) if type(raw) is dict else (None, None)
        if (type(position) is not list or len(position) != 2
                or not all(type(v) is int and 0 <= v <= MAX_POSITION for v in position)
                or type(order) is not str or type(fingerprint) is not str):
            raise InvalidInput("cursor is not one this plane issued", field="cursor")
        cursor = cls((position[0], position[1]), order, fingerprint)  # type: ignore[arg-type]  # checked below
        if cursor.order != query.order or cursor.fingerprint != query.fingerprint():
            raise InvalidInput("cursor belongs to another query (filters or order differ)", field="cursor")
        return cursor


@dataclass(slots=True)
class Page:
    """One page: records in order, the cursor to continue (None: nothing more, ``desc`` only),
    and where they came from. ``asc`` pages always have a cursor (the end of a stream is open)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    next_cursor: str | None = None
    scanned: int = 0  # stream messages read beyond the window
    complete: bool = False  # True when the query reached the end of what is stored (or its since)
    sources: set[str] = field(default_factory=set)

    def to_wire(self, render: Any = None) -> dict[str, Any]:
        return {"decisions": [render(r) if render else r for r in self.records], "next_cursor": self.next_cursor,
                "complete": self.complete, "scanned": self.scanned, "sources": sorted(self.sources)}
