"""Staged rollouts and rollbacks: the pure rules (no I/O); the plane persists and announces.

A rollout activates one candidate revision scope by scope: ``stages`` is a list of
scope lists, e.g. ``[["billing"], ["orders", "reports"], ["all"]]``. Its state is one
signed ``rollout.state`` event on JetStream (the plane is stateless over JetStream), and
every change is a new event with the next ``seq``: start (stage 0 announced), advance
(the next stage announced; after the last one the rollout is ``completed``), halt
(advance refused until resumed), resume, abort (stays where it is; roll scopes back
with ``bundle rollback``). One rollout at a time: a second start is refused while one
is ``in_progress`` or ``halted``.

A rollback is a *new* announcement of *old* content: the old archive's files with a new
revision (``<old>.rollback.<serial>``), a newer ``metadata.serial`` and
``metadata.rollback_of``, re-signed by the plane. Every reader's ordering rule (higher
announce ``seq``, higher serial) therefore still refuses any replayed old announce.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from tenantguard.bundle import Bundle, Signer, build_bundle, order_key
from tenantguard.errors import InvalidInput, RolloutConflict

ROLLOUT_STATE: Final = "rollout.state"
IN_PROGRESS: Final = "in_progress"
HALTED: Final = "halted"
COMPLETED: Final = "completed"
ABORTED: Final = "aborted"
STATUSES: Final = (IN_PROGRESS, HALTED, COMPLETED, ABORTED)
OPEN: Final = frozenset({IN_PROGRESS, HALTED})
MAX_STAGES: Final = 32
MAX_SCOPES_PER_STAGE: Final = 256
MAX_HISTORY: Final = 64
SCOPE_RE: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
ROLLOUT_ID_RE: Final = re.compile(r"[A-Za-z0-9._-]{1,160}")


def parse_stages(text: str | Sequence[Sequence[str]]) -> tuple[tuple[str, ...], ...]:
    """``"billing;orders,reports;all"`` (or a list of lists) into validated stages.

    A scope appears once; ``all`` may only be the last stage, alone (after it there is
    nothing left to reach).
    """
    raw = [s.split(",") for s in text.split(";")] if isinstance(text, str) else [list(s) for s in text]
    stages = tuple(tuple(scope.strip() for scope in stage if scope.strip()) for stage in raw)
    if not stages or len(stages) > MAX_STAGES or any(not s or len(s) > MAX_SCOPES_PER_STAGE for s in stages):
        raise InvalidInput(f"stages: 1-{MAX_STAGES} non-empty stages of at most {MAX_SCOPES_PER_STAGE} scopes",
                           field="stages")
    seen: set[str] = set()
    for i, stage in enumerate(stages):
        for scope in stage:
            if SCOPE_RE.fullmatch(scope) is None:
                raise InvalidInput(f"stages: {scope!r:.70} is not a scope (a service name or 'all')", field="stages")
            if scope in seen:
                raise InvalidInput(f"stages: scope {scope} appears twice", field="stages")
            if scope == "all" and (i != len(stages) - 1 or len(stage) != 1):
                raise InvalidInput("stages: 'all' can only be the last stage, alone", field="stages")
            seen.add(scope)
    return stages


@dataclass(frozen=True, slots=True)
class RolloutState:
    """One rollout as last committed; ``stage`` is the index of the last stage announced."""

    id: str
    revision: str
    serial: int | None
    sha256: str
    size: int
    object: str
    stages: tuple[tuple[str, ...], ...]
    stage: int = 0
    status: str = IN_PROGRESS
    updated_at_ms: int = 0  # events carry integers only
    history: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)

    @property
    def reached(self) -> tuple[str, ...]:
        """Every scope announced so far."""
        return tuple(s for stage in self.stages[: self.stage + 1] for s in stage)

    @property
    def open(self) -> bool:
        return self.status in OPEN

    def _step(self, action: str, actor: str, **changes: Any) -> RolloutState:
        entry = {"action": action, "by": actor[:128], "at_ms": int(time.time() * 1000),
                 "stage": changes.get("stage", self.stage)}
        history = (*self.history, entry)[-MAX_HISTORY:]
        return replace(self, updated_at_ms=entry["at_ms"], history=history, **changes)

    def advance(self, actor: str) -> RolloutState:
        if self.status == HALTED:  # say the way on, not only the rule
            raise RolloutConflict(f"rollout {self.id} is halted; resume it first (`tenantguard bundle rollout resume "
                                  f"{self.id}`), then advance", rollout_status=self.status)
        if self.status != IN_PROGRESS:
            raise RolloutConflict(f"rollout {self.id} is {self.status}; only one in progress can advance",
                                  rollout_status=self.status)
        if self.stage + 1 >= len(self.stages):
            raise RolloutConflict(f"rollout {self.id} has announced its last stage", rollout_status=self.status)
        stage = self.stage + 1
        return self._step("advance", actor, stage=stage,
                          status=COMPLETED if stage == len(self.stages) - 1 else IN_PROGRESS)

    def halt(self, actor: str) -> RolloutState:
        if self.status != IN_PROGRESS:
            raise RolloutConflict(f"rollout {self.id} is {self.status}; only one in progress can be halted",
                                  rollout_status=self.status)
        return self._step("halt", actor, status=HALTED)

    def resume(self, actor: str) -> RolloutState:
        if self.status != HALTED:
            raise RolloutConflict(f"rollout {self.id} is {self.status}; only a halted one can resume",
                                  rollout_status=self.status)
        return self._step("resume", actor, status=IN_PROGRESS)

    def abort(self, actor: str) -> RolloutState:
        if not self.open:
            raise RolloutConflict(f"rollout {self.id} is already {self.status}", rollout_status=self.status)
        return self._step("abort", actor, status=ABORTED)

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "revision": self.revision, "serial": self.serial, "sha256": self.sha256,
                "size": self.size, "object": self.object, "stages": [list(s) for s in self.stages],
                "stage": self.stage, "status": self.status, "reached": list(self.reached),
                "pending": [list(s) for s in self.stages[self.stage + 1:]], "updated_at_ms": self.updated_at_ms,
                "history": [dict(h) for h in self.history]}

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> RolloutState:
        try:
            stages = parse_stages(raw["stages"])
            state = cls(id=str(raw["id"]), revision=str(raw["revision"]),
                        serial=raw["serial"] if isinstance(raw.get("serial"), int) else None,
                        sha256=str(raw["sha256"]), size=int(raw["size"]), object=str(raw["object"]),
                        stages=stages, stage=int(raw["stage"]), status=str(raw["status"]),
                        updated_at_ms=int(raw.get("updated_at_ms") or 0),
                        history=tuple(h for h in raw.get("history") or () if isinstance(h, Mapping)))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"rollout state is malformed: {exc}") from None
        if state.status not in STATUSES or not 0 <= state.stage < len(stages):
            raise InvalidInput("rollout state has an unknown status or stage")
        return state

    @classmethod
    def start(cls, bundle: Bundle, *, sha256: str, size: int, object: str,
              stages: tuple[tuple[str, ...], ...], actor: str) -> RolloutState:
        serial = order_key(bundle.manifest)
        state = cls(id=f"{bundle.revision}.{serial}", revision=bundle.revision, serial=serial, sha256=sha256,
                    size=size, object=object, stages=stages)
        return state._step("start", actor)


# --------------------------------------------------------------------------- rollback


def rollback_revision(old: str, serial: int) -> str:
    """``<old>.rollback.<serial>``: a new, valid revision name (1-128 of ``[A-Za-z0-9._-]``)."""
    return f"{old[:96]}.rollback.{serial}"


def restored_archive(old: Bundle, *, serial: int, rolled_back_from: str | None, signer: Signer) -> bytes:
    """Old content under a new revision and a newer serial, signed by ``signer`` (the plane).

    Only ``.manifest`` changes (revision, ``metadata.serial``, ``metadata.rollback_of``,
    ``metadata.rolled_back_from``); every policy and data file is the old one, byte for byte.
    """
    metadata: dict[str, Any] = {"rollback_of": old.revision}
    if rolled_back_from is not None:
        metadata["rolled_back_from"] = rolled_back_from
    return build_bundle(dict(old.files), rollback_revision(old.revision, serial), signing_key=signer,
                        metadata=metadata, serial=serial)


def next_serial(*current: int | None) -> int:
    """A serial newer than every one given and not older than now (ms), like ``bundle publish``."""
    return max([int(time.time() * 1000), *((c + 1) for c in current if c is not None)])
