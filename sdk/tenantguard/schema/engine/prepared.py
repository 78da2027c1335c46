"""What the engine precomputes once per schema, so each query prunes instead of searching.

For every (type, relation): the tuple shapes it accepts (so tuples the schema no longer
allows are skipped, as OpenFGA's ``FilterInvalidTuples`` and SpiceDB's schema-checked reads
skip them), which subject kinds can reach it at all (a check for ``user:anne`` on a relation
only groups reach answers denied without reading), and the reverse edges lookups walk from
a subject up to the objects it reaches.

A subject kind is ``(type, relation)``: ``user:anne`` and ``user:*`` are ``("user", None)``,
``group:eng#member`` is ``("group", "member")``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from tenantguard.schema.model import Arrow, Computed, Direct, Exclusion, Expr, Intersection, Schema, Union

Kind = tuple[str, str | None]
Node = tuple[str, str]  # (type, relation)


def walk(expr: Expr) -> Iterator[Expr]:
    """Every sub-expression, depth first."""
    yield expr
    if isinstance(expr, Union | Intersection):
        for child in expr.children:
            yield from walk(child)
    elif isinstance(expr, Exclusion):
        yield from walk(expr.base)
        yield from walk(expr.subtract)


@dataclass
class Prepared:
    schema: Schema
    # (type, relation) -> accepted (subject type, subject relation | "*" | None, condition | None)
    accepts: dict[Node, frozenset[tuple[str, str | None, str | None]]] = field(default_factory=dict)
    # (type, relation) -> subject kinds that can be in it (including itself as a userset)
    reach: dict[Node, frozenset[Kind]] = field(default_factory=dict)
    # reverse edges for lookups
    direct_by_kind: dict[tuple[str, str | None], list[Node]] = field(default_factory=lambda: defaultdict(list))
    computed_users: dict[Node, list[str]] = field(default_factory=lambda: defaultdict(list))
    # (subject type, computed) -> (type, relation, tupleset, the tupleset's subject relation | None): the
    # objects whose arrow reaches a subject object, read by the subject text the tuple names
    arrow_users: dict[Node, list[tuple[str, str, str, str | None]]] = field(default_factory=lambda: defaultdict(list))
    # (type, relation) -> (its rewrite, the kinds that reach it): check's one lookup per node
    nodes: dict[Node, tuple[Expr, frozenset[Kind]]] = field(default_factory=dict)
    # (type, relation) -> (the subject kinds a tuple may name, (type, relation | "*" | None); whether
    # any is a userset): which point reads and userset reads a direct check can skip
    direct_shapes: dict[Node, tuple[frozenset[Kind], bool]] = field(default_factory=dict)


def prepare(schema: Schema) -> Prepared:
    p = Prepared(schema)
    for tname, t in schema.types.items():
        for rname, rel in t.relations.items():
            p.accepts[(tname, rname)] = frozenset(
                (ref.type, "*" if ref.wildcard else ref.relation, ref.condition) for ref in rel.allowed)
            kinds = frozenset((ref.type, "*" if ref.wildcard else ref.relation) for ref in rel.allowed)
            p.direct_shapes[(tname, rname)] = (kinds, any(r not in (None, "*") for _, r in kinds))
            for ref in rel.allowed:
                key = (ref.type, "*" if ref.wildcard else ref.relation)
                if (tname, rname) not in p.direct_by_kind[key]:
                    p.direct_by_kind[key].append((tname, rname))
            for e in walk(rel.rewrite):
                if isinstance(e, Computed) and rname not in p.computed_users[(tname, e.relation)]:
                    p.computed_users[(tname, e.relation)].append(rname)
                elif isinstance(e, Arrow):
                    for ref in schema.types[tname].relations[e.tupleset].allowed if e.tupleset in t.relations else ():
                        if not ref.wildcard:  # an arrow walks to a userset subject's object too
                            entry = (tname, rname, e.tupleset, ref.relation)
                            if entry not in p.arrow_users[(ref.type, e.computed)]:
                                p.arrow_users[(ref.type, e.computed)].append(entry)
    _reach(p)
    return p


def _reach(p: Prepared) -> None:
    schema = p.schema
    reach: dict[Node, set[Kind]] = {node: {node} for node in p.accepts}

    def contribs(tname: str, rname: str, expr: Expr) -> set[Kind]:
        out: set[Kind] = set()
        for e in walk(expr):
            if isinstance(e, Direct):
                for st, sr, _ in p.accepts[(tname, rname)]:
                    out.add((st, None if sr == "*" else sr))
                    if sr not in (None, "*"):
                        out |= reach.get((st, sr), set())
            elif isinstance(e, Computed):
                out |= reach.get((tname, e.relation), set())
            elif isinstance(e, Arrow):
                for st, sr, _ in p.accepts.get((tname, e.tupleset), ()):
                    if sr != "*":
                        out |= reach.get((st, e.computed), set())
        return out

    changed = True
    while changed:
        changed = False
        for tname, t in schema.types.items():
            for rname, rel in t.relations.items():
                new = contribs(tname, rname, rel.rewrite)
                cur = reach[(tname, rname)]
                if not new <= cur:
                    cur |= new
                    changed = True
    p.reach = {node: frozenset(kinds) for node, kinds in reach.items()}
    p.nodes = {(tname, rname): (rel.rewrite, p.reach[(tname, rname)])
               for tname, t in schema.types.items() for rname, rel in t.relations.items()}
