"""Three-valued results (allowed / denied / conditional) and how rewrites combine them.

SpiceDB's caveats make a check three-valued: a caveat whose context is missing leaves the
answer "conditional" with the missing names, and union/intersection/exclusion combine such
answers as boolean logic over unknowns (``A or unknown`` is A when A is true, unknown
otherwise). OpenFGA adds one more bit: a branch that ran into a cycle answers false with
``cycle`` set, and an exclusion with a cycle on either side is false (openfga
``internal/graph/check.go`` ``exclusion``); the bit is kept so that rule can apply higher up.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Decision(StrEnum):
    ALLOWED = "allowed"
    DENIED = "denied"
    CONDITIONAL = "conditional"


@dataclass(frozen=True, slots=True)
class Outcome:
    decision: Decision
    missing: frozenset[str] = frozenset()
    cycle: bool = False

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOWED

    @property
    def denied(self) -> bool:
        return self.decision is Decision.DENIED


ALLOW = Outcome(Decision.ALLOWED)
DENY = Outcome(Decision.DENIED)
DENY_CYCLE = Outcome(Decision.DENIED, cycle=True)


def conditional(missing: frozenset[str]) -> Outcome:
    return Outcome(Decision.CONDITIONAL, missing)


def both(a: Outcome, b: Outcome) -> Outcome:
    """``a and b`` (a conditional tuple's condition and what the tuple leads to)."""
    if a.denied:
        return a
    if b.denied:
        return b
    if a.allowed:
        return b
    if b.allowed:
        return a
    return conditional(a.missing | b.missing)


class AnyOf:
    """Accumulates a union: allowed as soon as one branch is; conditional if one is."""

    __slots__ = ("conditional", "cycle", "missing")

    def __init__(self) -> None:
        self.missing: set[str] = set()
        self.cycle = False
        self.conditional = False

    def add(self, o: Outcome) -> bool:
        """Adds one branch; True when the union is decided (allowed)."""
        if o.allowed:
            return True
        if o.denied:
            self.cycle = self.cycle or o.cycle
        else:
            self.conditional = True
            self.missing |= o.missing
        return False

    def result(self) -> Outcome:
        if self.conditional:
            return conditional(frozenset(self.missing))
        return DENY_CYCLE if self.cycle else DENY


def exclude(base: Outcome, subtract: Outcome) -> Outcome:
    """``base but not subtract``: a cycle on the subtracted side denies (OpenFGA)."""
    if base.denied:
        return base
    if subtract.cycle:
        return DENY_CYCLE
    if subtract.allowed:
        return DENY
    if subtract.denied:
        return base
    return conditional(base.missing | subtract.missing)
