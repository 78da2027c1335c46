"""SpiceDB schemas with the verdict SpiceDB's compiler and type system give them: None (valid)
or our rule name. Written after SpiceDB's parser tests (pkg/schemadsl/parser/tests) and the
errors of pkg/schema. We are stricter than SpiceDB in one rule: ``arrow_unreachable`` (SpiceDB
only warns). Caveat names follow SpiceDB's (``c``, ``Cav``, ``org/cav``), the last cases."""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    name: str
    text: str
    rule: str | None


CASES: list[Case] = [
    # -- valid -----------------------------------------------------------------------------
    Case("empty", "", None),
    Case("empty definition", "definition user {}", None),
    Case("two definitions on one line", "definition user {} definition team {}", None),
    Case("basic", """
definition user {}
definition document {
    relation viewer: user
    relation editor: user
    permission view = viewer + editor
}
""", None),
    Case("comments and doc comments", """
// line comment
/** doc comment */
definition user {} // trailing
/* block
   comment */
definition document {
    /** who may read */
    relation viewer: user // who
    permission view = viewer /* inline */ + viewer
}
""", None),
    Case("semicolons",
         "definition user {}\ndefinition doc {\n    relation viewer: user;\n    permission view = viewer;\n}", None),
    Case("subject forms", """
definition user {}
definition group {
    relation member: user | group#... | user:* | group#member
}
""", None),
    Case("namespaced names", """
definition acme/user {}
definition acme/document {
    relation viewer: acme/user
    permission view = viewer
}
""", None),
    Case("arrows", """
definition user {}
definition folder {
    relation viewer: user
    relation parent: folder
    permission view = viewer + parent->view + parent.any(view)
    permission strict = parent.all(view)
}
""", None),
    Case("arrow over a subject relation", """
definition user {}
definition group {
    relation member: user
    relation parent: group
}
definition doc {
    relation owners: group#member | group
    permission view = owners->member
}
""", None),
    Case("nil and parentheses", """
definition user {}
definition doc {
    relation alpha: user
    relation beta: user
    relation gamma: user
    permission perm = (alpha + beta) & (gamma - nil)
    permission qperm = ((alpha))
    permission none_perm = nil
}
""", None),
    Case("multi-line expression ending in an operator", """
definition user {}
definition doc {
    relation alpha: user
    relation beta: user
    permission perm = alpha +
        beta
}
""", None),
    Case("caveats", """
definition user {}
definition doc {
    relation viewer: user with on_network | user
}
caveat on_network(ip ipaddress, cidr string) {
    ip.in_cidr(cidr)
}
""", None),
    Case("caveat types and nested braces", """
caveat typed(a int, b uint, c double, d bool, e string, f bytes, g duration, h timestamp, i list<int>,
             j map<string>, k any, l ipaddress) {
    a > 0 && b > 0u && c > 0.0 && d && e != "}" && f != b"" && g > duration("1s") &&
    h > timestamp("2020-01-01T00:00:00Z") && i.size() > 0 && {"x": j}.size() > 0 && k != null &&
    l.in_cidr("10.0.0.0/8")
}
""", None),
    Case("expiration", """
use expiration
definition user {}
caveat is_ok(flag bool) { flag }
definition doc {
    relation viewer: user with expiration | user with is_ok and expiration
}
""", None),
    Case("recursive permissions through arrows", """
definition user {}
definition folder {
    relation parent: folder
    relation viewer: user
    permission view = viewer + parent->view
}
""", None),
    Case("permission cycle through expression is allowed", """
definition user {}
definition doc {
    relation alpha: user
    permission perm = alpha + qperm
    permission qperm = perm
}
""", None),
    Case("subject relation may be a permission", """
definition user {}
definition group {
    relation direct: user
    permission member = direct
}
definition doc {
    relation viewer: group#member
}
""", None),
    # -- syntax ----------------------------------------------------------------------------
    Case("relation without types", "definition doc {\n    relation viewer:\n}", "syntax"),
    Case("statement on the closing line", "definition user {}\ndefinition doc { relation viewer: user }", "syntax"),
    Case("keyword as a name", "definition user {}\ndefinition doc {\n    relation with: user\n}", "syntax"),
    Case("operator on the next line", """
definition user {}
definition doc {
    relation alpha: user
    relation beta: user
    permission perm = alpha
        + beta
}
""", "syntax"),
    Case("unknown arrow function", """
definition user {}
definition doc {
    relation parent: doc
    permission perm = parent.some(perm)
}
""", "syntax"),
    Case("nested arrow", """
definition user {}
definition doc {
    relation parent: doc
    permission perm = parent->parent->perm
}
""", "syntax"),
    Case("use after definition", "definition user {}\nuse expiration\n", "syntax"),
    Case("unknown use flag", "use magic\ndefinition user {}", "syntax"),
    Case("expiration without use",
         "definition user {}\ndefinition doc {\n    relation viewer_rel: user with expiration\n}",
         "expiration_not_enabled"),
    Case("expiration before caveat", """
use expiration
definition user {}
caveat is_ok(flag bool) { flag }
definition doc {
    relation viewer: user with expiration and is_ok
}
""", "syntax"),
    Case("unterminated comment", "definition user {} /* open", "syntax"),
    Case("import refused", 'import "other.zed"\ndefinition user {}', "unsupported"),
    Case("partial refused", "partial p {\n    relation viewer: user\n}", "unsupported"),
    Case("self refused", "definition user {\n    permission me = self\n}", "unsupported"),
    Case("permission type annotation refused",
         "definition user {}\ndefinition doc {\n    relation viewer_rel: user\n"
         "    permission perm: user = viewer_rel\n}", "unsupported"),
    # -- semantic --------------------------------------------------------------------------
    Case("duplicate definition", "definition user {}\ndefinition user {}", "duplicate_type"),
    Case("caveat and definition share a name", "definition thing {}\ncaveat thing(alpha int) { alpha > 0 }",
         "duplicate_type"),
    Case("duplicate relation", "definition user {}\ndefinition doc {\n    relation viewer_rel: user\n"
         "    permission viewer_rel = viewer_rel\n}",
         "duplicate_relation"),
    Case("duplicate subject type", "definition user {}\ndefinition doc {\n    relation viewer_rel: user | user\n}",
         "duplicate_subject"),
    Case("short relation name", "definition user {}\ndefinition doc {\n    relation v: user\n}", "invalid_name"),
    Case("undefined subject type", "definition doc {\n    relation viewer: user\n}", "undefined_type"),
    Case("undefined subject relation",
         "definition user {}\ndefinition group {\n    relation member: user\n}\n"
         "definition doc {\n    relation viewer: group#admin\n}", "undefined_relation"),
    Case("undefined relation in permission",
         "definition user {}\ndefinition doc {\n    relation viewer: user\n    permission view = viewer + editor\n}",
         "undefined_relation"),
    Case("undefined arrow left side",
         "definition user {}\ndefinition doc {\n    permission view = parent->view\n}", "undefined_relation"),
    Case("permission on the left of an arrow", """
definition user {}
definition doc {
    relation parent: doc
    permission upward = parent
    permission view = upward->view
}
""", "permission_in_arrow"),
    Case("wildcard on the left of an arrow", """
definition user {}
definition doc {
    relation parent: doc | doc:*
    relation viewer: user
    permission view = viewer + parent->view
}
""", "wildcard_in_arrow"),
    Case("wildcard reached through a subject relation on the left of an arrow", """
definition user {}
definition doc {
    relation anyone: doc:*
    relation parent: doc#anyone
    relation viewer: user
    permission view = viewer + parent->view
}
""", "wildcard_in_arrow"),
    Case("transitive wildcard", """
definition user {}
definition group {
    relation member: user:*
}
definition doc {
    relation viewer: group#member
}
""", "transitive_wildcard"),
    Case("arrow to a relation no subject type has", """
definition user {}
definition folder {
    relation owner: user
}
definition doc {
    relation parent: folder
    permission view = parent->viewer
}
""", "arrow_unreachable"),
    Case("undefined caveat", "definition user {}\ndefinition doc {\n    relation viewer_rel: user with missing\n}",
         "undefined_condition"),
    Case("caveat without parameters", "caveat empty() { true }", "syntax"),
    Case("unused caveat parameter", "caveat cav(a int, b int) { a > 0 }", "unused_param"),
    Case("field access is not a parameter use", "caveat cav(a int, b int) { a > 0 && x.b }", "unused_param"),
    Case("unknown caveat type", "caveat cav(a integer) { a > 0 }", "invalid_param_type"),
    Case("duplicate caveat parameter", "caveat cav(a int, a int) { a > 0 }", "duplicate_param"),
    Case("unbalanced caveat expression", "caveat cav(a int) { (a > 0 }", "invalid_condition"),
    Case("permission alias cycle", """
definition user {}
definition doc {
    permission alpha = beta
    permission beta = alpha
}
""", "cycle"),
    Case("invalid definition name", "definition User {}", "invalid_name"),
    Case("too short definition name", "definition ab {}", "invalid_name"),
    Case("one-letter caveat name (SpiceDB takes it)",
         "caveat c(n int) {\n    n < 3\n}\ndefinition user {}\ndefinition doc {\n    relation viewer: user with c\n}",
         None),
    Case("caveat name with a capital", "caveat Cav(n int) {\n    n < 3\n}\ndefinition user {}\n"
         "definition doc {\n    relation viewer: user with Cav\n}", None),
    Case("caveat name with a path", "caveat org/cav(n int) {\n    n < 3\n}\ndefinition user {}\n"
         "definition doc {\n    relation viewer: user with org/cav\n}", None),
    Case("caveat name with a space", "caveat org cav(n int) {\n    n < 3\n}\ndefinition user {}\n", "syntax"),
]
