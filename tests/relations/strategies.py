"""Hypothesis strategies for tuples; ids lean on the characters that need escaping."""

from __future__ import annotations

from hypothesis import strategies as st
from tenantguard.relations import Relationship

names = st.one_of(
    st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True),
    st.from_regex(r"[a-z][a-z0-9_]{0,63}", fullmatch=True),
)
ids = st.one_of(
    st.text(alphabet="aZ09_-.@+=|", min_size=1, max_size=8),  # escape-heavy, collision-prone
    st.from_regex(r"[A-Za-z0-9_\-.@+=|]{1,256}", fullmatch=True),
    st.just("E2"),  # looks like the tail of an escape
    st.just("=2E"),
)


@st.composite
def relationships(draw: st.DrawFn, tenant: st.SearchStrategy[str] = names) -> Relationship:
    subject = f"{draw(names)}:{draw(ids)}"
    if draw(st.booleans()):
        subject += f"#{draw(names)}"
    return Relationship(draw(tenant), f"{draw(names)}:{draw(ids)}", draw(names), subject)
