"""SpiceDB schemas with the verdict SpiceDB's compiler and type system give them: None (valid)
or our rule name. Written after SpiceDB's parser tests (pkg/schemadsl/parser/tests) and the
errors of pkg/schema; test_spicedb_language_oracle.py asks SpiceDB itself about each. Caveat
names follow SpiceDB's (``c``, ``Cav``, ``org/cav``), the last cases."""

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
    a > 0 && b > 0 && c > 0.0 && d && e != "}" && f != b"" && g > duration("1s") &&
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
""", "nested_arrow"),
    Case("use after definition", "definition user {}\nuse expiration\n", "syntax"),
    Case("unknown use flag", "use magic\ndefinition user {}", "syntax"),
    # Without 'use expiration', 'expiration' and 'and' are plain identifiers (SpiceDB's lexer
    # flags): 'with expiration' names a caveat, and only a defined one passes.
    Case("expiration without use names a caveat",
         "definition user {}\ndefinition doc {\n    relation viewer_rel: user with expiration\n}",
         "undefined_condition"),
    Case("a caveat named expiration without use (SpiceDB takes it)",
         "caveat expiration(n int) {\n    n > 0\n}\ndefinition user {}\n"
         "definition doc {\n    relation viewer: user with expiration\n}", None),
    Case("and without use expiration",
         "definition user {}\ncaveat cav(n int) {\n    n > 0\n}\n"
         "definition doc {\n    relation viewer: user with cav and expiration\n}", "syntax"),
    Case("expiration is a keyword after use expiration",
         "use expiration\ncaveat expiration(n int) {\n    n > 0\n}", "syntax"),
    Case("and is a keyword after use expiration",
         "use expiration\ndefinition user {}\ndefinition doc {\n    relation and: user\n}", "syntax"),
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
    Case("use partial refused", "use partial\npartial p {\n    relation viewer: user\n}", "unsupported"),
    Case("use import refused", "use import\nimport \"other.zed\"\ndefinition user {}", "unsupported"),
    Case("use self refused", "use self\ndefinition user {\n    permission me_perm = self\n}", "unsupported"),
    Case("use typechecking refused", "use typechecking\ndefinition user {}", "unsupported"),
    Case("self without use self is a relation name",
         "definition user {\n    relation self: user\n    permission me_perm = self\n}", None),
    Case("permission type annotation dropped without use typechecking (SpiceDB strips it)",
         "definition user {}\ndefinition doc {\n    relation viewer_rel: user\n"
         "    permission perm: user | group = viewer_rel\n}", None),
    Case("type annotation without a type",
         "definition user {}\ndefinition doc {\n    relation viewer_rel: user\n"
         "    permission perm: = viewer_rel\n}", "syntax"),
    Case("type annotation with a path",
         "definition user {}\ndefinition doc {\n    relation viewer_rel: user\n"
         "    permission perm: org/user = viewer_rel\n}", "syntax"),
    Case("empty statements in a definition", "definition user {;;}", None),
    Case("two semicolons at the top level", "definition user {};;", "syntax"),
    Case("caveat with a character SpiceDB cannot lex", "caveat cav(a int) {\n    a == 1 `\n}", "syntax"),
    Case("caveat string with an escaped quote (SpiceDB's lexer has no escapes)",
         'caveat cav(a string) {\n    a == "x\\"y"\n}', "syntax"),
    Case("triple single quotes end only at three double quotes (SpiceDB's lexer)",
         "caveat cav(a string) {\n    a == '''xy'''\n}", "syntax"),
    Case("a brace in a block comment before the caveat expression",
         "caveat cav(a int) {\n    /* } */ a > 0\n}", None),
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
    Case("arrow to a relation no subject type has (SpiceDB takes it, zed validate warns)", """
definition user {}
definition folder {
    relation owner: user
}
definition doc {
    relation parent: folder
    permission view = parent->viewer
}
""", None),
    Case("undefined caveat", "definition user {}\ndefinition doc {\n    relation viewer_rel: user with missing\n}",
         "undefined_condition"),
    Case("caveat without parameters", "caveat empty() { true }", "syntax"),
    Case("unused caveat parameter", "caveat cav(a int, b int) { a > 0 }", "unused_param"),
    Case("field access is not a parameter use", 'caveat cav(a int, b int) { a > 0 && {"b": 1}.b == 1 }',
         "unused_param"),
    # SpiceDB's compiler type-checks each caveat's CEL (compiler_test.go's caveat cases)
    Case("caveat naming an undeclared parameter", "caveat cav(a int) {\n    a > 0 && b > 1\n}",
         "invalid_caveat_expression"),
    Case("undeclared name is found before an unused parameter", "caveat cav(a int, b int) {\n    c > 1\n}",
         "invalid_caveat_expression"),
    Case("caveat expression that is not boolean", "caveat cav(a int) {\n    a + 1\n}", "invalid_caveat_expression"),
    Case("caveat expression CEL cannot parse", "caveat cav(a int) {\n    a > > 1\n}", "invalid_caveat_expression"),
    Case("uint is CEL int in SpiceDB: compared with an int literal (basiccaveat.zed)",
         "caveat cav(u uint) {\n    u == 42\n}", None),
    Case("uint is CEL int in SpiceDB: not with a uint literal", "caveat cav(u uint) {\n    u > 0u\n}",
         "invalid_caveat_expression"),
    Case("optional types in a caveat (SpiceDB enables them)",
         "caveat cav(m map<string>) {\n    m.?foo.orValue('') == 'x'\n}", None),
    # pkg/schema's definition_test.go (TestDefinition): its proto-built cases written as schema text
    Case('definition_test: invalid relation in computed_userset',
         'definition document {\n    relation owner: document\n    permission editor = owner\n'
         '    relation parent: document\n    permission viewer = editors + parent->viewer\n}',
         'undefined_relation'),
    Case('definition_test: invalid relation in tuple_to_userset',
         'definition document {\n    relation owner: document\n    permission editor = owner\n'
         '    relation parent: document\n    permission viewer = editor + parents->viewer\n}',
         'undefined_relation'),
    Case('definition_test: use of permission in tuple_to_userset',
         'definition document {\n    relation owner: document\n    permission editor = owner\n'
         '    permission viewer = editor->viewer\n}',
         'permission_in_arrow'),
    Case('definition_test: relation in relation types has invalid namespace',
         'definition document {\n    relation owner: someinvalidns\n}',
         'undefined_type'),
    Case('definition_test: relation in relation types has invalid relation',
         'definition anotherns {}\ndefinition document {\n    relation owner: anotherns#foobar\n}',
         'undefined_relation'),
    Case('definition_test: recursive transitive wildcard type check',
         'definition user {}\ndefinition group {\n    relation member: group#manager | user\n'
         '    relation manager: group#member | user:*\n}\ndefinition document {\n'
         '    relation viewer: user | group#member\n}',
         'transitive_wildcard'),
    Case('definition_test: redefinition of allowed public relation',
         'definition user {}\ndefinition document {\n    relation viewer: user:* | user:*\n}',
         'duplicate_subject'),
    Case('definition_test: no redefinition of allowed relation',
         'definition user {\n    relation viewer: user\n}\ndefinition document {\n'
         '    relation viewer: user:* | user | user#viewer\n}',
         None),
    Case('definition_test: duplicate caveat',
         'caveat definedcaveat(n int) {\n    n == 2\n}\ndefinition user {}\ndefinition document {\n'
         '    relation viewer: user with definedcaveat | user with definedcaveat\n}',
         'duplicate_subject'),
    Case('definition_test: valid wildcard caveat',
         'caveat definedcaveat(n int) {\n    n == 2\n}\ndefinition user {}\ndefinition document {\n'
         '    relation viewer: user | user:* with definedcaveat\n}',
         None),
    Case('definition_test: valid all the caveats',
         'caveat definedcaveat(n int) {\n    n == 2\n}\ndefinition user {}\ndefinition team {\n'
         '    relation member: user\n}\ndefinition document {\n'
         '    relation viewer: user | user with definedcaveat | user:* with definedcaveat'
         ' | team#member with definedcaveat\n'
         '}',
         None),
    Case('definition_test: duplicate expiration',
         'use expiration\ndefinition user {}\ndefinition document {\n'
         '    relation viewer: user with expiration | user with expiration\n}',
         'duplicate_subject'),
    Case('definition_test: non-duplicate expiration',
         'use expiration\ndefinition user {}\ndefinition team {}\ndefinition document {\n'
         '    relation viewer: user with expiration | team with expiration | user\n}',
         None),
    Case('definition_test: self is valid if used as a relation that exists',
         'definition user {}\ndefinition document {\n    relation self: user\n    permission editor = self\n}',
         None),
    Case("definition_test: self is invalid if used as a relation that doesn't exist",
         'definition document {\n    permission editor = self\n}',
         'undefined_relation'),
    # pkg/schema's definition_test.go (TestDefinition "full type check"): folder has no 'view'
    Case("full type check", "definition user {}\ndefinition folder {\n    relation can_comment: user\n"
         "    relation parent: folder\n}\ndefinition document {\n    relation owner: user\n"
         "    relation can_comment: user | folder#can_comment\n    permission editor = owner\n"
         "    relation parent: folder\n    relation viewer: user | user:*\n"
         "    permission view = viewer + editor + parent->view\n}", None),
    # compiler_test.go's TestCompileMultipleCaveats: each caveat compiles in its own parameters
    Case("caveats reuse parameter names", "caveat first_caveat(firstcondition int) {\n    firstcondition == 42\n}\n"
         "caveat second_caveat(secondcondition string) {\n    secondcondition == 'hello world'\n}\n"
         "caveat third_caveat(firstcondition bool) {\n    firstcondition\n}", None),
    Case("a caveat cannot read another caveat's parameter",
         "caveat first_caveat(firstcondition int) {\n    firstcondition == 42\n}\n"
         "caveat second_caveat(secondcondition string) {\n    firstcondition == 42\n}",
         "invalid_caveat_expression"),
    Case("caveat with SpiceDB's isSubtreeOf",
         "caveat cav(a map<any>, b map<any>) {\n    a.isSubtreeOf(b)\n}", None),
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
