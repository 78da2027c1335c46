"""The internal form -> OpenFGA DSL, OpenFGA JSON and SpiceDB schema text.

Each target gets a schema of its own dialect: ``to_spicedb_form`` and ``to_openfga_form``
translate between the two, and every renderer translates first when it is handed the other
dialect. A translated schema is validated by the target's own rules, so what comes out is
what the target accepts; anything it cannot state is refused with SchemaError(rule=
"not_expressible") naming the construct.

OpenFGA -> SpiceDB, name by name:

* a type ``T`` becomes ``definition T``; a condition ``c`` becomes ``caveat c`` with the same
  parameters and CEL text;
* ``define r: [types]`` (direct only) becomes ``relation r: types`` (``user with c`` stays
  ``user with c``; duplicate entries, which OpenFGA tolerates, are dropped);
* ``define r: <expression without [..]>`` becomes ``permission r = <expression>``;
* ``define r: [types] <op> ...`` becomes two lines: ``relation r_direct: types`` holding the
  tuples, and ``permission r = r_direct <op> ...``; so tuples written to ``T#r`` in OpenFGA go to
  ``T#r_direct`` in SpiceDB, while checks, arrows and ``T#r`` subject sets keep the name ``r``;
* ``X from Y`` becomes ``Y->X``; ``or``/``and``/``but not`` become ``+``/``&``/``-`` with
  every nested operation parenthesised.

Names SpiceDB's naming rules refuse (fewer than 3 characters, capitals, ``-`` or ``.``) and an
``r_direct`` that already exists are refused rather than renamed, so no tuple silently lands
under a name nobody expects.

SpiceDB -> OpenFGA: relations and permissions both become ``define``; ``a->b`` and
``a.any(b)`` become ``b from a``; caveats become conditions. ``nil``, ``.all()`` arrows,
``with expiration`` (and so ``use expiration``) and the ``bytes`` / nested generic parameter
types have no OpenFGA form and are refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from tenantguard.schema.errors import SchemaError
from tenantguard.schema.model import (
    Arrow,
    Computed,
    Condition,
    Direct,
    Exclusion,
    Expr,
    Intersection,
    Nil,
    Relation,
    Schema,
    SubjectRef,
    TypeDef,
    Union,
)
from tenantguard.schema.openfga import RESERVED, skip_string
from tenantguard.schema.openfga_json import to_openfga_json as _json_of_openfga
from tenantguard.schema.spicedb import cel_lex_error
from tenantguard.schema.validate import validate_openfga, validate_spicedb, walk

DIRECT_SUFFIX = "_direct"
_OPENFGA_NAME = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_-]|[/.](?=[A-Za-z0-9_]))*")
_OPENFGA_CONDITION = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _not_expressible(target: str, what: str) -> SchemaError:
    return SchemaError(f"cannot be expressed in {target}: {what}", rule="not_expressible")


def _validated(schema: Schema, target: str) -> Schema:
    """Run the target's own rules on a translated schema; a refusal names the target."""
    try:
        (validate_openfga if schema.dialect == "openfga" else validate_spicedb)(schema)
    except SchemaError as exc:
        raise SchemaError(f"cannot be expressed in {target}: {exc.message}", rule="not_expressible",
                          cause=exc.rule) from None
    return schema


# ------------------------------------------------------------------------------------------
# dialect translation
# ------------------------------------------------------------------------------------------

def to_spicedb_form(schema: Schema) -> Schema:
    """The schema as SpiceDB states it (see the module docstring for the naming)."""
    if schema.dialect == "spicedb":
        return schema
    types = {t.name: TypeDef(t.name, _spicedb_relations(t), t.pos) for t in schema.types.values()}
    for cond in schema.conditions.values():
        problem = cel_lex_error(cond.expression)
        if problem:  # SpiceDB's lexer reads a caveat's CEL too, and has no string escapes
            raise _not_expressible("SpiceDB", f"condition '{cond.name}': SpiceDB cannot read its expression "
                                   f"({problem})")
    return _validated(Schema(types=types, conditions=dict(schema.conditions), dialect="spicedb"), "SpiceDB")


def _spicedb_relations(t: TypeDef) -> dict[str, Relation]:
    out: dict[str, Relation] = {}
    for rel in t.relations.values():
        allowed = tuple(dict.fromkeys(rel.allowed))
        if rel.rewrite == Direct():
            out[rel.name] = replace(rel, allowed=allowed, is_permission=False)
            continue
        if not any(isinstance(n, Direct) for n in walk(rel.rewrite)):
            out[rel.name] = replace(rel, is_permission=True, allowed=())
            continue
        direct = rel.name + DIRECT_SUFFIX
        if direct in t.relations:
            raise _not_expressible("SpiceDB", f"'{t.name}#{rel.name}' needs a relation '{direct}' for its direct "
                                   "tuples, and that name is taken")
        out[direct] = Relation(direct, Direct(), allowed, pos=rel.pos)
        out[rel.name] = replace(rel, rewrite=_replace_direct(rel.rewrite, Computed(direct, pos=rel.pos)),
                                allowed=(), is_permission=True)
    return out


def _replace_direct(expr: Expr, by: Expr) -> Expr:
    if isinstance(expr, Direct):
        return by
    if isinstance(expr, Union):
        return Union(tuple(_replace_direct(c, by) for c in expr.children))
    if isinstance(expr, Intersection):
        return Intersection(tuple(_replace_direct(c, by) for c in expr.children))
    if isinstance(expr, Exclusion):
        return Exclusion(_replace_direct(expr.base, by), _replace_direct(expr.subtract, by))
    return expr


def _openfga_condition_compiles(cond: Condition) -> None:
    """A caveat's CEL in OpenFGA's environment: SpiceDB's ``uint`` is CEL ``int``, and its
    ``isSubtreeOf`` and optional types are not OpenFGA's."""
    from tenantguard.schema.engine.conditions import CompiledCondition  # the engine imports this package

    try:
        CompiledCondition(cond, max_chars=len(cond.expression) + 1, dialect="openfga")
    except SchemaError as e:
        raise _not_expressible("OpenFGA", f"caveat '{cond.name}' does not compile as an OpenFGA condition "
                               f"({e.message})") from None


def to_openfga_form(schema: Schema) -> Schema:
    """The schema as OpenFGA states it; refuses SpiceDB-only constructs by name."""
    if schema.dialect == "openfga":
        return schema
    for t in schema.types.values():
        for rel in t.relations.values():
            _openfga_expressible(t, rel)
    for cond in schema.conditions.values():
        for p in cond.params:
            if "bytes" in p.type or p.type.count("<") > 1 or "," in p.type:
                raise _not_expressible("OpenFGA", f"caveat '{cond.name}' parameter '{p.name}' has type '{p.type}'")
        _openfga_condition_compiles(cond)
    types = {t.name: TypeDef(t.name, {r.name: replace(r, is_permission=False) for r in t.relations.values()}, t.pos)
             for t in schema.types.values()}
    return _validated(Schema(types=types, conditions=dict(schema.conditions), dialect="openfga"), "OpenFGA")


def _openfga_expressible(t: TypeDef, rel: Relation) -> None:
    where = f"'{t.name}#{rel.name}'"
    for node in walk(rel.rewrite):
        if isinstance(node, Nil):
            raise _not_expressible("OpenFGA", f"{where} uses 'nil'")
        if isinstance(node, Arrow) and node.all:
            raise _not_expressible("OpenFGA", f"{where} uses '{node.tupleset}.all({node.computed})' "
                                   "(OpenFGA arrows mean any)")
    for ref in rel.allowed:
        if ref.expiration:
            raise _not_expressible("OpenFGA", f"{where} allows '{ref.type} with expiration'")


# ------------------------------------------------------------------------------------------
# OpenFGA DSL
# ------------------------------------------------------------------------------------------

def to_openfga_dsl(schema: Schema) -> str:
    """OpenFGA modeling-language text (schema 1.1) that parses back to the same schema."""
    schema = to_openfga_form(schema)
    lines = ["model", "  schema 1.1"]
    for t in schema.types.values():
        lines += ["", f"type {_fga_name(t.name)}"]
        if t.relations:
            lines.append("  relations")
            lines += [f"    define {_fga_name(r.name)}: {_fga_relation(t, r)}" for r in t.relations.values()]
    for cond in schema.conditions.values():
        lines += ["", *_fga_condition(cond)]
    return "\n".join(lines) + "\n"


def _fga_name(name: str) -> str:
    if not _OPENFGA_NAME.fullmatch(name) or name in RESERVED:
        raise _not_expressible("the OpenFGA DSL", f"the name '{name}' is not an OpenFGA identifier")
    return name


def _direct_first(expr: Expr) -> Expr:
    """Unions and intersections with the direct assignment moved to the front, as OpenFGA's own
    JSON-to-DSL transformer writes them (both are commutative, so the meaning is the same)."""
    if isinstance(expr, (Union, Intersection)):
        children = [_direct_first(c) for c in expr.children]
        at = next((i for i, c in enumerate(children) if isinstance(c, Direct)), 0)
        children.insert(0, children.pop(at))
        return type(expr)(tuple(children))
    if isinstance(expr, Exclusion):
        return Exclusion(_direct_first(expr.base), _direct_first(expr.subtract))
    return expr


def _fga_relation(t: TypeDef, rel: Relation) -> str:
    directs = [n for n in walk(rel.rewrite) if isinstance(n, Direct)]
    if directs:
        rel = replace(rel, rewrite=_direct_first(rel.rewrite))
        spine = rel.rewrite
        while isinstance(spine, (Union, Intersection, Exclusion)):
            spine = spine.base if isinstance(spine, Exclusion) else spine.children[0]
        if len(directs) > 1 or not isinstance(spine, Direct):
            raise _not_expressible("the OpenFGA DSL", f"'{t.name}#{rel.name}': the direct assignment [...] must be "
                                   "the first operand and appear once")
        if not rel.allowed:
            raise _not_expressible("the OpenFGA DSL", f"'{t.name}#{rel.name}' is directly assignable but allows "
                                   "no types")
    return _fga_expr(rel.rewrite, rel.allowed)


def _fga_expr(expr: Expr, allowed: tuple[SubjectRef, ...]) -> str:
    if isinstance(expr, Direct):
        return "[" + ", ".join(_fga_subject(s) for s in allowed) + "]"
    if isinstance(expr, Computed):
        return _fga_name(expr.relation)
    if isinstance(expr, Arrow):
        return f"{_fga_name(expr.computed)} from {_fga_name(expr.tupleset)}"
    if isinstance(expr, (Union, Intersection)):
        op = " or " if isinstance(expr, Union) else " and "
        return op.join(_fga_operand(c, allowed) for c in expr.children)
    if isinstance(expr, Exclusion):
        return f"{_fga_operand(expr.base, allowed)} but not {_fga_operand(expr.subtract, allowed)}"
    raise _not_expressible("the OpenFGA DSL", f"rewrite {type(expr).__name__}")


def _fga_operand(expr: Expr, allowed: tuple[SubjectRef, ...]) -> str:
    text = _fga_expr(expr, allowed)
    return f"({text})" if isinstance(expr, (Union, Intersection, Exclusion)) else text


def _fga_subject(s: SubjectRef) -> str:
    text = _fga_name(s.type) + (":*" if s.wildcard else f"#{_fga_name(s.relation)}" if s.relation else "")
    return text + (f" with {_fga_condition_name(s.condition)}" if s.condition else "")


def _fga_condition_name(name: str) -> str:
    if not _OPENFGA_CONDITION.fullmatch(name) or name in RESERVED:
        raise _not_expressible("the OpenFGA DSL", f"the condition name '{name}' is not an OpenFGA identifier")
    return name


def _fga_condition(cond: Condition) -> list[str]:
    """``condition c(p: T, ...) {`` + CEL + ``}``; a body with a bare ``}`` cannot be written."""
    expr = cond.expression
    i = 0
    while i < len(expr):
        if expr[i] in "\"'":
            i = skip_string(expr, i, 0, 0)
            continue
        if expr[i] == "}":
            raise _not_expressible("the OpenFGA DSL", f"condition '{cond.name}': OpenFGA ends a condition body at "
                                   "its first '}' outside a string")
        i += 1
    params = ", ".join(f"{p.name}: {p.type}" for p in cond.params)
    head = f"condition {_fga_condition_name(cond.name)}({params}) {{"
    if expr != expr.rstrip():
        return [head, f"  {expr}}}"]
    return [head, f"  {expr}", "}"]


# ------------------------------------------------------------------------------------------
# OpenFGA JSON
# ------------------------------------------------------------------------------------------

def to_openfga_json(schema: Schema) -> dict[str, object]:
    """OpenFGA JSON (as ``fga model transform`` prints it) of either dialect."""
    return _json_of_openfga(to_openfga_form(schema))


def to_openfga_json_text(schema: Schema) -> str:
    return json.dumps(to_openfga_json(schema), indent=2)


# ------------------------------------------------------------------------------------------
# SpiceDB
# ------------------------------------------------------------------------------------------

def to_spicedb(schema: Schema) -> str:
    """SpiceDB schema text that SpiceDB accepts and that parses back to the same schema."""
    schema = to_spicedb_form(schema)
    out: list[str] = []
    if any(ref.expiration for t in schema.types.values() for r in t.relations.values() for ref in r.allowed):
        out += ["use expiration", ""]
    for t in schema.types.values():
        if not t.relations:
            out += [f"definition {t.name} {{}}", ""]
            continue
        out.append(f"definition {t.name} {{")
        out += [f"    {_zed_relation(r)}" for r in t.relations.values()]
        out += ["}", ""]
    for cond in schema.conditions.values():
        params = ", ".join(f"{p.name} {p.type}" for p in cond.params)
        out += [f"caveat {cond.name}({params}) {{", f"    {cond.expression}", "}", ""]
    return "\n".join(out)


def _zed_relation(rel: Relation) -> str:
    if not rel.is_permission:
        return f"relation {rel.name}: " + " | ".join(_zed_subject(s) for s in rel.allowed)
    return f"permission {rel.name} = {_zed_expr(rel.rewrite)}"


def _zed_subject(s: SubjectRef) -> str:
    text = s.type + (":*" if s.wildcard else f"#{s.relation}" if s.relation else "")
    traits = [t for t in (s.condition, "expiration" if s.expiration else None) if t]
    return text + (" with " + " and ".join(traits) if traits else "")


def _zed_expr(expr: Expr) -> str:
    if isinstance(expr, Computed):
        return expr.relation
    if isinstance(expr, Nil):
        return "nil"
    if isinstance(expr, Arrow):
        return f"{expr.tupleset}.all({expr.computed})" if expr.all else f"{expr.tupleset}->{expr.computed}"
    if isinstance(expr, (Union, Intersection)):
        op = " + " if isinstance(expr, Union) else " & "
        return op.join(_zed_operand(c) for c in expr.children)
    if isinstance(expr, Exclusion):
        return f"{_zed_operand(expr.base)} - {_zed_operand(expr.subtract)}"
    raise _not_expressible("SpiceDB", f"rewrite {type(expr).__name__} in a permission")


def _zed_operand(expr: Expr) -> str:
    text = _zed_expr(expr)
    return f"({text})" if isinstance(expr, (Union, Intersection, Exclusion)) else text
