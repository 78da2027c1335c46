"""Per-query bounds, so one query cannot run away with the sidecar.

Depth follows each dialect's engine (OpenFGA's resolve node limit 25, SpiceDB's dispatch
depth 50): exceeding it is a ``ResolutionTooComplex`` error, never a wrong answer. The step
budget counts every tuple read and every node visited; exceeding it is ``QueryTooBroad``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenantguard.schema.engine.errors import QueryTooBroad
from tenantguard.schema.model import Dialect

DEPTH = {"openfga": 25, "spicedb": 50}


@dataclass(frozen=True, slots=True)
class Limits:
    """``max_depth`` None means the dialect's own limit."""

    max_depth: int | None = None
    max_steps: int = 1_000_000
    max_page_size: int = 1000
    max_expression_chars: int = 4096
    max_context_items: int = 256

    def depth_for(self, dialect: Dialect) -> int:
        return self.max_depth if self.max_depth is not None else DEPTH[dialect]


class Budget:
    """A countdown of steps for one query (not thread-shared: one per call)."""

    __slots__ = ("left", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def spend(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise QueryTooBroad(f"query exceeded the step budget of {self.limit}", limit=self.limit)
