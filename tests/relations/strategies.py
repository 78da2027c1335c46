"""Hypothesis strategies for tuples; ids lean on the characters that need escaping."""

from __future__ import annotations

from hypothesis import strategies as st
from tenantguard.relations import Relationship
from tenantguard.relations.reads import TupleMeta

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


# Tuples with the extensions: wildcard subjects and meta (condition + context, expiry). Few
# names and ids, so tuples collide (rewrites, deletes, shared subjects) and every read has
# something to find.
small_names = st.sampled_from(["doc", "folder", "group", "user"])
small_relations = st.sampled_from(["viewer", "editor", "member"])
small_ids = st.sampled_from(["1", "2", "a.b", "x@y"])
contexts = st.dictionaries(
    st.sampled_from(["cidr", "n", "tags", "on"]),
    st.one_of(st.integers(-(2**63) + 1, 2**63 - 1), st.text(max_size=5), st.booleans(), st.none(),
              st.lists(st.integers(0, 9), max_size=3)),
    max_size=3,
)


@st.composite
def metas(draw: st.DrawFn) -> TupleMeta | None:
    """None (a plain tuple) half the time, else a condition, an expiry or both."""
    kind = draw(st.sampled_from(["plain", "plain", "condition", "expiry", "both"]))
    if kind == "plain":
        return None
    condition = draw(st.sampled_from(["ip_ok", "weekday"])) if kind != "expiry" else None
    context = draw(contexts) if condition is not None else {}
    expires_at = float(draw(st.integers(1, 4_102_444_800))) if kind != "condition" else None
    return TupleMeta(condition, context, expires_at)


@st.composite
def subjects(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["direct", "direct", "userset", "wildcard"]))
    base = draw(small_names)
    if kind == "wildcard":
        return f"{base}:*"
    subject = f"{base}:{draw(small_ids)}"
    return subject + (f"#{draw(small_relations)}" if kind == "userset" else "")


two_tenants = st.sampled_from(["acme", "globex"])


@st.composite
def rich_relationships(draw: st.DrawFn, tenant: st.SearchStrategy[str] = two_tenants) -> Relationship:
    """A tuple that may have a wildcard subject and meta."""
    return Relationship(draw(tenant), f"{draw(small_names)}:{draw(small_ids)}", draw(small_relations),
                        draw(subjects()), draw(metas()))


rich_changes = st.lists(st.tuples(st.sampled_from(["write", "write", "delete"]), rich_relationships()),
                        min_size=1, max_size=40)
