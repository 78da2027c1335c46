"""The internal form of a relationship schema (OpenFGA and SpiceDB both compile to it).

Vocabulary follows Zanzibar. A type has relations; each relation has a rewrite (an
expression tree) and, when tuples may be written for it directly, the subject types
those tuples may name (``allowed``). OpenFGA's ``define viewer: [user] or owner`` is
``Union(Direct(), Computed("owner"))`` with ``allowed=(SubjectRef("user"),)``; SpiceDB's
``relation viewer: user`` is ``Direct()`` with the same ``allowed``, and
``permission view = viewer + owner`` is ``Union(Computed("viewer"), Computed("owner"))``
with ``allowed=()`` and ``is_permission=True``.

The form is plain frozen data: no parsing, no evaluation, so the parsers, the
engine, the transformer and the wire format all share it without importing each other.
``dialect`` records which language the schema came from, because the two engines
differ in a few documented corners (cycles, depth limits) and the engine follows the
source language's engine there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Dialect = Literal["openfga", "spicedb"]


@dataclass(frozen=True, slots=True)
class Position:
    """1-based line and column in the source text (0, 0 when the schema came from JSON)."""

    line: int = 0
    column: int = 0


@dataclass(frozen=True, slots=True)
class SubjectRef:
    """One allowed subject on a directly assignable relation.

    ``user`` -> SubjectRef("user"); ``user:*`` -> wildcard=True; ``group#member`` ->
    relation="member"; ``user with ip_ok`` -> condition="ip_ok"; SpiceDB's
    ``user with expiration`` -> expiration=True (both may be set: ``user with c and expiration``).
    ``pos`` is where the restriction starts and ``condition_pos`` where its condition's name does
    (for error messages only: they take no part in equality).
    """

    type: str
    relation: str | None = None
    wildcard: bool = False
    condition: str | None = None
    expiration: bool = False
    pos: Position = field(default=Position(), compare=False)
    condition_pos: Position = field(default=Position(), compare=False)


class Expr:
    """Base of rewrite expressions (a closed set: the classes below)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Direct(Expr):
    """The relation's own tuples (OpenFGA ``[types]`` / ``this``; a SpiceDB ``relation``)."""


@dataclass(frozen=True, slots=True)
class Computed(Expr):
    """Another relation or permission on the same object (OpenFGA ``owner``; SpiceDB ``owner``)."""

    relation: str
    pos: Position = field(default=Position(), compare=False)


@dataclass(frozen=True, slots=True)
class Arrow(Expr):
    """Tuple-to-userset: for each subject S of ``tupleset`` on this object, S's ``computed``.

    OpenFGA ``viewer from parent`` -> Arrow("parent", "viewer"); SpiceDB
    ``parent->view`` and ``parent.any(view)`` -> Arrow("parent", "view");
    SpiceDB ``parent.all(view)`` -> Arrow("parent", "view", all=True) (every subject of
    ``parent`` must have ``view``, and there must be at least one).
    ``pos`` is where the arrow starts, ``tupleset_pos`` where its tupleset's name does.
    """

    tupleset: str
    computed: str
    all: bool = False
    pos: Position = field(default=Position(), compare=False)
    tupleset_pos: Position = field(default=Position(), compare=False)


@dataclass(frozen=True, slots=True)
class Union(Expr):
    children: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Intersection(Expr):
    children: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Exclusion(Expr):
    """``base but not subtract`` (OpenFGA) / ``base - subtract`` (SpiceDB)."""

    base: Expr
    subtract: Expr


@dataclass(frozen=True, slots=True)
class Nil(Expr):
    """SpiceDB's ``nil``: nobody."""


@dataclass(frozen=True, slots=True)
class Relation:
    name: str
    rewrite: Expr
    allowed: tuple[SubjectRef, ...] = ()
    is_permission: bool = False
    pos: Position = field(default=Position(), compare=False)


@dataclass(frozen=True, slots=True)
class TypeDef:
    name: str
    relations: Mapping[str, Relation]
    pos: Position = field(default=Position(), compare=False)


@dataclass(frozen=True, slots=True)
class Param:
    """A typed condition/caveat parameter; ``type`` is a CEL type spelled as in the source
    (``int``, ``uint``, ``double``, ``bool``, ``string``, ``bytes``, ``duration``,
    ``timestamp``, ``ipaddress``, ``list<T>``, ``map<T>``, ``any``)."""

    name: str
    type: str


@dataclass(frozen=True, slots=True)
class Condition:
    """An OpenFGA condition or SpiceDB caveat: a CEL boolean over typed parameters."""

    name: str
    params: tuple[Param, ...]
    expression: str
    pos: Position = field(default=Position(), compare=False)
    expression_pos: Position = field(default=Position(), compare=False)  # where the CEL text starts


@dataclass(frozen=True, slots=True)
class Schema:
    types: Mapping[str, TypeDef]
    conditions: Mapping[str, Condition]
    dialect: Dialect

    def relation(self, type_name: str, relation: str) -> Relation | None:
        """The relation or permission ``relation`` of ``type_name``, or None."""
        t = self.types.get(type_name)
        return None if t is None else t.relations.get(relation)
