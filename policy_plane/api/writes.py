"""What a sequenced write's answer says besides its sequence, in response headers."""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import Header, Response

from ..runtime import Written

IdempotencyKey = Annotated[str | None, Header(
    alias="Idempotency-Key",
    description="Makes a retry safe: a retry with the same key (within 10 minutes, at any replica, also one "
                "restarted meanwhile) returns the first outcome and writes nothing; the same key with another body "
                "(compared exactly: a member left out counts as one changed) is 422 idempotency_key_reused. "
                "Relation writes: a key is scoped to the tenants the changes touch (the same key in a write for "
                "other tenants is another key), and the plane remembers the last 500,000 keys at most, so under "
                "heavier load the window is shorter than 10 minutes")]

REPLAYED_HEADER = "Idempotent-Replayed"
APPLIED_HEADER = "Tg-Applied-Here"


_REPLAYED: Final = (REPLAYED_HEADER.lower().encode(), b"true")
_NOT_APPLIED: Final = (APPLIED_HEADER.lower().encode(), b"false")


def written_headers(written: Written) -> list[tuple[bytes, bytes]]:
    """``Idempotent-Replayed: true`` for the first outcome of an earlier request with the same key;
    ``Tg-Applied-Here: false`` when this replica has not applied the committed write yet (its
    reads may not show it; ``at_least`` the returned token waits for it). ASGI form."""
    headers = []
    if written.replayed:
        headers.append(_REPLAYED)
    if not written.applied:
        headers.append(_NOT_APPLIED)
    return headers


def mark_written(response: Response, written: Written) -> None:
    """:func:`written_headers` on a framework response."""
    response.headers.raw.extend(written_headers(written))
