"""Expand: the tree that says why, as JSON-able dicts.

Each node is ``{"object", "relation", "tree"}`` where ``tree`` mirrors the rewrite:
``{"union": [...]}``, ``{"intersection": [...]}``, ``{"exclusion": {"base", "subtract"}}``,
``{"computed": node}``, ``{"arrow": {"tupleset", "computed", "all", "children": [node...]}}``,
``{"tuples": [{"subject", "condition"?, "expires_at"?, "userset"?: node}]}`` (the leaves), and
``{"nil": true}``. Unlike OpenFGA's one-level Expand this goes down to the tuples; a node
already open on the current path is marked ``{"cycle": true}`` instead of repeated, and the
dialect's depth limit and the step budget apply as in check.
"""

from __future__ import annotations

from typing import Any

from tenantguard.schema.engine.check import Evaluation, arrow_target
from tenantguard.schema.engine.errors import ResolutionTooComplex, UnknownRelation
from tenantguard.schema.model import Arrow, Computed, Direct, Exclusion, Expr, Intersection, Nil, Union


def expand(ev: Evaluation, obj: str, relation: str, depth: int = 0) -> dict[str, Any]:
    if depth >= ev.max_depth:
        raise ResolutionTooComplex(f"expansion deeper than {ev.max_depth} levels", limit=ev.max_depth)
    ev.budget.spend()
    type_name = obj.partition(":")[0]
    rel = ev.schema.relation(type_name, relation)
    if rel is None:
        raise UnknownRelation(f"relation {relation!r} undefined for type {type_name!r}",
                              type=type_name, relation=relation)
    node: dict[str, Any] = {"object": obj, "relation": relation}
    key = (obj, relation, "")
    if key in ev.path:
        node["cycle"] = True
        return node
    ev.path.add(key)
    try:
        node["tree"] = _tree(ev, obj, type_name, relation, rel.rewrite, depth)
    finally:
        ev.path.discard(key)
    return node


def _tree(ev: Evaluation, obj: str, type_name: str, relation: str, expr: Expr, depth: int) -> dict[str, Any]:
    if isinstance(expr, Direct):
        leaves: list[dict[str, Any]] = []
        for other, meta in ev.reads.subjects(obj, relation):
            ev.budget.spend()
            if not ev.valid(type_name, relation, other, meta):
                continue
            leaf: dict[str, Any] = {"subject": other}
            if meta is not None and meta.condition:
                leaf["condition"] = meta.condition
            if meta is not None and meta.expires_at is not None:
                leaf["expires_at"] = meta.expires_at
            s_obj, _, s_rel = other.partition("#")
            if s_rel:
                leaf["userset"] = expand(ev, s_obj, s_rel, depth + 1)
            leaves.append(leaf)
        return {"tuples": leaves}
    if isinstance(expr, Computed):
        return {"computed": expand(ev, obj, expr.relation, depth + 1)}
    if isinstance(expr, Arrow):
        children = []
        for other, meta in ev.reads.subjects(obj, expr.tupleset):
            ev.budget.spend()
            if other.endswith(":*") or not ev.valid(type_name, expr.tupleset, other, meta):
                continue
            target = arrow_target(other)
            if ev.schema.relation(target.partition(":")[0], expr.computed) is not None:
                child = expand(ev, target, expr.computed, depth + 1)
                if meta is not None and meta.condition:
                    child["condition"] = meta.condition
                children.append(child)
        return {"arrow": {"tupleset": expr.tupleset, "computed": expr.computed, "all": expr.all,
                          "children": children}}
    if isinstance(expr, Union):
        return {"union": [_tree(ev, obj, type_name, relation, c, depth) for c in expr.children]}
    if isinstance(expr, Intersection):
        return {"intersection": [_tree(ev, obj, type_name, relation, c, depth) for c in expr.children]}
    if isinstance(expr, Exclusion):
        return {"exclusion": {"base": _tree(ev, obj, type_name, relation, expr.base, depth),
                              "subtract": _tree(ev, obj, type_name, relation, expr.subtract, depth)}}
    if isinstance(expr, Nil):
        return {"nil": True}
    raise TypeError(f"unknown rewrite {expr!r}")
