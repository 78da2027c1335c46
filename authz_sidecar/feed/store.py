"""What the feed keeps in ``state_dir/feed`` so a sidecar restarted with NATS down still serves.

- ``relations.snapshot`` (cell ``c0``) and ``relations.<cell>.snapshot`` (other cells): each
  cell's local index in the library's snapshot format (atomic write, self-checking header).
  The sidecar wrote them, so they are trusted like the rest of the state directory; their
  integrity is checked, not their origin.
- ``feed.json``: the scope they were kept under (cell count, object types: persisted
  relations kept under another scope are ignored, never answered from), positions (per cell,
  the relations seq and the JetStream stream seq it came from, the
  revocations stream seq) and the *signed* trust, revocation and bundle announce events
  as received (per scope, the newest announce acted on, below which a restarted sidecar
  refuses announces). Those are re-verified against the plane key on load, so a file
  edited on disk cannot add a trusted key, lift a revocation, or raise a scope's position
  past what the plane announced (which would make the sidecar ignore new bundles while
  reporting itself in step). ``revocations.caught_up_seq`` (the stream seq the sidecar last
  caught up at) is for the status only: readiness after a restart needs a fresh catch-up
  against the live stream (:mod:`.catchup`), and the revocations position is checked there.

Both files are replaced atomically (temp file, fsync, rename), so a crash leaves the old
or the new, never half of either; ``feed.json`` names the relations seq its stream seq
belongs to, so a crash between the two writes is detected, and the stream seq dropped.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tenantguard.feed.topology import DEFAULT_CELL
from tenantguard.relations import RelationIndex, SnapshotInvalid, read_snapshot, write_snapshot
from tenantguard.util.fsutil import atomic_write

log = logging.getLogger(__name__)

SNAPSHOT_NAME = "relations.snapshot"
STATE_NAME = "feed.json"
STATE_VERSION = 1
MAX_STATE_BYTES = 64 * 1024 * 1024


@dataclass(slots=True)
class ControlState:
    """Positions and signed control events (ASCII JSON text, exactly as published)."""

    relations: dict[str, tuple[int, int]] = field(default_factory=dict)  # cell -> (seq, stream seq)
    trust_event: str | None = None
    revocation_events: list[str] = field(default_factory=list)
    revocations_stream_seq: int = 0
    bundle_seqs: dict[str, int] = field(default_factory=dict)  # scope -> highest announce seq acted on
    cells: int = 1
    scope_types: list[str] | None = None  # the object types the persisted relations were kept for
    bundle_events: dict[str, str] = field(default_factory=dict)  # scope -> that announce, signed, as received
    # the revocations stream seq this sidecar last caught up at: shown in the status, never believed
    # for readiness (a restarted sidecar catches up against the live stream again)
    revocations_caught_up_seq: int = 0

    def to_wire(self) -> dict[str, Any]:
        c0 = self.relations.get(DEFAULT_CELL, (0, 0))
        return {
            "version": STATE_VERSION,
            "relations": {"seq": c0[0], "stream_seq": c0[1], "cells": self.cells, "scope_types": self.scope_types,
                          "positions": {c: {"seq": a, "stream_seq": b}
                                        for c, (a, b) in sorted(self.relations.items())}},
            "trust_event": self.trust_event,
            "revocations": {"stream_seq": self.revocations_stream_seq, "caught_up_seq": self.revocations_caught_up_seq,
                            "events": self.revocation_events},
            "bundles": {scope: {"seq": seq, "event": self.bundle_events.get(scope)}
                        for scope, seq in sorted(self.bundle_seqs.items())},
        }

    @classmethod
    def from_wire(cls, doc: Any) -> ControlState:
        """Lenient about unknown members; strict about types (a bad file is ignored, not trusted)."""
        if not isinstance(doc, dict) or doc.get("version") != STATE_VERSION:
            raise ValueError("not a version-1 feed state")
        rel, rev = doc.get("relations") or {}, doc.get("revocations") or {}
        events = rev.get("events") or []
        trust = doc.get("trust_event")
        if not isinstance(events, list) or not all(isinstance(e, str) and e.isascii() for e in events) \
                or not (trust is None or (isinstance(trust, str) and trust.isascii())):
            raise ValueError("events must be ASCII strings (as published)")
        bundles = doc.get("bundles") or {}
        if not isinstance(bundles, dict) or not all(isinstance(v, dict) for v in bundles.values()):
            raise ValueError("bundles must map scopes to positions")
        positions = rel.get("positions")
        if positions is None:  # written before cells: one cell, and a stream seq on the pre-cell subject, which
            # means nothing on c0's subject (resuming there would wait for batches that never come): dropped
            positions = {DEFAULT_CELL: {"seq": rel.get("seq", 0), "stream_seq": 0}}
        if not isinstance(positions, dict) or not all(isinstance(v, dict) for v in positions.values()):
            raise ValueError("relation positions must map cells to positions")
        types = rel.get("scope_types")
        if types is not None and not (isinstance(types, list) and all(isinstance(t, str) for t in types)):
            raise ValueError("scope_types must be a list of names")
        announces = {str(k): v.get("event") for k, v in bundles.items()}
        if not all(isinstance(e, str | None) and (e is None or e.isascii()) for e in announces.values()):
            raise ValueError("bundle announces must be ASCII strings (as published)")
        return cls({str(c): (_int(v.get("seq", 0)), _int(v.get("stream_seq", 0))) for c, v in positions.items()},
                   trust, list(events), _int(rev.get("stream_seq")),
                   {str(k): _int(v.get("seq")) for k, v in bundles.items()}, _int(rel.get("cells", 1)), types,
                   {k: e for k, e in announces.items() if e is not None}, _int(rev.get("caught_up_seq", 0)))


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("positions are non-negative integers")
    return value


class FeedStore:
    """Reads and writes the two files; every method is blocking (call via ``to_thread``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @property
    def snapshot_path(self) -> Path:
        return self.snapshot_path_of(DEFAULT_CELL)

    def snapshot_path_of(self, cell: str) -> Path:
        return self.directory / (SNAPSHOT_NAME if cell == DEFAULT_CELL else f"relations.{cell}.snapshot")

    @property
    def state_path(self) -> Path:
        return self.directory / STATE_NAME

    def load_relations(self, cell: str = DEFAULT_CELL) -> RelationIndex | None:
        """The persisted index of ``cell``, or None when absent or unreadable (logged; NATS will refill it)."""
        path = self.snapshot_path_of(cell)
        if not path.is_file():
            return None
        try:
            return read_snapshot(path)
        except (OSError, SnapshotInvalid) as exc:
            log.error("persisted relations snapshot %s unusable, ignoring it: %s", path, exc)
            return None

    def load_state(self) -> ControlState:
        if not self.state_path.is_file():
            return ControlState()
        try:
            raw = self.state_path.read_bytes()
            if len(raw) > MAX_STATE_BYTES:
                raise ValueError(f"larger than {MAX_STATE_BYTES} bytes")
            return ControlState.from_wire(json.loads(raw))
        except (OSError, ValueError) as exc:
            log.error("persisted feed state %s unusable, ignoring it: %s", self.state_path, exc)
            return ControlState()

    def save_relations(self, index: RelationIndex, cell: str = DEFAULT_CELL) -> int:
        """Write the index's current state of ``cell``; return the seq written."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return write_snapshot(index, self.snapshot_path_of(cell)).seq

    def save_state(self, state: ControlState) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        atomic_write(self.state_path, json.dumps(state.to_wire(), separators=(",", ":")).encode())
