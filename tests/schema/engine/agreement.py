"""Comparing two engines over every question a schema allows: check, both lookups (with their
order) and check_relations, for the users and ids the random models draw from.

Used by the tests of optimisations that must never change an answer (the memo, the cycle cut):
the optimised engine against its reference, an error being the same error.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from tenantguard.relations.reads import MemoryReads
from tenantguard.schema import Schema, SchemaError
from tenantguard.schema.engine import EngineError, SchemaEngine

from tests.schema.engine.differential import IDS, USERS, load_as_openfga_stores, random_model


def loadable_model(rng: random.Random) -> Schema:
    """The first model the grammar draws that loads (it draws many that OpenFGA refuses too)."""
    while True:
        try:
            return load_as_openfga_stores(random_model(rng))
        except SchemaError:
            continue


def answer(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except EngineError as e:
        return ("error", type(e).__name__)


OVER_BUDGET = ("error", "QueryTooBroad")


def agree(a: Any, b: Any) -> bool:
    """Equal answers, or one side ran out of steps: the step budget is a resource bound the memo
    is meant to change (it saves steps), so a budget error on either side proves nothing."""
    return a == b or OVER_BUDGET in (a, b)


def same_everywhere(on: SchemaEngine, off: SchemaEngine, reads: MemoryReads,
                     context: dict[str, Any] | None = None) -> int:
    """Asserts ``on`` (optimised) answers as ``off`` (its reference) every check and lookup over the
    schema; returns how many single questions both sides answered within the step budget."""
    asked = 0
    for tname, t in on.schema.types.items():
        if tname == "user":
            continue
        for rname in t.relations:
            for user in (*USERS, "user:*"):
                if user != "user:*":
                    for oid in IDS:
                        obj = f"{tname}:{oid}"
                        a = answer(lambda e=on, o=obj, r=rname, u=user: e.check(reads, o, r, u, context=context))
                        b = answer(lambda e=off, o=obj, r=rname, u=user: e.check(reads, o, r, u, context=context))
                        assert agree(a, b), (obj, rname, user, a, b)
                        asked += OVER_BUDGET not in (a, b)
                a = answer(lambda e=on, r=rname, u=user, tn=tname: e.lookup_resources(
                    reads, tn, r, u, context=context, page_size=1000).items)
                b = answer(lambda e=off, r=rname, u=user, tn=tname: e.lookup_resources(
                    reads, tn, r, u, context=context, page_size=1000).items)
                assert agree(a, b), (tname, rname, user, a, b)
                asked += OVER_BUDGET not in (a, b)
            for oid in IDS:
                a = answer(lambda e=on, o=f"{tname}:{oid}", r=rname: e.lookup_subjects(
                    reads, o, r, "user", context=context, page_size=1000).items)
                b = answer(lambda e=off, o=f"{tname}:{oid}", r=rname: e.lookup_subjects(
                    reads, o, r, "user", context=context, page_size=1000).items)
                assert agree(a, b), (tname, oid, rname, a, b)
                asked += OVER_BUDGET not in (a, b)
        for oid, user in ((oid, user) for oid in IDS for user in USERS):
            # every relation of the object in one evaluation (input.permissions) == one check each
            together = answer(lambda e=on, o=f"{tname}:{oid}", u=user, rs=list(t.relations): e.check_relations(
                reads, o, rs, u, context=context))
            if not isinstance(together, tuple):
                for rname, got in together.items():
                    alone = answer(lambda o=f"{tname}:{oid}", r=rname, u=user: off.check(
                        reads, o, r, u, context=context))
                    assert agree(got, alone), (oid, rname, got, alone)
                asked += 1
    return asked
