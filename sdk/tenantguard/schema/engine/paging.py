"""Pages and opaque cursors over a lookup's deterministic answer order.

A lookup enumerates its answer in an order fixed by the store's contents (reads are
ordered), so a page is "the next N after the first K" and the cursor records K together
with a digest of the query it belongs to: a cursor is refused on any other query, and pages
of any size concatenate to the one-page answer with no duplicates. Resuming re-walks the
candidates before K without deciding them (the cursor counts candidates, not answers).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tenantguard.schema.engine.errors import InvalidQuery
from tenantguard.schema.engine.outcome import Decision

MAX_CURSOR = 512


@dataclass(frozen=True, slots=True)
class Item:
    """One answer: the object (lookup resources) or subject (lookup subjects) and its decision
    (ALLOWED, or CONDITIONAL with the missing context names)."""

    id: str
    decision: Decision
    missing: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"id": self.id, "decision": self.decision.value}
        if self.missing:
            out["missing"] = list(self.missing)
        return out


@dataclass(frozen=True, slots=True)
class Page:
    items: tuple[Item, ...]
    cursor: str | None  # None on the last page


def query_digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def encode(offset: int, digest: str) -> str:
    raw = json.dumps({"v": 1, "n": offset, "q": digest}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str | None, digest: str) -> int:
    if cursor is None or cursor == "":
        return 0
    if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR:
        raise InvalidQuery("cursor is malformed", rule="bad_cursor")
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset, belongs = data["n"], data["q"]
    except (ValueError, KeyError, TypeError) as e:
        raise InvalidQuery("cursor is malformed", rule="bad_cursor") from e
    if data.get("v") != 1 or belongs != digest or not isinstance(offset, int) or offset < 0:
        raise InvalidQuery("cursor belongs to another query", rule="bad_cursor")
    return offset


def paginate(candidates: Iterator[str], decide: Callable[[str], Item | None], offset: int, page_size: int,
             digest: str) -> Page:
    """Skips ``offset`` candidates (without deciding them), decides the rest in order until
    ``page_size`` items are found, and looks one allowed item ahead so the last page says so.
    The cursor counts candidates, so a later page never re-decides earlier ones."""
    out: list[Item] = []
    position = 0
    for candidate in candidates:
        position += 1
        if position <= offset:
            continue
        item = decide(candidate)
        if item is None:
            continue
        if len(out) == page_size:
            return Page(tuple(out), encode(position - 1, digest))
        out.append(item)
    return Page(tuple(out), None)
