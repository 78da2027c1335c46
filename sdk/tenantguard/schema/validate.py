"""Semantic checks on the internal form, one rule set per source language.

``validate_openfga`` follows OpenFGA's server-side model validation (``typesystem.NewAndValidate``,
which is what ``fga model validate`` runs): rewrites name defined relations, a tupleset is a
plain direct relation of concrete types, every relation has an entrypoint, and no relation
reaches itself through computed relations alone. ``validate_spicedb`` follows SpiceDB's schema
compiler and type system (``pkg/schema``): permissions versus relations, arrows over relations
without wildcards, caveats with used parameters, and no permission that only aliases itself.

Every refusal is a SchemaError whose ``rule`` is stable; positions come from the model's
``pos`` fields (0/absent for JSON input). Both functions return None or raise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from tenantguard.schema.errors import SchemaError
from tenantguard.schema.limits import check_counts
from tenantguard.schema.model import (
    Arrow,
    Computed,
    Condition,
    Direct,
    Exclusion,
    Expr,
    Intersection,
    Nil,
    Position,
    Relation,
    Schema,
    SubjectRef,
    TypeDef,
    Union,
)

CEL_TYPES = frozenset({"bool", "string", "int", "uint", "double", "bytes", "duration", "timestamp",
                       "ipaddress", "any"})
OPENFGA_PARAM_TYPES = frozenset({"bool", "string", "int", "uint", "double", "duration", "timestamp",
                                 "ipaddress", "any"})


def _err(message: str, rule: str, pos: Position | None = None) -> SchemaError:
    if pos is None or pos.line == 0:
        return SchemaError(message, rule=rule)
    return SchemaError(message, rule=rule, line=pos.line, column=pos.column)


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of a rewrite, depth first (iterative: trees from JSON may be deep)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (Union, Intersection)):
            stack.extend(reversed(node.children))
        elif isinstance(node, Exclusion):
            stack.extend((node.subtract, node.base))


def has_direct(expr: Expr) -> bool:
    return any(isinstance(n, Direct) for n in walk(expr))


def _count(schema: Schema) -> None:
    check_counts(len(schema.types), sum(len(t.relations) for t in schema.types.values()), len(schema.conditions))


def _bounded(check: str, call: Callable[[], None]) -> None:
    """Run a recursive check; a chain of references too long for Python's stack is a SchemaError."""
    try:
        call()
    except RecursionError:
        raise SchemaError(f"{check}: relations reference each other too deeply to validate", rule="too_deep") from None


def check_param_type(type_name: str, allowed: frozenset[str], where: str) -> None:
    """A CEL parameter type: a scalar, or ``list<T>``/``map<T>`` of one (OpenFGA: one level)."""
    m = re.fullmatch(r"(list|map)<(.+)>", type_name)
    inner = m.group(2) if m else type_name
    if inner not in allowed:
        raise SchemaError(f"{where}: unsupported parameter type '{type_name}'", rule="invalid_param_type")


# ------------------------------------------------------------------------------------------
# OpenFGA
# ------------------------------------------------------------------------------------------

def validate_openfga(schema: Schema) -> None:
    """Refuse what OpenFGA's ``NewAndValidate`` refuses (see the module docstring)."""
    _count(schema)
    _openfga_constructs(schema)
    _openfga_names(schema)
    ordered = [(schema.types[t], schema.types[t].relations[r])
               for t in sorted(schema.types) for r in sorted(schema.types[t].relations)]
    # OpenFGA checks one relation at a time; every name is checked first here so that the
    # graph walks below never meet an undefined one (the set of refused models is the same).
    for typedef, rel in ordered:
        _openfga_rewrite(schema, typedef, rel, rel.rewrite)
        _openfga_type_restrictions(schema, typedef, rel)
    budget = _Budget(ENTRYPOINT_STEPS)
    cyclic: dict[str, set[str]] = {}
    for typedef, rel in ordered:
        _bounded("entrypoints", lambda: _openfga_entrypoints(schema, typedef, rel, budget))  # noqa: B023
        _openfga_cycle(schema, typedef, rel, cyclic)
    _openfga_conditions(schema)


def _openfga_constructs(schema: Schema) -> None:
    """SpiceDB-only constructs that OpenFGA has no way to state."""
    for t in schema.types.values():
        for rel in t.relations.values():
            for node in walk(rel.rewrite):
                if isinstance(node, Nil):
                    raise _err(f"'{t.name}#{rel.name}': 'nil' has no OpenFGA equivalent", "unsupported", rel.pos)
                if isinstance(node, Arrow) and node.all:
                    raise _err(f"'{t.name}#{rel.name}': '{node.tupleset}.all({node.computed})' has no OpenFGA "
                               "equivalent (OpenFGA arrows mean any)", "unsupported", node.pos)
                if isinstance(node, (Union, Intersection)) and len(node.children) < 2:
                    raise _err(f"'{t.name}#{rel.name}': a union or intersection needs at least two children",
                               "invalid_rewrite", rel.pos)
            for ref in rel.allowed:
                if ref.expiration:
                    raise _err(f"'{t.name}#{rel.name}': 'with expiration' has no OpenFGA equivalent",
                               "unsupported", rel.pos)


def _openfga_names(schema: Schema) -> None:
    for t in schema.types.values():
        if not t.name:
            raise _err("a type name cannot be empty", "invalid_name", t.pos)
        if t.name in ("self", "this"):
            raise _err(f"a type cannot be named '{t.name}' ('self' and 'this' are reserved)", "reserved_name", t.pos)
        for rel in t.relations.values():
            if not rel.name:
                raise _err(f"type '{t.name}' has a relation with an empty name", "invalid_name", rel.pos)
            if rel.name in ("self", "this"):
                raise _err(f"a relation cannot be named '{rel.name}' ('self' and 'this' are reserved)",
                           "reserved_name", rel.pos)


def _openfga_rewrite(schema: Schema, t: TypeDef, rel: Relation, expr: Expr) -> None:
    for node in walk(expr):
        if isinstance(node, Computed):
            if node.relation == rel.name:
                raise _err(f"'{t.name}#{rel.name}' refers to itself without a direct assignment or tupleset",
                           "self_reference", node.pos)
            if node.relation not in t.relations:
                raise _err(f"relation '{node.relation}' is not defined on type '{t.name}'", "undefined_relation",
                           node.pos)
        elif isinstance(node, Arrow):
            _openfga_arrow(schema, t, node)


def _openfga_arrow(schema: Schema, t: TypeDef, arrow: Arrow) -> None:
    tupleset = t.relations.get(arrow.tupleset)
    if tupleset is None:
        raise _err(f"tupleset relation '{arrow.tupleset}' is not defined on type '{t.name}'",
                   "undefined_relation", arrow.pos)
    if not isinstance(tupleset.rewrite, Direct):
        raise _err(f"'{t.name}#{arrow.tupleset}' is used as a tupleset ('{arrow.computed} from {arrow.tupleset}') "
                   "and so must be a direct relation only", "tupleset_not_direct", arrow.pos)
    if not any(arrow.computed in getattr(schema.types.get(ref.type), "relations", {}) for ref in tupleset.allowed):
        kinds = ", ".join(ref.type for ref in tupleset.allowed)
        raise _err(f"relation '{arrow.computed}' in '{arrow.computed} from {arrow.tupleset}' is not defined on any "
                   f"type '{t.name}#{arrow.tupleset}' allows ({kinds})", "undefined_relation", arrow.pos)


def _tuplesets(t: TypeDef) -> set[str]:
    return {n.tupleset for rel in t.relations.values() for n in walk(rel.rewrite) if isinstance(n, Arrow)}


def _openfga_type_restrictions(schema: Schema, t: TypeDef, rel: Relation) -> None:
    assignable = has_direct(rel.rewrite)
    if assignable and not rel.allowed:
        raise _err(f"'{t.name}#{rel.name}' is directly assignable but allows no types", "missing_type_restrictions",
                   rel.pos)
    if not assignable and rel.allowed:
        raise _err(f"'{t.name}#{rel.name}' lists types but is not directly assignable", "unexpected_type_restrictions",
                   rel.pos)
    is_tupleset = rel.name in _tuplesets(t)
    for ref in rel.allowed:
        shown = _ref_text(ref)
        target = schema.types.get(ref.type)
        if target is None:
            raise _err(f"'{t.name}#{rel.name}' allows undefined type '{ref.type}'", "undefined_type", rel.pos)
        if (ref.relation or ref.wildcard) and is_tupleset:
            raise _err(f"'{t.name}#{rel.name}' is a tupleset, so it may only allow concrete types, not '{shown}'",
                       "invalid_tupleset_type", rel.pos)
        if ref.relation and ref.relation not in target.relations:
            raise _err(f"'{t.name}#{rel.name}' allows '{shown}' but '{ref.type}' has no relation '{ref.relation}'",
                       "undefined_relation", rel.pos)
        if ref.condition and ref.condition not in schema.conditions:
            raise _err(f"'{t.name}#{rel.name}' uses undefined condition '{ref.condition}'", "undefined_condition",
                       rel.pos)


def _ref_text(ref: SubjectRef) -> str:
    return ref.type + (":*" if ref.wildcard else f"#{ref.relation}" if ref.relation else "")


Visited = dict[str, dict[str, bool]]
# OpenFGA's entrypoint walk visits every path, so its work can double with each relation of a
# chain like ``r3: r2 or r1``; past this many steps (about a second here, and far longer in
# OpenFGA itself) a model is refused as too complex instead of hanging the plane.
ENTRYPOINT_STEPS = 500_000


class _Budget:
    def __init__(self, steps: int) -> None:
        self.left = steps

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise SchemaError("the model's relations reference each other in too many ways to validate "
                              f"(over {ENTRYPOINT_STEPS} steps)", rule="too_complex")


def _openfga_entrypoints(schema: Schema, t: TypeDef, rel: Relation, budget: _Budget) -> None:
    ok, loop = _entrypoints(schema, t.name, rel.name, rel.rewrite, {}, budget)
    if not ok:
        detail = "potential loop" if loop else "no entrypoints defined"
        raise _err(f"'{t.name}#{rel.name}' can never be satisfied by any tuple ({detail})", "no_entrypoint", rel.pos)


def _entrypoints(schema: Schema, tname: str, rname: str, expr: Expr, visited: Visited,
                 budget: _Budget) -> tuple[bool, bool]:
    """OpenFGA's ``hasEntrypoints``, kept step for step (including its shallow visited copies)
    so that exactly the same models pass: (has an entrypoint, failed because of a loop)."""
    budget.spend()
    v = dict(visited)
    if tname in v:
        v[tname][rname] = False
    else:
        v[tname] = {rname: False}
    relation = schema.relation(tname, rname)
    assert relation is not None  # earlier rules guarantee every name resolves
    if isinstance(expr, Direct):
        for ref in relation.allowed:
            if ref.relation is None or ref.wildcard:
                v[tname][rname] = True
                return True, False
            target = schema.relation(ref.type, ref.relation)
            assert target is not None
            if ref.relation in v.get(ref.type, {}):
                continue
            ok, _ = _entrypoints(schema, ref.type, ref.relation, target.rewrite, v, budget)
            if ok:
                return True, False
        return False, False
    if isinstance(expr, Computed):
        target = schema.relation(tname, expr.relation)
        assert target is not None
        if expr.relation in v.get(tname, {}):
            return v[tname][expr.relation], True
        return _entrypoints(schema, tname, expr.relation, target.rewrite, v, budget)
    if isinstance(expr, Arrow):
        tupleset = schema.relation(tname, expr.tupleset)
        assert tupleset is not None
        for ref in tupleset.allowed:
            target = schema.relation(ref.type, expr.computed)
            if target is None:
                continue
            seen = v.get(ref.type, {})
            if expr.computed in seen:
                if seen[expr.computed]:
                    return True, False
                continue
            ok, _ = _entrypoints(schema, ref.type, expr.computed, target.rewrite, v, budget)
            if ok:
                return True, False
        return False, False
    if isinstance(expr, Union):
        loop = False
        for child in expr.children:
            ok, child_loop = _entrypoints(schema, tname, rname, child, visited, budget)
            if ok:
                return True, False
            loop = loop or child_loop
        return False, loop
    if isinstance(expr, Intersection):
        for child in expr.children:
            ok, child_loop = _entrypoints(schema, tname, rname, child, visited, budget)
            if not ok:
                return False, child_loop
        return True, False
    if isinstance(expr, Exclusion):
        for child in (expr.base, expr.subtract):
            ok, child_loop = _entrypoints(schema, tname, rname, child, visited, budget)
            if not ok:
                return False, child_loop
        return True, False
    raise _err(f"'{tname}#{rname}': unexpected rewrite {type(expr).__name__}", "invalid_rewrite")


def _openfga_cycle(schema: Schema, t: TypeDef, rel: Relation, cyclic: dict[str, set[str]]) -> None:
    if t.name not in cyclic:
        cyclic[t.name] = _reaches_cycle(t)
    if rel.name in cyclic[t.name]:
        raise _err(f"'{t.name}#{rel.name}' reaches itself through computed relations only (a cycle)", "cycle", rel.pos)


def _computed_edges(rel: Relation) -> set[str]:
    """Relations of the same type this one names directly (not through tuples or ``from``)."""
    return {n.relation for n in walk(rel.rewrite) if isinstance(n, Computed)}


def _reaches_cycle(t: TypeDef) -> set[str]:
    """Relations of ``t`` from which a path of computed relations reaches a cycle.

    This is exactly what OpenFGA's ``hasCycle`` finds (a depth-first walk over every path that
    stops when a path revisits a relation), computed in linear time by peeling off relations
    whose computed references all lead to dead ends; what remains reaches a cycle.
    """
    edges = {name: _computed_edges(rel) & t.relations.keys() for name, rel in t.relations.items()}
    users: dict[str, set[str]] = {name: set() for name in edges}
    for name, targets in edges.items():
        for target in targets:
            users[target].add(name)
    remaining = {name: len(targets) for name, targets in edges.items()}
    sinks = [name for name, n in remaining.items() if n == 0]
    while sinks:
        done = sinks.pop()
        del remaining[done]
        for user in users[done]:
            if user in remaining:
                remaining[user] -= 1
                if remaining[user] == 0:
                    sinks.append(user)
    return set(remaining)


def _openfga_conditions(schema: Schema) -> None:
    for key, cond in schema.conditions.items():
        if key != cond.name:
            raise _err(f"condition key '{key}' does not match its name '{cond.name}'", "invalid_condition", cond.pos)
        seen: set[str] = set()
        for p in cond.params:
            if p.name in seen:
                raise _err(f"parameter '{p.name}' is defined twice in condition '{cond.name}'", "duplicate_param",
                           cond.pos)
            seen.add(p.name)
            check_param_type(p.type, OPENFGA_PARAM_TYPES, f"condition '{cond.name}'")
        check_cel_shape(cond)


# ------------------------------------------------------------------------------------------
# CEL: a shape check only (the engine compiles CEL; here we refuse what is plainly broken)
# ------------------------------------------------------------------------------------------

_CEL_STRING = (r"[rRbB]{0,2}(?:'''[\s\S]*?'''" r'|"""[\s\S]*?"""' r"|'(?:\\.|[^'\\\n])*'"
               r'|"(?:\\.|[^"\\\n])*")')
_CEL_TOKEN = re.compile(rf"(?P<str>{_CEL_STRING})|(?P<comment>//[^\n]*)|(?P<dot>\.\s*)?(?P<id>[A-Za-z_][A-Za-z0-9_]*)"
                        r"|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<other>\S)")


def cel_identifiers(expression: str) -> set[str]:
    """Top-level identifiers a CEL expression reads (not fields after a dot, not inside strings)."""
    return {m.group("id") for m in _CEL_TOKEN.finditer(expression) if m.group("id") and not m.group("dot")}


def check_cel_shape(cond: Condition) -> None:
    """Refuse a CEL body with unbalanced brackets, an unterminated string, or nothing in it."""
    depth: list[str] = []
    pairs = {")": "(", "]": "[", "}": "{"}
    meaningful = False
    for m in _CEL_TOKEN.finditer(cond.expression):
        if m.group("comment"):
            continue
        meaningful = True
        if m.group("open"):
            depth.append(m.group("open"))
        elif m.group("close"):
            if not depth or depth.pop() != pairs[m.group("close")]:
                raise _err(f"condition '{cond.name}': unbalanced '{m.group('close')}' in its expression",
                           "invalid_condition", cond.pos)
        elif m.group("other") in ("'", '"'):
            raise _err(f"condition '{cond.name}': unterminated string in its expression", "invalid_condition", cond.pos)
    if depth or not meaningful:
        raise _err(f"condition '{cond.name}': incomplete expression", "invalid_condition", cond.pos)


# ------------------------------------------------------------------------------------------
# SpiceDB
# ------------------------------------------------------------------------------------------

SPICEDB_DEFINITION = re.compile(r"([a-z][a-z0-9_]{1,61}[a-z0-9]/)*[a-z][a-z0-9_]{1,62}[a-z0-9]")
SPICEDB_RELATION = re.compile(r"[a-z][a-z0-9_]{1,62}[a-z0-9]")
# SpiceDB's CaveatDefinition name (core.proto): ``c``, ``Cav``, ``foo/bar/only_on_tuesday``. The
# plane's relationship stream carries lowercase names only; it refuses a tuple naming another.
SPICEDB_CAVEAT = re.compile(r"[a-zA-Z0-9_][a-zA-Z0-9/_|-]{0,127}")
SPICEDB_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def validate_spicedb(schema: Schema) -> None:
    """Refuse what SpiceDB's schema compiler and type system refuse (see the module docstring).

    One rule is stricter than SpiceDB: an arrow whose right side exists on none of the left
    relation's subject types is refused (``arrow_unreachable``); SpiceDB only warns about it
    (``zed validate``'s arrow-references-unreachable-relation), and such an arrow can never match.
    """
    _count(schema)
    for t in schema.types.values():
        _spicedb_names(t)
        for rel in t.relations.values():
            _spicedb_relation(schema, t, rel)
        _bounded("permission aliases", lambda: _spicedb_alias_cycles(t))  # noqa: B023
    for cond in schema.conditions.values():
        _spicedb_caveat(cond)


def _spicedb_names(t: TypeDef) -> None:
    if not SPICEDB_DEFINITION.fullmatch(t.name):
        raise _err(f"definition name '{t.name}' does not match SpiceDB's naming rule "
                   f"({SPICEDB_DEFINITION.pattern})", "invalid_name", t.pos)
    for rel in t.relations.values():
        if not SPICEDB_RELATION.fullmatch(rel.name):
            raise _err(f"'{rel.name}' in '{t.name}' does not match SpiceDB's naming rule "
                       f"({SPICEDB_RELATION.pattern})", "invalid_name", rel.pos)


def _spicedb_relation(schema: Schema, t: TypeDef, rel: Relation) -> None:
    if rel.is_permission and rel.allowed:
        raise _err(f"permission '{t.name}#{rel.name}' cannot list subject types", "permission_with_types", rel.pos)
    if not rel.is_permission:
        if rel.rewrite != Direct():
            raise _err(f"relation '{t.name}#{rel.name}' cannot be an expression: use 'permission'",
                       "relation_with_expression", rel.pos)
        if not rel.allowed:
            raise _err(f"relation '{t.name}#{rel.name}' needs at least one subject type", "missing_type_restrictions",
                       rel.pos)
    elif has_direct(rel.rewrite):
        raise _err(f"permission '{t.name}#{rel.name}' cannot contain direct tuples", "invalid_rewrite", rel.pos)
    for node in walk(rel.rewrite):
        if isinstance(node, Computed) and node.relation not in t.relations:
            raise _err(f"relation/permission '{node.relation}' not found under definition '{t.name}'",
                       "undefined_relation", node.pos)
        if isinstance(node, Arrow):
            _spicedb_arrow(schema, t, rel, node)
        if isinstance(node, (Union, Intersection)) and len(node.children) < 2:
            raise _err(f"'{t.name}#{rel.name}': a union or intersection needs at least two children",
                       "invalid_rewrite", rel.pos)
    _spicedb_allowed(schema, t, rel)


def _spicedb_arrow(schema: Schema, t: TypeDef, rel: Relation, arrow: Arrow) -> None:
    left = t.relations.get(arrow.tupleset)
    if left is None:
        raise _err(f"relation '{arrow.tupleset}' not found under definition '{t.name}'", "undefined_relation",
                   arrow.pos)
    if left.is_permission:
        raise _err(f"under permission '{rel.name}' of '{t.name}': permissions cannot be used on the left hand side "
                   f"of an arrow (found '{arrow.tupleset}')", "permission_in_arrow", arrow.pos)
    wildcard = _wildcard_via(schema, t.name, arrow.tupleset, set())
    if wildcard is not None:
        raise _err(f"for arrow under permission '{rel.name}': relation '{t.name}#{arrow.tupleset}' includes wildcard "
                   f"type '{wildcard}': wildcard relations cannot be used on the left side of arrows",
                   "wildcard_in_arrow", arrow.pos)
    if not any(schema.relation(ref.type, arrow.computed) for ref in left.allowed):
        raise _err(f"arrow '{arrow.tupleset}->{arrow.computed}' under '{t.name}#{rel.name}': '{arrow.computed}' "
                   f"exists on no subject type of '{arrow.tupleset}'", "arrow_unreachable", arrow.pos)


def _wildcard_via(schema: Schema, tname: str, rname: str, seen: set[str]) -> str | None:
    """The wildcard type a relation admits, directly or through subject relations (``group#member``)."""
    key = f"{tname}#{rname}"
    if key in seen:
        return None
    seen.add(key)
    rel = schema.relation(tname, rname)
    if rel is None:
        return None
    for ref in rel.allowed:
        if ref.wildcard:
            return f"{ref.type}:*"
        if ref.relation:
            found = _wildcard_via(schema, ref.type, ref.relation, seen)
            if found:
                return found
    return None


def _spicedb_allowed(schema: Schema, t: TypeDef, rel: Relation) -> None:
    seen: set[tuple[str, str | None, bool, str | None, bool]] = set()
    for ref in rel.allowed:
        key = (ref.type, ref.relation, ref.wildcard, ref.condition, ref.expiration)
        if key in seen:
            raise _err(f"found duplicate allowed subject type '{_ref_text(ref)}' on relation '{rel.name}' under "
                       f"definition '{t.name}'", "duplicate_subject", rel.pos)
        seen.add(key)
        target = schema.types.get(ref.type)
        if target is None:
            raise _err(f"relation '{t.name}#{rel.name}' allows undefined definition '{ref.type}'", "undefined_type",
                       rel.pos)
        if ref.relation and ref.relation not in target.relations:
            raise _err(f"relation/permission '{ref.relation}' not found under definition '{ref.type}'",
                       "undefined_relation", rel.pos)
        if ref.relation and ref.type != t.name:
            wildcard = _wildcard_via(schema, ref.type, ref.relation, set())
            if wildcard:
                raise _err(f"for relation '{rel.name}': '{ref.type}#{ref.relation}' includes wildcard type "
                           f"'{wildcard}': wildcard relations cannot be transitively included",
                           "transitive_wildcard", rel.pos)
        if ref.condition and ref.condition not in schema.conditions:
            raise _err(f"caveat '{ref.condition}' used by '{t.name}#{rel.name}' is not defined", "undefined_condition",
                       rel.pos)


def _spicedb_alias_cycles(t: TypeDef) -> None:
    """SpiceDB refuses permissions that only alias each other in a ring (``a = b``, ``b = a``)."""
    for rel in t.relations.values():
        seen = {rel.name}
        cur = rel
        while cur.is_permission and isinstance(cur.rewrite, Computed):
            nxt = t.relations.get(cur.rewrite.relation)
            if nxt is None:
                break
            if nxt.name in seen:
                raise _err(f"under definition '{t.name}', there exists a cycle in permissions: "
                           f"{', '.join(sorted(seen))}", "cycle", rel.pos)
            seen.add(nxt.name)
            cur = nxt


def _spicedb_caveat(cond: Condition) -> None:
    if not SPICEDB_CAVEAT.fullmatch(cond.name):
        raise _err(f"caveat name '{cond.name}' does not match SpiceDB's naming rule ({SPICEDB_CAVEAT.pattern})",
                   "invalid_name", cond.pos)
    if not cond.params:
        raise _err(f"caveat '{cond.name}' must have at least one parameter defined", "invalid_condition", cond.pos)
    used = cel_identifiers(cond.expression)
    seen: set[str] = set()
    for p in cond.params:
        if p.name in seen:
            raise _err(f"duplicate parameter '{p.name}' defined on caveat '{cond.name}'", "duplicate_param", cond.pos)
        seen.add(p.name)
        check_param_type(p.type, CEL_TYPES, f"caveat '{cond.name}'")
        if p.name not in used:
            raise _err(f"parameter '{p.name}' for caveat '{cond.name}' is unused", "unused_param", cond.pos)
    check_cel_shape(cond)
