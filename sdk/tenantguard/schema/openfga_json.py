"""OpenFGA's JSON authorization model <-> the internal form, both directions.

The JSON is what OpenFGA's API stores and what ``fga model transform`` prints:
``schema_version``, ``type_definitions`` (each with ``relations`` rewrites ``this`` /
``computedUserset`` / ``tupleToUserset`` / ``union`` / ``intersection`` / ``difference`` and
``metadata.relations.R.directly_related_user_types``) and ``conditions``. Input accepts the
snake_case and camelCase spellings protobuf JSON allows and ignores fields it does not
know (``id``, ``module``, ``source_info``), as OpenFGA's own reader does; output is
shaped like ``fga model transform`` so the two compare equal as JSON values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tenantguard.schema.errors import SchemaError
from tenantguard.schema.limits import check_counts, check_depth, check_size
from tenantguard.schema.model import (
    Arrow,
    Computed,
    Condition,
    Direct,
    Exclusion,
    Expr,
    Intersection,
    Nil,
    Param,
    Relation,
    Schema,
    SubjectRef,
    TypeDef,
    Union,
)

_TYPE_NAMES = {"any": "TYPE_NAME_ANY", "bool": "TYPE_NAME_BOOL", "string": "TYPE_NAME_STRING",
               "int": "TYPE_NAME_INT", "uint": "TYPE_NAME_UINT", "double": "TYPE_NAME_DOUBLE",
               "duration": "TYPE_NAME_DURATION", "timestamp": "TYPE_NAME_TIMESTAMP", "map": "TYPE_NAME_MAP",
               "list": "TYPE_NAME_LIST", "ipaddress": "TYPE_NAME_IPADDRESS"}
_FROM_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}


def _get(obj: Mapping[str, Any], snake: str, default: Any = None) -> Any:
    """A field under its snake_case or camelCase name (protobuf JSON accepts both)."""
    if snake in obj:
        return obj[snake]
    parts = snake.split("_")
    return obj.get(parts[0] + "".join(p.title() for p in parts[1:]), default)


def _bad(message: str) -> SchemaError:
    return SchemaError(message, rule="invalid_json")


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _bad(f"{where} must be a JSON object")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _bad(f"{where} must be a string")
    return value


# -- JSON -> internal form ----------------------------------------------------------------

def parse_openfga_json(source: str | Mapping[str, Any]) -> Schema:
    """Read an OpenFGA JSON model (text or an already decoded object) into the internal form."""
    if isinstance(source, str):
        check_size(source)
        try:
            doc = json.loads(source)
        except (ValueError, RecursionError) as exc:
            raise _bad(f"not valid JSON: {exc}") from None
    else:
        doc = source
    doc = _obj(doc, "the model")
    version = _get(doc, "schema_version")
    if version is None or version == "":
        raise SchemaError("schema version required (schema_version: \"1.1\")", rule="schema_version")
    if version not in ("1.1", "1.2"):
        raise SchemaError(f"schema version {version!r} is not supported (1.1 is)", rule="schema_version")
    typedefs = _get(doc, "type_definitions", [])
    conditions = _get(doc, "conditions", {}) or {}
    if not isinstance(typedefs, list):
        raise _bad("type_definitions must be a list")
    conditions = _obj(conditions, "conditions")
    check_counts(len(typedefs), 0, len(conditions))
    types: dict[str, TypeDef] = {}
    relation_count = 0
    for raw in typedefs:
        typedef = _typedef(_obj(raw, "a type definition"))
        if typedef.name in types:
            raise SchemaError(f"type '{typedef.name}' is defined twice", rule="duplicate_type")
        relation_count += len(typedef.relations)
        check_counts(len(types), relation_count, 0)
        types[typedef.name] = typedef
    conds = {name: _condition(name, _obj(raw, f"condition '{name}'")) for name, raw in conditions.items()}
    _one_module_per_file(typedefs, conditions)
    return Schema(types=types, conditions=conds, dialect="openfga")


def _one_module_per_file(typedefs: list[Any], conditions: Mapping[str, Any]) -> None:
    """A combined modular model names each part's module and source file; OpenFGA's validator
    refuses one file holding two modules. Models without that metadata are not affected."""
    modules: dict[str, str] = {}

    def note(meta: Any, where: str) -> None:
        if not isinstance(meta, Mapping):
            return
        module, info = meta.get("module"), _get(meta, "source_info")
        file = info.get("file") if isinstance(info, Mapping) else None
        if not (isinstance(module, str) and module and isinstance(file, str) and file):
            return
        if modules.setdefault(file, module) != module:
            raise SchemaError(f"file '{file}' holds two modules, '{modules[file]}' and '{module}' ({where}); "
                              "a file may only include one module", rule="multiple_modules_in_file")

    for raw in typedefs:
        meta = raw.get("metadata")
        note(meta, f"type '{raw.get('type')}'")
        rels = meta.get("relations") if isinstance(meta, Mapping) else None
        for rname, rmeta in (rels or {}).items() if isinstance(rels, Mapping) else ():
            note(rmeta, f"relation '{raw.get('type')}#{rname}'")
    for name, raw in conditions.items():
        note(raw.get("metadata"), f"condition '{name}'")


def _typedef(raw: Mapping[str, Any]) -> TypeDef:
    name = _str(raw.get("type"), "a type definition's 'type'")
    rewrites = _obj(raw.get("relations") or {}, f"relations of '{name}'")
    metadata = _obj(raw.get("metadata") or {}, f"metadata of '{name}'")
    meta_rel = _obj(metadata.get("relations") or {}, f"metadata.relations of '{name}'")
    relations: dict[str, Relation] = {}
    for rname, rewrite in rewrites.items():
        meta = _obj(meta_rel.get(rname) or {}, f"metadata of '{name}#{rname}'")
        refs = _get(meta, "directly_related_user_types", []) or []
        if not isinstance(refs, list):
            raise _bad(f"directly_related_user_types of '{name}#{rname}' must be a list")
        allowed = tuple(_subject(_obj(r, f"a related type of '{name}#{rname}'")) for r in refs)
        relations[rname] = Relation(rname, _rewrite(rewrite, f"'{name}#{rname}'", 0), allowed)
    return TypeDef(name, relations)


def _subject(raw: Mapping[str, Any]) -> SubjectRef:
    relation = raw.get("relation") or None
    wildcard = raw.get("wildcard") is not None
    if relation and wildcard:
        raise _bad("a related type cannot have both a relation and a wildcard")
    return SubjectRef(_str(raw.get("type"), "a related type's 'type'"), relation, wildcard,
                      raw.get("condition") or None)


def _rewrite(raw: Any, where: str, depth: int) -> Expr:
    check_depth(depth)
    raw = _obj(raw, f"the rewrite of {where}")
    keys = [k for k in raw if raw[k] is not None]
    if len(keys) != 1:
        raise SchemaError(f"the rewrite of {where} must have exactly one of this, computedUserset, tupleToUserset, "
                          f"union, intersection, difference (found {sorted(keys) or 'none'})", rule="invalid_rewrite")
    key, body = keys[0], raw[keys[0]]
    if key == "this":
        return Direct()
    if key in ("computedUserset", "computed_userset"):
        return Computed(_str(_obj(body, where).get("relation"), f"computedUserset.relation in {where}"))
    if key in ("tupleToUserset", "tuple_to_userset"):
        body = _obj(body, where)
        tupleset = _obj(body.get("tupleset"), f"tupleset in {where}").get("relation")
        computed = _obj(_get(body, "computed_userset"), f"computedUserset in {where}").get("relation")
        return Arrow(_str(tupleset, f"tupleset.relation in {where}"), _str(computed, f"computedUserset in {where}"))
    if key in ("union", "intersection"):
        children = _obj(body, where).get("child")
        if not isinstance(children, list):
            raise _bad(f"{key}.child in {where} must be a list")
        built = tuple(_rewrite(c, where, depth + 1) for c in children)
        return Union(built) if key == "union" else Intersection(built)
    if key == "difference":
        body = _obj(body, where)
        return Exclusion(_rewrite(body.get("base"), where, depth + 1), _rewrite(body.get("subtract"), where, depth + 1))
    raise SchemaError(f"unknown rewrite '{key}' in {where}", rule="invalid_rewrite")


def _condition(key: str, raw: Mapping[str, Any]) -> Condition:
    name = raw.get("name", key)
    params_raw = _obj(raw.get("parameters") or {}, f"parameters of condition '{key}'")
    params = tuple(Param(p, _param_type(_obj(t, f"parameter '{p}'"), f"condition '{key}'"))
                   for p, t in params_raw.items())
    return Condition(_str(name, f"name of condition '{key}'"), params,
                     _str(raw.get("expression", ""), f"expression of condition '{key}'"))


def _param_type(raw: Mapping[str, Any], where: str) -> str:
    type_name = _get(raw, "type_name")
    base = _FROM_TYPE_NAME.get(type_name) if isinstance(type_name, str) else None
    if base is None:
        raise SchemaError(f"{where}: unsupported parameter type {type_name!r}", rule="invalid_param_type")
    generics = _get(raw, "generic_types", []) or []
    if base in ("list", "map"):
        if not isinstance(generics, list) or len(generics) != 1:
            raise SchemaError(f"{where}: {base} needs exactly one generic type", rule="invalid_param_type")
        return f"{base}<{_param_type(_obj(generics[0], where), where)}>"
    if generics:
        raise SchemaError(f"{where}: {base} takes no generic types", rule="invalid_param_type")
    return base


# -- internal form -> JSON ----------------------------------------------------------------

def to_openfga_json(schema: Schema) -> dict[str, Any]:
    """The internal form as OpenFGA JSON, shaped like ``fga model transform`` output.

    Refuses (SchemaError rule ``not_expressible``) SpiceDB constructs OpenFGA lacks:
    ``nil``, ``.all()`` arrows and ``with expiration``.
    """
    out: dict[str, Any] = {"schema_version": "1.1",
                           "type_definitions": [_typedef_json(t) for t in schema.types.values()]}
    if schema.conditions:
        out["conditions"] = {c.name: _condition_json(c) for c in schema.conditions.values()}
    return out


def _typedef_json(t: TypeDef) -> dict[str, Any]:
    out: dict[str, Any] = {"type": t.name}
    if not t.relations:
        return out
    out["relations"] = {r.name: _rewrite_json(r.rewrite, f"'{t.name}#{r.name}'") for r in t.relations.values()}
    meta: dict[str, Any] = {}
    for r in t.relations.values():
        meta[r.name] = {"directly_related_user_types": [_subject_json(s, t, r) for s in r.allowed]} if r.allowed else {}
    out["metadata"] = {"relations": meta}
    return out


def _subject_json(s: SubjectRef, t: TypeDef, r: Relation) -> dict[str, Any]:
    if s.expiration:
        raise SchemaError(f"'{t.name}#{r.name}': 'with expiration' has no OpenFGA equivalent", rule="not_expressible")
    out: dict[str, Any] = {"type": s.type}
    if s.relation:
        out["relation"] = s.relation
    if s.wildcard:
        out["wildcard"] = {}
    if s.condition:
        out["condition"] = s.condition
    return out


def _rewrite_json(expr: Expr, where: str) -> dict[str, Any]:
    if isinstance(expr, Direct):
        return {"this": {}}
    if isinstance(expr, Computed):
        return {"computedUserset": {"relation": expr.relation}}
    if isinstance(expr, Arrow):
        if expr.all:
            raise SchemaError(f"{where}: '{expr.tupleset}.all({expr.computed})' has no OpenFGA equivalent",
                              rule="not_expressible")
        return {"tupleToUserset": {"computedUserset": {"relation": expr.computed},
                                   "tupleset": {"relation": expr.tupleset}}}
    if isinstance(expr, Union):
        return {"union": {"child": [_rewrite_json(c, where) for c in expr.children]}}
    if isinstance(expr, Intersection):
        return {"intersection": {"child": [_rewrite_json(c, where) for c in expr.children]}}
    if isinstance(expr, Exclusion):
        return {"difference": {"base": _rewrite_json(expr.base, where),
                               "subtract": _rewrite_json(expr.subtract, where)}}
    if isinstance(expr, Nil):
        raise SchemaError(f"{where}: 'nil' has no OpenFGA equivalent", rule="not_expressible")
    raise SchemaError(f"{where}: unknown rewrite {type(expr).__name__}", rule="not_expressible")


def _condition_json(c: Condition) -> dict[str, Any]:
    return {"expression": c.expression, "name": c.name,
            "parameters": {p.name: _param_type_json(p.type, c.name) for p in c.params}}


def _param_type_json(type_name: str, cond: str) -> dict[str, Any]:
    base, _, inner = type_name.partition("<")
    if base not in _TYPE_NAMES:
        raise SchemaError(f"condition '{cond}': parameter type '{type_name}' has no OpenFGA equivalent",
                          rule="not_expressible")
    out: dict[str, Any] = {"type_name": _TYPE_NAMES[base]}
    if inner:
        out["generic_types"] = [_param_type_json(inner[:-1], cond)]
    return out

