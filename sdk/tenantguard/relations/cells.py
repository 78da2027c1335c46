"""Relations split by tenant cell, and the scope a reader keeps of them.

The tenant space is split into a fixed number of cells (``tenantguard.feed.topology.cell_of``).
Every cell has its own relations sequence, so a consistency token means "the relations
sequence of the tenant's cell". :class:`CellRelations` holds one :class:`RelationIndex`
per cell in scope and presents the read API of one index, routing by tenant:

* ``tenant(t)`` is the cell index's view (its ``seq`` is the cell's sequence); a tenant of
  a cell outside the scope raises :class:`OutOfScope`, never an empty answer;
* ``scope`` (a :class:`RelationScope`) also names the object types kept; the decision
  core denies questions about other types ``out_of_scope`` (``tenantguard.decision.core``).

With one cell and no type scope everything behaves as a single index.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tenantguard.errors import TenantGuardError
from tenantguard.feed.topology import cell_names, cell_of
from tenantguard.relations.index import IndexView, RelationIndex, TenantRelations
from tenantguard.relations.model import ChangeBatch, Relationship
from tenantguard.relations.reads import TupleMeta

OUT_OF_SCOPE = "out_of_scope"


class OutOfScope(TenantGuardError):
    """A question about a tenant or an object type this reader does not hold: it is denied,
    never answered from missing data."""

    code = OUT_OF_SCOPE
    http_status = 403


class CellsMixed(TenantGuardError):
    """A write batch names tenants of more than one cell: every cell has its own sequence, so a
    batch (one consistency token) belongs to exactly one."""

    code = "cells_mixed"
    http_status = 422


@dataclass(frozen=True, slots=True)
class RelationScope:
    """What a reader holds: ``cells`` in a system of ``total`` cells, and tuples whose object type
    is in ``types`` (None: every type)."""

    total: int = 1
    cells: frozenset[str] | None = None  # None: every cell
    types: frozenset[str] | None = None  # None: every object type

    def __post_init__(self) -> None:
        known = set(cell_names(self.total))
        if self.cells is not None:
            if not self.cells:
                raise ValueError("a scope needs at least one cell")
            unknown = sorted(self.cells - known)
            if unknown:
                raise ValueError(f"cells {unknown[:5]} are not cells of a {self.total}-cell system "
                                 f"(c0..c{self.total - 1})")
        if self.types is not None and not self.types:
            raise ValueError("a type scope needs at least one object type")

    @property
    def cell_list(self) -> tuple[str, ...]:
        """The cells in scope, in cell order."""
        return tuple(c for c in cell_names(self.total) if self.cells is None or c in self.cells)

    @property
    def unscoped(self) -> bool:
        return self.cells is None and self.types is None

    def cell(self, tenant: str) -> str:
        return cell_of(tenant, self.total)

    def holds_tenant(self, tenant: str) -> bool:
        return self.cells is None or cell_of(tenant, self.total) in self.cells

    def holds_type(self, object_type: str) -> bool:
        return self.types is None or object_type in self.types

    def holds_object(self, obj: str) -> bool:
        """``obj`` is ``type:id``; a userset ``type:id#rel`` counts by its type too."""
        return self.types is None or obj.partition(":")[0] in self.types

    def keeps(self, rel: Relationship) -> bool:
        """Whether a tuple is held: its object type is in scope (its tenant's cell is checked by
        the feed, which only follows cells in scope)."""
        return self.types is None or rel.object.partition(":")[0] in self.types

    def filter(self, batch: ChangeBatch) -> ChangeBatch:
        """``batch`` without the changes of object types out of scope (same ``seq``: the cell's
        sequence moves on whatever the batch held)."""
        if self.types is None:
            return batch
        kept = tuple(c for c in batch.changes if self.keeps(c.rel))
        return batch if len(kept) == len(batch.changes) else ChangeBatch(batch.seq, kept)

    def to_wire(self) -> dict[str, object]:
        return {"cells": self.total, "scope_cells": list(self.cell_list) if self.cells is not None else None,
                "scope_types": sorted(self.types) if self.types is not None else None}


class CellRelations:
    """One :class:`RelationIndex` per cell in scope, read as one relation source.

    ``applied_seq`` is a *version* of the whole (the sum of the cells' sequences, so it moves
    with every change and equals the only cell's sequence with one cell); consistency tokens
    are per cell (:meth:`seq_of`).
    """

    def __init__(self, scope: RelationScope | None = None) -> None:
        self.scope = scope or RelationScope()
        self.indexes: dict[str, RelationIndex] = {cell: RelationIndex() for cell in self.scope.cell_list}

    # -- routing -----------------------------------------------------------------------------

    def cell(self, tenant: str) -> str:
        return self.scope.cell(tenant)

    def index_of(self, tenant: str) -> RelationIndex:
        """The index holding ``tenant``'s cell; :class:`OutOfScope` when that cell is not held."""
        cell = self.scope.cell(tenant)
        index = self.indexes.get(cell)
        if index is None:
            raise OutOfScope(f"tenant {tenant[:64]!r} is in cell {cell}, outside this reader's cells", cell=cell)
        return index

    def index(self, cell: str) -> RelationIndex:
        return self.indexes[cell]

    def replace(self, cell: str, index: RelationIndex) -> None:
        """Swap one cell's index (a snapshot load): one reference assignment."""
        if cell not in self.indexes:
            raise KeyError(cell)
        self.indexes[cell] = index

    def apply(self, cell: str, batch: ChangeBatch) -> bool:
        """Apply the next batch of ``cell`` (object types out of scope dropped)."""
        return self.indexes[cell].apply(self.scope.filter(batch))

    def seq_of(self, tenant: str | None) -> int | None:
        """The consistency token a question about ``tenant`` is answered at: its cell's sequence;
        the lowest of the cells in scope when no tenant is known; None outside the scope."""
        if tenant is None:
            return min(index.applied_seq for index in self.indexes.values())
        index = self.indexes.get(self.scope.cell(tenant))
        return None if index is None else index.applied_seq

    def seqs(self) -> dict[str, int]:
        return {cell: index.applied_seq for cell, index in self.indexes.items()}

    # -- the read API of one index -----------------------------------------------------------

    @property
    def applied_seq(self) -> int:
        if len(self.indexes) == 1:
            return next(iter(self.indexes.values())).applied_seq
        return sum(index.applied_seq for index in self.indexes.values())

    def tenant(self, tenant: str) -> TenantRelations:
        return self.index_of(tenant).tenant(tenant)

    def check(self, tenant: str, object: str, relation: str, subject: str) -> bool:
        return self.index_of(tenant).check(tenant, object, relation, subject)

    def relations_of(self, tenant: str, subject: str) -> dict[str, builtins.list[str]]:
        return self.index_of(tenant).relations_of(tenant, subject)

    def list(self, tenant: str, object: str | None = None, relation: str | None = None,
             subject: str | None = None) -> builtins.list[Relationship]:
        return self.index_of(tenant).list(tenant, object, relation, subject)

    def count(self, tenant: str | None = None) -> int:
        if tenant is not None:
            return self.index_of(tenant).count(tenant)
        return sum(index.count() for index in self.indexes.values())

    def view(self) -> CellsView:
        return CellsView({cell: index.view() for cell, index in self.indexes.items()}, self.scope)

    def digest(self) -> str:
        return self.view().digest()


class CellsView:
    """Every cell's published state, frozen together (a pinned search, a digest)."""

    __slots__ = ("__weakref__", "_scope", "_views")

    def __init__(self, views: dict[str, IndexView], scope: RelationScope) -> None:
        self._views = views
        self._scope = scope

    @property
    def seq(self) -> int:
        if len(self._views) == 1:
            return next(iter(self._views.values())).seq
        return sum(v.seq for v in self._views.values())

    applied_seq = seq

    @property
    def scope(self) -> RelationScope:
        return self._scope

    @property
    def count(self) -> int:
        return sum(v.count for v in self._views.values())

    def cell_view(self, cell: str) -> IndexView:
        return self._views[cell]

    def tenant(self, tenant: str) -> TenantRelations:
        view = self._views.get(self._scope.cell(tenant))
        if view is None:
            raise OutOfScope(f"tenant {tenant[:64]!r} is outside this reader's cells", cell=self._scope.cell(tenant))
        return view.tenant(tenant)

    def tenants(self) -> builtins.list[str]:
        return sorted(t for v in self._views.values() for t in v.tenants())

    def rows(self, tenant: str) -> Iterator[tuple[str, builtins.list[tuple[str, builtins.list[str]]]]]:
        view = self._views.get(self._scope.cell(tenant))
        return iter(()) if view is None else view.rows(tenant)

    def meta_rows(self, tenant: str) -> builtins.list[tuple[str, str, str, TupleMeta]]:
        """As ``IndexView.meta_rows``: the tenant's tuples with a condition or an expiry."""
        view = self._views.get(self._scope.cell(tenant))
        return [] if view is None else view.meta_rows(tenant)

    def digest(self) -> str:
        """With one cell, that cell's digest; otherwise SHA-256 over ``cell=digest`` lines."""
        if len(self._views) == 1:
            return next(iter(self._views.values())).digest()
        return hashlib.sha256("".join(f"{c}={v.digest()}\n" for c, v in self._views.items()).encode()).hexdigest()

    def digests(self) -> dict[str, str]:
        return {cell: view.digest() for cell, view in self._views.items()}


def scope_of(total: int, cells: Iterable[str] | None, types: Iterable[str] | None) -> RelationScope:
    """A :class:`RelationScope` from settings (empty or None: everything)."""
    cell_set = frozenset(cells) if cells else None
    type_set = frozenset(types) if types else None
    return RelationScope(total, cell_set, type_set)
