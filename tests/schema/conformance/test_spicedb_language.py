"""SpiceDB's own schema-language tests (``spicedb_language/``, copied unchanged) on tenantguard's loader.

Parser tests (``pkg/schemadsl/parser/tests``): a file whose expected parse tree has an error
node is refused with a syntax ``SchemaError`` at the error node's line and column; a file
SpiceDB parses loads, or is refused by a rule SpiceDB's compiler or type system applies too
(``SEMANTIC``: each checked against SpiceDB itself, embedded SpiceDB's WriteSchema, which
compiles and validates as a server does).

Compiler tests (``TestCompile`` in ``compiler_test.go``, read from the Go source): a case with
an expected error is refused, by the rule ``COMPILE_ERRORS`` names and at the line SpiceDB
reports when its error names one; a case without loads, or is refused because SpiceDB's type
system would refuse it too (the compiler test stops before it: most cases name definitions or
relations they never define).

Features tenantguard does not support (``use import``, ``use partial``, ``use self``,
``use typechecking``) are listed in ``UNSUPPORTED`` and must be refused naming the flag.
Where the verdict or the position still differs from SpiceDB's, ``KNOWN_DIVERGENCES`` says
why, and the test asserts that it still does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tenantguard.schema import load
from tenantguard.schema.errors import SchemaError

from .spicedb_language_suite import CompileCase, ParseError, compile_cases, parse_errors, parser_files

FILES = {p.stem: p for p in parser_files()}
CASES = {c.name: c for c in compile_cases()}

# Files SpiceDB parses and its compiler or type system refuses, with our rule and SpiceDB's reason.
SEMANTIC: dict[str, tuple[str, str]] = {
    "arrow": ("nested_arrow", "compiler: Nested arrows not yet supported"),
    "arrowops": ("nested_arrow", "compiler: Nested arrows not yet supported"),
    "associativity": ("undefined_relation", "relations a, b, c, d are never defined (and their names are too short)"),
    "basic": ("undefined_type", "object definition `sometype` not found"),
    "caveatstype": ("undefined_type", "object definition `user` not found"),
    "complexcaveat": ("invalid_caveat_expression", "undeclared reference to 'something'"),
    "crosstenant": ("undefined_type", "object definition `anothertenant/someobject` not found"),
    "duplicate_use_statement": ("undefined_type", "object definition `user` not found"),
    "indentedcomments": ("undefined_relation", "relation/permission `bar` not found under definition `single`"),
    "multidef": ("undefined_relation", "relation/permission `anotherrel` not found under definition `user`"),
    "multiparen": ("undefined_relation", "relations are never defined (and their names are too short)"),
    "nil": ("undefined_relation", "relations are never defined (and their names are too short)"),
    "parens": ("undefined_relation", "relation/permission `maz` not found under definition `foo`"),
    "permission_edge_cases": ("undefined_type", "object definition `user` not found"),
    "permission_mixed_annotations": ("undefined_type", "object definition `user` not found"),
    "permission_mixed_single_multiple": ("undefined_type", "object definition `user` not found"),
    "permission_multiple_types": ("undefined_type", "object definition `user` not found"),
    "permission_type_annotation": ("undefined_type", "object definition `user` not found"),
    "unionpos": ("undefined_relation", "relation/permission `third` not found under definition `document`"),
    "useexpiration": ("undefined_type", "object definition `user` not found"),
    "wildcard": ("undefined_type", "object definition `anothertype` not found"),
}

# Inputs using a feature tenantguard refuses (rule "unsupported"), by the flag that enables it.
UNSUPPORTED: dict[str, str] = {
    **dict.fromkeys(("localimport", "localimport_import_path_with_keyword", "localimport_with_quotes_in_quotes",
                     "localimport_with_singlequotes", "localimport_with_mismatched_quotes",
                     "localimport_with_unterminated_string"), "import"),
    **dict.fromkeys(("partials", "partials_with_malformed_partial_block", "partials_with_malformed_partial_reference",
                     "partials_with_malformed_reference_splat"), "partial"),
    "use_self": "self",
    "use_typechecking": "typechecking",
    **dict.fromkeys(("simple partial", "more complex partial", "partial defined after reference", "transitive partials",
                     "transitive partials out of order", "transitive partials in reverse order",
                     "forking transitive partials out of order", "circular reference in partials",
                     "definition reference to nonexistent partial", "definition with same name as partial",
                     "caveat with same name as partial", "definition reference to another definition errors"),
                    "partial"),
    "self with use self is allowed when used in permission expression": "self",
    "self with use self errors when used as left side of arrow": "self",
}

# Where SpiceDB's answer and ours still differ, and why. Each entry is asserted to still differ.
KNOWN_DIVERGENCES: dict[str, str] = {
    "broken": "position: SpiceDB reads past the end of the input and reports line 1, column 1; we report the end",
    "partials": "use partial: SpiceDB composes partial definitions; tenantguard refuses them (unsupported)",
    "use_typechecking": "use typechecking: SpiceDB type-checks permission annotations; tenantguard refuses the flag",
    "more complex partial": "use partial: as above",
    "self with use self is allowed when used in permission expression": "use self: tenantguard refuses the flag",
    "no implicit tenant with unspecified tenant": "SpiceDB's Go compiler option requiring an object-type prefix, "
                                                  "not the language (WriteSchema takes the schema); we take it",
}

# TestCompile's cases with an expected error: the rule we refuse them by.
COMPILE_ERRORS: dict[str, str] = {
    "parse error": "syntax",
    "nested parse error": "syntax",
    "multiarrow permission": "nested_arrow",
    # SpiceDB's error is the missing prefix (a compile option); the type `bars` is undefined as well
    "no implicit tenant with unspecified tenant on type ref": "undefined_type",
    "invalid definition name": "invalid_name",
    "invalid relation name": "invalid_name",
    "duplicate definition": "duplicate_type",
    "duplicate caveat": "duplicate_type",
    "duplicate definitions across objects and caveats": "duplicate_type",
    "caveat missing parameters": "syntax",
    "caveat missing expression": "syntax",
    "caveat invalid parameter type": "invalid_param_type",
    "caveat invalid parameter type#01": "invalid_param_type",
    "caveat missing parameter": "invalid_caveat_expression",
    "caveat missing parameter on a different line": "invalid_caveat_expression",
    "caveat invalid expression type": "invalid_caveat_expression",
    "caveat invalid expression": "invalid_caveat_expression",
}

# TestCompile's cases without an expected error that SpiceDB's type system refuses (checked with
# embedded SpiceDB's WriteSchema): they name a definition or relation they never define.
COMPILE_UNDEFINED_TYPE = frozenset({
    "simple def", "explicit relation", "wildcard relation", "cross tenant relation", "multiple relations",
    "relation with required caveat", "relation with optional caveat", "relation with multiple caveats",
    "no implicit tenant with specified tenant on type ref", "relation with expiration caveat",
    "relation with expiration trait", "wildcard relation with expiration trait",
    "relation with expiration trait and caveat",
})
COMPILE_UNDEFINED_RELATION = frozenset({
    "simple permission", "union permission", "intersection permission", "exclusion permission",
    "multi-union permission", "complex permission", "complex parens permission", "arrow permission",
    "expression permission", "multiple permission", "permission with nil", "doc comments",
    "union permission with multiple branches", "union permission with multiple branches, some not union",
    "intersection permission with multiple branches", "exclusion permission with multiple branches",
    "wrong tenant is not translated", "multiple-segment tenant", "multiple levels of compressed nesting",
    "multiple levels", "multiple reduction", "any arrow", "all arrow",
    "self is allowed when used in arrow and interpreted as relation name",
    "self is allowed when used in union and interpreted as relation name",
    "self without use self is allowed when used in permission name",
})
_SPICEDB_LINE = re.compile(r"line (\d+), column (\d+)")
_SPICEDB_CEL_AT = re.compile(r"ERROR: [\w/]+:(\d+):(\d+):")


def _refusal(text: str) -> SchemaError | None:
    """Our verdict: None when the schema loads, else the SchemaError (any other exception fails the test)."""
    try:
        load(text, "schema.zed")
    except SchemaError as e:
        return e
    return None


def _spicedb_errors(path: Path) -> list[ParseError]:
    return parse_errors(path.with_name(path.name + ".expected").read_text())


def _end_of(source: bytes) -> tuple[int, int]:
    return ParseError("", len(source)).line_column(source)


# -- the suite is whole and every file and case is accounted for ---------------------------

def test_the_whole_suite_is_here() -> None:
    assert len(FILES) == 65
    assert sum(1 for p in FILES.values() if _spicedb_errors(p)) == 29
    assert len(CASES) == 79
    assert sum(1 for c in CASES.values() if c.error) == 24


def test_every_table_names_real_files_and_cases() -> None:
    names = FILES.keys() | CASES.keys()
    for table in (SEMANTIC, UNSUPPORTED, KNOWN_DIVERGENCES, COMPILE_ERRORS):
        assert table.keys() <= names, table.keys() - names
    assert CASES.keys() >= (COMPILE_UNDEFINED_TYPE | COMPILE_UNDEFINED_RELATION)
    assert not SEMANTIC.keys() & UNSUPPORTED.keys()
    assert all(not _spicedb_errors(FILES[name]) for name in SEMANTIC)
    assert all(CASES[name].error for name in COMPILE_ERRORS)


# -- parser tests ----------------------------------------------------------------------------

PARSE_ERRORS = sorted(n for n, p in FILES.items() if _spicedb_errors(p) and n not in UNSUPPORTED)
PARSED = sorted(n for n, p in FILES.items() if not _spicedb_errors(p) and n not in UNSUPPORTED)


def test_the_counts_docs_relationships_states() -> None:
    """docs/relationships.md ("Conformance: the originals' own suites") quotes these."""
    refused_unparsed = [n for n in UNSUPPORTED if n in FILES and _spicedb_errors(FILES[n])]
    refused_parsed = [n for n in UNSUPPORTED if n in FILES and not _spicedb_errors(FILES[n])]
    assert (len(PARSE_ERRORS), len(refused_unparsed)) == (24, 5)
    assert (len(PARSED) - len(SEMANTIC), len(SEMANTIC), len(refused_parsed)) == (8, 21, 7)
    errors = [c for c in CASES.values() if c.error]
    assert (len([c for c in errors if c.name not in UNSUPPORTED and c.name not in KNOWN_DIVERGENCES]),
            len([c for c in errors if c.name in UNSUPPORTED])) == (17, 6)
    others = [c for c in CASES.values() if not c.error]
    undefined = COMPILE_UNDEFINED_TYPE | COMPILE_UNDEFINED_RELATION
    assert (len([c for c in others if c.name not in UNSUPPORTED and c.name not in undefined]), len(undefined),
            len([c for c in others if c.name in UNSUPPORTED])) == (8, 39, 8)


@pytest.mark.parametrize("name", PARSE_ERRORS)
def test_parse_error_is_refused_where_spicedb_reports_it(name: str) -> None:
    source = FILES[name].read_bytes()
    # SpiceDB reports the first error node it finds; every file's error nodes share one position
    offsets = {e.offset for e in _spicedb_errors(FILES[name])}
    assert len(offsets) == 1, f"{name}: error nodes at several positions {offsets}"
    theirs = ParseError("", offsets.pop()).line_column(source)
    refusal = _refusal(source.decode())
    assert refusal is not None, f"{name}: SpiceDB's parser refuses it at {theirs}, we load it"
    assert refusal.rule == "syntax", str(refusal)
    ours = (refusal.line, refusal.column)
    if name in KNOWN_DIVERGENCES:
        assert theirs == (1, 1) and ours == _end_of(source) != theirs
    else:
        assert ours == theirs, f"{name}: {refusal}"


@pytest.mark.parametrize("name", PARSED)
def test_what_spicedb_parses_loads_or_fails_a_rule_spicedb_also_applies(name: str) -> None:
    refusal = _refusal(FILES[name].read_text())
    if name in SEMANTIC:
        assert refusal is not None, f"{name}: SpiceDB refuses it ({SEMANTIC[name][1]}); we load it"
        assert refusal.rule == SEMANTIC[name][0], str(refusal)
    else:
        assert refusal is None, str(refusal)


# -- compiler tests --------------------------------------------------------------------------

@pytest.mark.parametrize("case", [c for c in CASES.values() if c.error and c.name not in UNSUPPORTED
                                  and c.name not in KNOWN_DIVERGENCES], ids=lambda c: c.name)
def test_compile_error_is_refused(case: CompileCase) -> None:
    refusal = _refusal(case.schema)
    assert refusal is not None, f"SpiceDB: {case.error}"
    assert refusal.rule == COMPILE_ERRORS[case.name], f"{refusal} (SpiceDB: {case.error})"
    where = _SPICEDB_LINE.search(case.error)
    if where:
        assert refusal.line == int(where.group(1)), f"{refusal} (SpiceDB: {case.error})"
    cel = _SPICEDB_CEL_AT.search(case.error)
    if cel:  # a CEL error at its place in the schema, as SpiceDB maps it
        assert (refusal.line, refusal.column) == (int(cel.group(1)), int(cel.group(2))), str(refusal)


@pytest.mark.parametrize("case", [c for c in CASES.values() if not c.error and c.name not in UNSUPPORTED],
                         ids=lambda c: c.name)
def test_what_spicedb_compiles_loads_or_fails_its_type_system(case: CompileCase) -> None:
    refusal = _refusal(case.schema)
    if case.name in COMPILE_UNDEFINED_TYPE | COMPILE_UNDEFINED_RELATION:
        assert refusal is not None
        assert refusal.rule == ("undefined_type" if case.name in COMPILE_UNDEFINED_TYPE else "undefined_relation")
    else:
        assert refusal is None, str(refusal)


# -- unsupported features and known divergences ------------------------------------------------

@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_features_are_refused_by_name(name: str) -> None:
    text = FILES[name].read_text() if name in FILES else CASES[name].schema
    refusal = _refusal(text)
    assert refusal is not None and refusal.rule == "unsupported", str(refusal)
    assert f"'use {UNSUPPORTED[name]}'" in str(refusal)


@pytest.mark.parametrize("name", sorted(KNOWN_DIVERGENCES))
def test_known_divergences_still_diverge(name: str) -> None:
    if name in FILES:
        spicedb_refuses = bool(_spicedb_errors(FILES[name]))
        refusal = _refusal(FILES[name].read_text())
    else:
        spicedb_refuses = bool(CASES[name].error)
        refusal = _refusal(CASES[name].schema)
    if name == "broken":  # a position divergence, asserted with the parse errors
        assert spicedb_refuses and refusal is not None
        return
    assert spicedb_refuses == (refusal is None), f"{name} no longer diverges: update KNOWN_DIVERGENCES"


def test_mutated_files_are_refused_only_with_schema_errors() -> None:
    """Random edits of SpiceDB's parser files (fixed seed): a SchemaError or a schema, never a crash."""
    import random

    rng = random.Random(31)
    texts = [p.read_text() for p in FILES.values()]
    pieces = [*"{}()+-&|:;#*./<>,=!?[]%\"'`\n\t _a1é", "->", "...", "use ", "expiration", "and", "with", "caveat",
              "definition", "relation", "permission", "nil", "self", "/*", "*/", "//", '"""', "'''"]
    for _ in range(1500):
        text = rng.choice(texts)
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(text) + 1)
            text = (text[:k] + rng.choice(pieces) + text[k:]) if rng.random() < 0.5 else text[:k] + text[k + 3:]
        _refusal(text)
