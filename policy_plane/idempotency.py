"""Idempotency keys of relation writes, held in the replicated relations state.

A relations batch carries, for each write in it that had an ``Idempotency-Key``, the
pair ``[key hash, changes digest]`` (see :func:`tenantguard.feed.events.sign_batch`). Every
replica records the pairs of every batch it applies in a :class:`KeyWindow`, so every
replica answers "was this key committed, at which seq, with which changes?" from the
same stream, whichever replica wrote it. The group committer consults the window each
time it builds a batch, and a build always happens against the state right after the
writer's catch-up on a sequence conflict: two replicas cannot both commit one key, and
a retry after an ack that was lost once JetStream had stored the batch finds the key.

The window keeps a key for ``WINDOW_SECONDS`` after the batch was issued (the signed
``issued_at`` of the event, not the time it was read) or for the last
``MAX_KEYS`` keyed writes, whichever is shorter. About 200 bytes per key, so a full
window holds about 100 MB; it fills only at 833 keyed writes/s sustained for ten
minutes, and at 5,000 keyed writes/s it still spans 100 s, five times the SDK's 20 s
retry horizon (``tenantguard.client.plane.DEFAULT_RETRY_FOR``).

Keys are stored hashed (SHA-256 under a domain prefix, 128 bits kept): the stream is
read by every sidecar, and a key is the caller's to choose.

A key is scoped to the tenants its write touches (:func:`key_hash` hashes them in): the same
key in writes for other tenants is another key. Every write of one tenant set goes to one
cell's committer, and that committer and the cell's sequence decide between concurrent
requests, so "one key, one commit" holds at any replica. Unscoped, keys would be one
namespace that two cells (two subjects, two sequences, no common arbiter) could both commit
to at once, while the same reuse one after the other was a 422. Batches written before the
scoping carry :func:`legacy_key_hash` values; the committer still finds those (a retry of a
write accepted by an older replica during an upgrade).
"""

from __future__ import annotations

import hashlib
import json
import struct
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Final

from tenantguard.feed.events import EventMalformed
from tenantguard.relations import MAX_BATCH_CHANGES, RelationChange

WINDOW_SECONDS: Final = 600.0
MAX_KEYS: Final = 500_000
HASH_BYTES: Final = 16
_KEY_PREFIX: Final = b"tenantguard.idempotency-key.v1\n"
_SCOPED_PREFIX: Final = b"tenantguard.idempotency-key.v2\n"
_REVOCATION_PREFIX: Final = b"tenantguard.revocation-idempotency-key.v1\n"
_VALUE: Final = struct.Struct(">qd")  # seq, issued_at; the changes digest follows


def key_hash(key: str, tenants: Iterable[str]) -> str:
    """What the stream carries for ``key`` in a write touching ``tenants``: 32 hex characters.

    Tenant names are ``[a-z][a-z0-9_]*`` (no comma or newline), so one hashed text means one
    (tenant set, key) pair.
    """
    scope = ",".join(sorted(set(tenants)))
    return hashlib.sha256(_SCOPED_PREFIX + scope.encode() + b"\n" + key.encode()).digest()[:HASH_BYTES].hex()


def revocation_msg_id(key: str) -> str:
    """The ``Nats-Msg-Id`` a revocation written with ``key`` is published under: hashed like a
    relation key (the revocations stream is read by every sidecar identity, and the key is the
    caller's to choose), in a namespace of its own. JetStream's duplicate window still makes
    one key one publish."""
    return "rv:" + hashlib.sha256(_REVOCATION_PREFIX + key.encode()).digest()[:HASH_BYTES].hex()


def legacy_key_hash(key: str) -> str:
    """What planes before tenant-scoped keys carried for ``key`` (looked up, never written)."""
    return hashlib.sha256(_KEY_PREFIX + key.encode()).digest()[:HASH_BYTES].hex()


def changes_digest(changes: Sequence[RelationChange]) -> str:
    """A digest of the changes in order: a retry must repeat exactly these."""
    wire = json.dumps([c.to_wire() for c in changes], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(wire.encode()).digest()[:HASH_BYTES].hex()


def keys_of(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``[key hash, changes digest]`` pairs of a verified batch payload (none when absent)."""
    raw = payload.get("keys")
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_BATCH_CHANGES:
        raise EventMalformed(f"keys must be a list of at most {MAX_BATCH_CHANGES} pairs")
    out = []
    for pair in raw:
        if not (isinstance(pair, list) and len(pair) == 2 and all(_is_hash(x) for x in pair)):
            raise EventMalformed("each key must be a [key hash, changes digest] pair of hex strings")
        out.append((pair[0], pair[1]))
    return out


def _is_hash(value: object) -> bool:
    if not isinstance(value, str) or len(value) != 2 * HASH_BYTES:
        return False
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return True


class KeyWindow:
    """key hash -> (seq, changes digest) of the first batch that carried it, bounded by time and count."""

    def __init__(self, *, seconds: float = WINDOW_SECONDS, limit: int = MAX_KEYS) -> None:
        self.seconds = seconds
        self.limit = limit
        self._entries: dict[bytes, bytes] = {}
        self._order: deque[bytes] = deque()  # insertion order, oldest first (dict pops from the front are slow)

    def __len__(self) -> int:
        return len(self._entries)

    def record(self, seq: int, pairs: Iterable[tuple[str, str]], issued_at: float, now: float | None = None) -> None:
        """Remember the keys of batch ``seq``; a key already held keeps its first outcome."""
        now = time.time() if now is None else now
        if issued_at < now - self.seconds:
            return  # read back from before the window (a restart, or a replayed old event)
        for key, digest in pairs:
            k = bytes.fromhex(key)
            if k not in self._entries:
                self._entries[k] = _VALUE.pack(seq, issued_at) + bytes.fromhex(digest)
                self._order.append(k)
        self._evict(now)

    def lookup(self, key: str, now: float | None = None) -> tuple[int, str] | None:
        """``(seq, changes digest)`` of the committed write with this key hash, None when unknown or expired."""
        value = self._entries.get(bytes.fromhex(key))
        if value is None:
            return None
        seq, issued_at = _VALUE.unpack_from(value)
        if issued_at < (time.time() if now is None else now) - self.seconds:
            return None
        return seq, value[_VALUE.size:].hex()

    def _evict(self, now: float) -> None:
        oldest = now - self.seconds
        while self._order:
            first = self._order[0]
            if len(self._order) <= self.limit and _VALUE.unpack_from(self._entries[first])[1] >= oldest:
                return
            self._order.popleft()
            del self._entries[first]
