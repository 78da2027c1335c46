"""OpenFGA models with the verdict OpenFGA gives them: None (valid) or our rule name.

Written for tenantguard after the rules of OpenFGA's validator and the documented cases in
openfga/language's tests/data; test_openfga_fga_cli.py checks every verdict against the real
``fga model validate``, so a case here is never just our opinion. ``fga model validate`` runs
only OpenFGA's server-side checks: a case whose refusal comes from OpenFGA's language validator
(which ``fga`` does not run) says so with ``fga_cli_accepts``.
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    name: str
    text: str
    rule: str | None
    fga_cli_accepts: bool = False


H = "model\n  schema 1.1\ntype user\n"


def _t(body: str) -> str:
    return H + body.strip("\n") + "\n"


CASES: list[Case] = [
    # -- valid models ------------------------------------------------------------------------
    Case("only schema", "model\n  schema 1.1\n", None),
    Case("one type", H, None),
    Case("schema 1.2 header", "model\n  schema 1.2\ntype user\n", None),
    Case("comments everywhere", "# header\nmodel # m\n  schema 1.1\n# before type\ntype user # u\n"
         "type doc\n  # inside\n  relations\n    # before define\n    define viewer: [user] # trailing\n", None),
    Case("no indentation", "model\nschema 1.1\ntype user\ntype doc\nrelations\ndefine viewer: [user]\n", None),
    Case("blank lines", "model\n  schema 1.1\n\n\ntype user\n\n\ntype doc\n  relations\n\n    define a: [user]\n\n",
         None),
    Case("direct types", _t("""
type group
  relations
    define member: [user, user:*, group#member]
"""), None),
    Case("computed union", _t("""
type doc
  relations
    define owner: [user]
    define editor: [user] or owner
    define viewer: [user] or editor or owner
"""), None),
    Case("intersection and exclusion", _t("""
type doc
  relations
    define blocked: [user]
    define allowed: [user]
    define member: [user]
    define viewer: member and allowed
    define reader: member but not blocked
"""), None),
    Case("tuple to userset", _t("""
type folder
  relations
    define viewer: [user]
type doc
  relations
    define parent: [folder]
    define viewer: [user] or viewer from parent
"""), None),
    Case("recursive tupleset", _t("""
type folder
  relations
    define parent: [folder]
    define viewer: [user] or viewer from parent
"""), None),
    Case("parentheses mixing operators", _t("""
type doc
  relations
    define a: [user]
    define b: [user]
    define c: [user]
    define x: (a or b) and c
    define y: a but not (b or c)
    define z: (a and b) but not c
    define w: ([user] or a) and b
"""), None),
    Case("nested groups kept", _t("""
type doc
  relations
    define a: [user]
    define b: [user]
    define c: [user]
    define x: (a or b) or c
    define y: ((a and b) or (b and c)) but not a
"""), None),
    Case("multi-line type list", _t("""
type doc
  relations
    define viewer: [user,
      user:*,
      doc#viewer]
"""), None),
    Case("userset to self with entrypoint", _t("""
type doc
  relations
    define viewer: [user, doc#viewer]
"""), None),
    Case("mutual usersets with entrypoint", _t("""
type group
  relations
    define member: [user, team#member]
type team
  relations
    define member: [user, group#member]
"""), None),
    Case("duplicate type restriction", _t("""
type doc
  relations
    define viewer: [user, user]
"""), "duplicate_type_restriction", fga_cli_accepts=True),
    Case("same restriction with two conditions", _t("""
type doc
  relations
    define viewer: [user, user with c]
condition c(x: int) {
  x < 10
}
"""), None),
    Case("duplicate operand", _t("""
type doc
  relations
    define viewer: [user]
    define editor: viewer or viewer
"""), "duplicate_partial_relation", fga_cli_accepts=True),
    Case("same operand at two levels", _t("""
type doc
  relations
    define viewer: [user]
    define blocked: [user]
    define editor: viewer or (viewer but not blocked)
"""), None),
    Case("names with dashes dots slashes", _t("""
type org/team-a.b
  relations
    define can-view_1: [user]
    define view: can-view_1
"""), None),
    Case("conditions", _t("""
type doc
  relations
    define viewer: [user with in_range, user, group#member with in_range]
type group
  relations
    define member: [user]
condition in_range(x: int, lo: int, hi: int) {
  x >= lo && x <= hi
}
"""), None),
    Case("condition types", _t("""
type doc
  relations
    define viewer: [user with c]
condition c(a: bool, b: string, c: int, d: uint, e: double, f: duration, g: timestamp, h: ipaddress, i: list<int>) {
  a && b != "" && c > 0 && d > 0u && e > 0.0 && f > duration("1s") && g > timestamp("2020-01-01T00:00:00Z")
}
"""), None),
    Case("map parameter", _t("""
type doc
  relations
    define viewer: [user with c]
condition c(m: map<string>, k: string) {
  m[k] == "yes"
}
"""), None),
    Case("unused condition", _t("""
condition c(x: int) {
  x < 10
}
"""), "condition_not_used", fga_cli_accepts=True),
    Case("condition one line with spaces", _t("""
type doc
  relations
    define viewer: [user with c]
condition c(x: int) { x < 10 }
"""), None),
    Case("condition string with brace", _t("""
type doc
  relations
    define viewer: [user with c]
condition c(s: string) {
  s == "}" || s == '{'
}
"""), None),
    Case("longest type name", _t("type " + "a" * 254), None),
    Case("type name too long", _t("type " + "a" * 255), "invalid_name", fga_cli_accepts=True),
    Case("longest relation name", _t(f"type doc\n  relations\n    define {'r' * 50}: [user]"), None),
    Case("relation name too long", _t(f"type doc\n  relations\n    define {'r' * 51}: [user]"), "invalid_name",
         fga_cli_accepts=True),
    Case("wildcard in arrow target type", _t("""
type folder
  relations
    define viewer: [user:*]
type doc
  relations
    define parent: [folder]
    define viewer: viewer from parent
"""), None),
    Case("arrow target on one of several types", _t("""
type folder
  relations
    define viewer: [user]
type doc
  relations
    define parent: [folder, user]
    define viewer: viewer from parent
"""), None),
    # -- syntax ------------------------------------------------------------------------------
    Case("missing header", "type user\n", "syntax"),
    Case("mixing or and and", _t("""
type doc
  relations
    define a: [user]
    define b: [user]
    define x: a or b and a
"""), "syntax"),
    Case("two but not", _t("""
type doc
  relations
    define a: [user]
    define b: [user]
    define c: [user]
    define x: a but not b but not c
"""), "syntax"),
    Case("direct assignment second", _t("""
type doc
  relations
    define a: [user]
    define x: a or [user]
"""), "syntax"),
    Case("relations without define", _t("""
type doc
  relations
"""), "syntax"),
    Case("keyword as relation name", _t("""
type doc
  relations
    define from: [user]
"""), "syntax"),
    Case("unknown param type", _t("""
condition c(x: integer) {
  x < 1
}
"""), "invalid_param_type"),
    Case("duplicate relation", _t("""
type doc
  relations
    define a: [user]
    define a: [user]
"""), "duplicate_relation"),
    Case("duplicate condition", _t("""
condition c(x: int) {
  x < 1
}
condition c(x: int) {
  x < 2
}
"""), "duplicate_condition"),
    Case("duplicate param", _t("""
condition c(x: int, x: string) {
  x < 1
}
"""), "duplicate_param"),
    Case("type after condition", _t("""
condition c(x: int) {
  x < 1
}
type doc
"""), "syntax"),
    Case("condition parameters across lines", _t("""
condition c(x: int,
  y: int) {
  x < y
}
"""), "syntax"),
    Case("spaces inside a generic type", _t("""
condition c(x: list< int >) {
  1 in x
}
"""), "syntax"),
    Case("extend refused", "model\n  schema 1.1\nextend type user\n", "unsupported"),
    Case("newline inside group", _t("""
type doc
  relations
    define a: [user]
    define b: [user]
    define x: (a or
      b)
"""), "syntax"),
    # -- semantic ----------------------------------------------------------------------------
    Case("schema 1.0", "model\n  schema 1.0\ntype user\n", "schema_version"),
    Case("duplicate type", _t("type user"), "duplicate_type"),
    Case("reserved type self", _t("type self"), "reserved_name"),
    Case("reserved relation this", _t("""
type doc
  relations
    define this: [user]
"""), "reserved_name"),
    Case("undefined type", _t("""
type doc
  relations
    define viewer: [person]
"""), "undefined_type"),
    Case("undefined userset relation", _t("""
type group
  relations
    define member: [user]
type doc
  relations
    define viewer: [group#admin]
"""), "undefined_relation"),
    Case("undefined computed relation", _t("""
type doc
  relations
    define member: [user]
    define reader: member but not allowed
"""), "undefined_relation"),
    Case("undefined tupleset", _t("""
type doc
  relations
    define viewer: viewer from parent
"""), "undefined_relation"),
    Case("arrow target on no type", _t("""
type folder
  relations
    define owner: [user]
type doc
  relations
    define parent: [folder]
    define viewer: viewer from parent
"""), "undefined_relation"),
    Case("tupleset with rewrite", _t("""
type folder
  relations
    define viewer: [user]
type doc
  relations
    define owner: [folder]
    define parent: [folder] or owner
    define viewer: viewer from parent
"""), "tupleset_not_direct"),
    Case("tupleset computed only", _t("""
type folder
  relations
    define viewer: [user]
type doc
  relations
    define owner: [folder]
    define parent: owner
    define viewer: viewer from parent
"""), "tupleset_not_direct"),
    Case("tupleset allows userset", _t("""
type group
  relations
    define member: [user]
type doc
  relations
    define parent: [group, group#member]
    define viewer: member from parent
"""), "invalid_tupleset_type"),
    Case("tupleset allows wildcard", _t("""
type group
  relations
    define member: [user]
type doc
  relations
    define parent: [group, user:*]
    define viewer: member from parent
"""), "invalid_tupleset_type"),
    Case("undefined condition", _t("""
type doc
  relations
    define viewer: [user with missing]
"""), "undefined_condition"),
    Case("self reference in union", _t("""
type doc
  relations
    define viewer: [user] or viewer
"""), "self_reference"),
    Case("self reference in intersection", _t("""
type doc
  relations
    define a: [user]
    define b: a and b
"""), "self_reference"),
    Case("no entrypoint: only userset to itself", _t("""
type doc
  relations
    define viewer: [doc#viewer]
"""), "no_entrypoint"),
    Case("no entrypoint: computed loop", _t("""
type doc
  relations
    define a: b
    define b: a
"""), "no_entrypoint"),
    Case("no entrypoint: intersection with loop", _t("""
type doc
  relations
    define a: [user]
    define b: a and c
    define c: b
"""), "no_entrypoint"),
    Case("no entrypoint: tuple-to-userset loop", _t("""
type folder
  relations
    define parent: [folder]
    define viewer: viewer from parent
"""), "no_entrypoint"),
    Case("no entrypoint: exclusion base", _t("""
type doc
  relations
    define a: [user]
    define b: [doc#b] but not a
"""), "no_entrypoint"),
    Case("no entrypoint: mutual usersets", _t("""
type group
  relations
    define member: [team#member]
type team
  relations
    define member: [group#member]
"""), "no_entrypoint"),
    Case("cycle through computed unions", _t("""
type doc
  relations
    define admin: [user]
    define a1: admin or a2
    define a2: admin or a1
"""), "cycle"),
    # OpenFGA's entrypoint walk shares its visited map between branches, so a chain of
    # intersections over earlier relations is refused although every relation is grounded;
    # we follow it exactly (the verdicts are checked against fga).
    Case("quirk: chain of intersections", H + "type doc\n  relations\n    define r0: [user]\n    define r1: [user]\n"
         + "".join(f"    define r{i}: r{i - 1} and r{i - 2}\n" for i in range(2, 8)), "no_entrypoint"),
    Case("quirk: short chain of intersections is fine", H + "type doc\n  relations\n    define r0: [user]\n"
         "    define r1: [user]\n" + "".join(f"    define r{i}: r{i - 1} and r{i - 2}\n" for i in range(2, 5)), None),
    Case("chain of unions (exponential paths in OpenFGA's cycle walk)", H + "type doc\n  relations\n"
         "    define r0: [user]\n    define r1: [user]\n"
         + "".join(f"    define r{i}: r{i - 1} or r{i - 2}\n" for i in range(2, 16)), None),
    Case("cycle through exclusion", _t("""
type doc
  relations
    define admin: [user]
    define a1: admin but not a2
    define a2: admin or a1
"""), "cycle"),
]
