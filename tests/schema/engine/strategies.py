"""Hypothesis strategies for the engine's property tests (a helper module, not a test module)."""

from __future__ import annotations

from hypothesis import strategies as st
from tenantguard.schema import Schema

IDS = ("a", "b", "c")


def tuples_for(schema: Schema, max_size: int = 25) -> st.SearchStrategy[list[tuple[str, str, str]]]:
    """Random tuples of the shapes the schema's directly assignable relations accept, over a
    few ids per type so that paths, cycles and shared subjects are common."""
    shapes: list[tuple[str, str, str, str | None, bool]] = []
    for tname, t in schema.types.items():
        for rname, rel in t.relations.items():
            for ref in rel.allowed:
                if ref.condition is None:
                    shapes.append((tname, rname, ref.type, ref.relation, ref.wildcard))

    def build(shape: tuple[str, str, str, str | None, bool], oid: str, sid: str) -> tuple[str, str, str]:
        tname, rname, stype, srel, wild = shape
        subject = f"{stype}:*" if wild else f"{stype}:{sid}" + (f"#{srel}" if srel else "")
        return (f"{tname}:{oid}", rname, subject)

    one = st.builds(build, st.sampled_from(shapes), st.sampled_from(IDS), st.sampled_from(IDS))
    return st.lists(one, max_size=max_size, unique=True)
