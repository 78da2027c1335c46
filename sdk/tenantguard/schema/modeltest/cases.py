"""What a model test file asks, whichever tool's format it came in.

``fga model test`` store files (``.fga.yaml``) and ``zed validate`` files both reduce to:
a schema, the tuples every test sees, and tests, each with its own extra tuples and a list
of assertions. Each assertion keeps ``where`` (the file and the test or line it came from)
so a failure points back at the text the user wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tenantguard.relations.reads import TupleMeta
from tenantguard.schema.model import Schema

Expected = Literal["allowed", "denied", "conditional"]


@dataclass(frozen=True, slots=True)
class TupleSpec:
    """``object#relation@subject`` with its condition/expiry, as the file wrote it."""

    object: str
    relation: str
    subject: str
    meta: TupleMeta | None = None


@dataclass(frozen=True, slots=True)
class CheckAssertion:
    """``subject`` has (``allowed``), has not (``denied``) or may have (``conditional``)
    ``relation`` on ``object`` given ``context``."""

    object: str
    relation: str
    subject: str
    expected: Expected
    context: Mapping[str, Any] = field(default_factory=dict)
    where: str = ""


@dataclass(frozen=True, slots=True)
class ListObjectsAssertion:
    """The objects of ``object_type`` on which ``subject`` has ``relation`` are exactly ``expected``."""

    object_type: str
    relation: str
    subject: str
    expected: frozenset[str]
    context: Mapping[str, Any] = field(default_factory=dict)
    where: str = ""


@dataclass(frozen=True, slots=True)
class ListUsersAssertion:
    """The subjects matching ``user_filter`` (``type`` or ``type#relation``) that have ``relation``
    on ``object`` are exactly ``expected`` (wildcards included as ``type:*``)."""

    object: str
    relation: str
    user_filter: tuple[str, ...]
    expected: frozenset[str]
    context: Mapping[str, Any] = field(default_factory=dict)
    where: str = ""


@dataclass(frozen=True, slots=True)
class ExpectedSubject:
    """One line of a zed ``validation`` block: ``[user:anne] is <doc:1#viewer>``.

    ``caveated`` is the ``[...]`` marker; ``exceptions`` the ``- {user:bob}`` of a wildcard
    (each ``type:id`` with ``[...]`` kept in the string when caveated); ``via`` the
    relationships named after ``is`` (object#relation strings).
    """

    subject: str
    caveated: bool
    exceptions: frozenset[str]
    via: frozenset[str]
    where: str = ""


@dataclass(frozen=True, slots=True)
class ExpectedRelations:
    """A zed ``validation`` entry: exactly these subjects reach ``object#relation``."""

    object: str
    relation: str
    subjects: tuple[ExpectedSubject, ...]
    where: str = ""


Assertion = CheckAssertion | ListObjectsAssertion | ListUsersAssertion | ExpectedRelations


@dataclass(frozen=True, slots=True)
class TestCase:
    """One named test: extra tuples on top of the suite's, and what must hold."""

    name: str
    tuples: tuple[TupleSpec, ...] = ()
    assertions: tuple[Assertion, ...] = ()


@dataclass(frozen=True, slots=True)
class Suite:
    """A whole file: ``kind`` says which tool's format it was (``fga`` or ``zed``)."""

    path: str
    kind: Literal["fga", "zed"]
    schema: Schema
    tuples: tuple[TupleSpec, ...]
    tests: tuple[TestCase, ...]
    name: str = ""
