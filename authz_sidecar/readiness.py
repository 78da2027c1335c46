"""Whether a sidecar can decide, and why not: ``/ready``, the gRPC health service and the status.

Ready means nothing holds the decision core (a fed sidecar: its revocations replayed up to the
stream's end), a verified bundle is active, the plane runs the cell count this sidecar was
configured for, and (scoped sidecars) the relations of every cell in scope are loaded.
"""

from __future__ import annotations

import asyncio

from tenantguard.decision.core import DecisionCore
from tenantguard.relations import CellRelations


class Readiness:
    """The readiness of one sidecar, and a signal that it may have changed.

    ``changed`` is set whenever readiness may have changed (a bundle swap, a cell loaded, a
    scope problem found or gone), so the gRPC health service follows it at once; it is set on
    the serving loop's thread only.
    """

    def __init__(self, core: DecisionCore, relations: CellRelations, cells: int, *, fed: bool) -> None:
        self._core = core
        self._relations = relations
        self._cells = cells
        # cells whose relations are loaded (persisted state or a feed bootstrap); readiness of a
        # scoped sidecar waits for all of them. A sidecar without a feed holds what it was given.
        self.cells_bootstrapped: set[str] = set() if fed else set(relations.indexes)
        self.scope_problem: str | None = None  # e.g. the plane runs another cell count (the feed sets it)
        self.changed = asyncio.Event()
        core.hold.on_change = self.changed.set  # the feed changes the hold on the serving loop

    @property
    def ready(self) -> bool:
        """Whether this sidecar can decide (``/ready``, gRPC health): nothing holds the core (e.g.
        revocations not replayed), a verified bundle is active, the plane runs the same cell count,
        and (scoped sidecars) every cell in scope is loaded."""
        return (self._core.hold.current is None and self._core.ready and self.scope_problem is None
                and not self._cells_pending())

    def reason(self) -> str | None:
        """Why :attr:`ready` is False, for ``/ready`` and the status; None when ready."""
        held = self._core.hold.current
        if held is not None:
            return held.message
        if self.scope_problem is not None:
            return self.scope_problem
        if not self._core.ready:
            return "no verified bundle is active"
        pending = self._cells_pending()
        if pending:
            return f"relations of cells {', '.join(pending[:8])} not bootstrapped yet"
        return None

    def reason_code(self) -> str | None:
        """:meth:`reason` as a stable machine-readable code; None when ready."""
        held = self._core.hold.current
        if held is not None:
            return held.code
        if self.scope_problem is not None:
            return "cell_count_mismatch"
        if not self._core.ready:
            return "no_active_bundle"
        return "cells_not_bootstrapped" if self._cells_pending() else None

    def cell_bootstrapped(self, cell: str) -> None:
        """The feed loaded ``cell`` (snapshot, stream or persisted state)."""
        if cell not in self.cells_bootstrapped:
            self.cells_bootstrapped.add(cell)
            self.changed.set()

    def _cells_pending(self) -> list[str]:
        if self._relations.scope.unscoped and self._cells == 1:
            return []  # unscoped single-cell sidecars keep their behaviour: ready with a bundle
        return [c for c in self._relations.indexes if c not in self.cells_bootstrapped]
