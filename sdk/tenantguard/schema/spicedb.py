"""SpiceDB schema language -> the internal form.

Follows SpiceDB's own lexer and parser (``pkg/schemadsl``): a newline ends a statement when
it follows a name, a keyword, ``)``, ``}`` or ``*`` (SpiceDB's synthetic semicolon); in
permission expressions ``+`` binds tightest, then ``&``, then ``-``, all left-associative,
so ``a + b - c`` is ``(a + b) - c`` and ``a - b + c`` is ``a - (b + c)``; nested unions and
intersections are flattened as SpiceDB's compiler does (``a + (b + c)`` is one union of
three). ``parent->view`` and ``parent.any(view)`` are the same arrow; ``parent.all(view)``
sets ``Arrow.all``.

The lexer is SpiceDB's: a caveat's CEL is lexed too (a character SpiceDB cannot lex, or a
string with no end on its line, is a syntax error there), strings have no escapes, and
``use expiration`` makes ``expiration`` and ``and`` keywords from there on (without it,
``with expiration`` names a caveat called ``expiration``). Type annotations on permissions
(``permission p: user = ...``) are read and dropped, as SpiceDB does without
``use typechecking``. A nested arrow (``a->b->c``) is refused as SpiceDB's compiler refuses it
(rule ``nested_arrow``).

Refused with SchemaError(rule="unsupported"): ``use import``/``use partial`` (composable
schemas), ``use self``, ``use typechecking``, and ``import``, ``partial`` or ``...partial``
without their flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tenantguard.schema.errors import SchemaError
from tenantguard.schema.limits import MAX_CONDITIONS, MAX_RELATIONS, MAX_TYPES, check_depth, check_size
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
    Position,
    Relation,
    Schema,
    SubjectRef,
    TypeDef,
    Union,
)
from tenantguard.schema.validate import CEL_TYPES, check_param_type

KEYWORDS = frozenset({"definition", "caveat", "relation", "permission", "nil", "with"})
# ``use <flag>`` (before any definition or caveat) turns these identifiers into keywords from
# there on, as SpiceDB's FlaggableLexer does; an enabled word can no longer name anything.
FLAG_KEYWORDS = {"expiration": ("expiration", "and"), "typechecking": ("typechecking",), "self": ("self",),
                 "partial": ("partial",), "import": ("import",)}
# Flags SpiceDB knows that tenantguard refuses (rule "unsupported"): composable schemas
# (import, partial), permission type checking and ``self``.
UNSUPPORTED_FLAGS = frozenset({"typechecking", "self", "partial", "import"})
_ENDS_STATEMENT = frozenset({"id", "kw", "}", ")", "*"})
_IDENT = re.compile(r"[^\W]+")  # \w, narrowed to SpiceDB's isAlphaNumeric when not ASCII
_PUNCT = ("...", "->", "||", "&&", "!=", "<=", ">=", "==", "{", "}", "(", ")", "+", "|", "&", "-", "=", ":", ";",
          "#", "*", ".", "<", ">", ",", "/", "?", "!", "[", "]", "%")


def _alnum(ch: str) -> bool:
    """SpiceDB's isAlphaNumeric: ``_``, a Unicode letter or a decimal digit (Go's IsLetter/IsDigit)."""
    return ch == "_" or ch.isalpha() or ch.isdecimal()


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "id", "kw", "str", ";" (also a synthetic one), "eof", "error", or the punctuation itself
    value: str  # for "error", the lexer's message
    line: int
    column: int
    offset: int = 0  # index of the first character in the source text
    end: int = 0


class _Lexer:
    """SpiceDB's lexer (``pkg/schemadsl/lexer``): its tokens, synthetic semicolons and flags.

    A character it cannot lex, an unterminated string or comment ends the stream with an
    ``error`` token at that place; the parser reports it when it gets there, as SpiceDB's does.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.line = 1
        self.col = 1
        self.out: list[Token] = []

    def tokens(self) -> list[Token]:
        enabled: set[str] = set()
        seen_definition = after_use = False
        while True:
            tok = self._next()
            if tok.kind == "id" and not seen_definition:
                if after_use:
                    if tok.value in FLAG_KEYWORDS:
                        enabled.add(tok.value)
                    after_use = False
                else:
                    after_use = tok.value == "use"
            if tok.kind == "kw" and tok.value in ("definition", "caveat"):
                seen_definition = True
            if tok.kind == "id" and any(tok.value in FLAG_KEYWORDS[f] for f in enabled):
                tok = Token("kw", tok.value, tok.line, tok.column, tok.offset, tok.end)
            self.out.append(tok)
            if tok.kind == "error":
                self.out.append(Token("eof", "", tok.line, tok.column, tok.offset, tok.offset))
                return self.out
            if tok.kind == "eof":
                return self.out

    def _advance(self, n: int) -> None:
        chunk = self.text[self.i:self.i + n]
        newlines = chunk.count("\n")
        if newlines:
            self.line += newlines
            self.col = n - chunk.rfind("\n")
        else:
            self.col += n
        self.i += n

    def _last_kind(self) -> str:
        return self.out[-1].kind if self.out else ";"

    def _token(self, kind: str, value: str, line: int, col: int, start: int) -> Token:
        return Token(kind, value, line, col, start, self.i)

    def _next(self) -> Token:
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            line, col, start = self.line, self.col, self.i
            if ch in " \t":
                self._advance(1)
            elif ch in "\r\n":
                self._advance(1)
                if self._last_kind() in _ENDS_STATEMENT:
                    return self._token(";", ch, line, col, start)
            elif text.startswith("//", self.i):
                m = _LINE_REST.match(text, self.i)
                assert m is not None
                self._advance(m.end() - self.i)
            elif text.startswith("/*", self.i):
                end = text.find("*/", self.i + 2)
                if end < 0:
                    return self._token("error", "Unterminated multiline comment", line, col, start)
                self._advance(end + 2 - self.i)
            else:
                return self._word(line, col, start)
        return Token("eof", "", self.line, self.col, self.i, self.i)

    def _word(self, line: int, col: int, start: int) -> Token:
        text = self.text
        m = _IDENT.match(text, self.i)
        if m and _alnum(text[self.i]):
            word = m.group()
            if not word.isascii():
                word = word[:next((k for k, ch in enumerate(word) if not _alnum(ch)), len(word))]
            self._advance(len(word))
            return self._token("kw" if word in KEYWORDS else "id", word, line, col, start)
        if text[self.i] in "\"'":
            return self._string(line, col, start)
        for p in _PUNCT:
            if text.startswith(p, self.i):
                self._advance(len(p))
                return self._token(p, p, line, col, start)
        ch = text[self.i]
        return self._token("error", f"unrecognized character at this location: U+{ord(ch):04X} {ch!r}", line, col,
                           start)

    def _string(self, line: int, col: int, start: int) -> Token:
        """SpiceDB's lexStringLiteral: no escapes; a single- or double-quoted string ends at its
        line's end; a triple-quoted one may span lines and, either quote, ends at three double
        quotes (SpiceDB's own quirk for the single-quoted form, kept so the same text is refused)."""
        text = self.text
        if text.startswith('"""', start) or text.startswith("'''", start):
            opener, terminator, multiline = 3, '"""', True
        else:
            opener, terminator, multiline = 1, text[start], False
        j = start + opener
        while not text.startswith(terminator, j):
            if j >= len(text) or (not multiline and text[j] in "\r\n"):
                return self._token("error", "Unterminated string", line, col, start)
            j += 1
        self._advance(j + len(terminator) - start)
        return self._token("str", text[start:self.i], line, col, start)


_LINE_REST = re.compile(r"[^\r\n]*")


class _Parser:
    """Recursive descent mirroring SpiceDB's ``consume*`` functions, one per construct."""

    def __init__(self, tokens: list[Token], text: str) -> None:
        self.text = text
        self.toks = tokens
        self.k = 0
        self.types: dict[str, TypeDef] = {}
        self.conditions: dict[str, Condition] = {}
        self.names: set[str] = set()
        self.relation_count = 0

    @property
    def tok(self) -> Token:
        return self.toks[self.k]

    def _fail(self, message: str, tok: Token | None = None) -> SchemaError:
        t = tok or self.tok
        if t.kind == "error":  # the lexer stopped here: its message is the error
            return SchemaError(t.value, rule="syntax", line=t.line, column=t.column)
        found = "end of file" if t.kind == "eof" else "end of line" if t.value == "\n" else repr(t.value)
        return SchemaError(f"{message}, found {found}", rule="syntax", line=t.line, column=t.column)

    def _expect(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            raise self._fail(f"expected {what}")
        tok = self.tok
        self.k += 1
        return tok

    def _accept(self, kind: str) -> bool:
        if self.tok.kind == kind:
            self.k += 1
            return True
        return False

    def _is(self, kind: str, value: str) -> bool:
        return self.tok.kind == kind and self.tok.value == value

    def _unsupported(self, what: str) -> SchemaError:
        return SchemaError(f"{what} is not supported in tenantguard schemas", rule="unsupported",
                           line=self.tok.line, column=self.tok.column)

    def _path(self, what: str) -> Token:
        """``name`` or ``prefix/name`` (SpiceDB's consumeTypePath)."""
        first = self._expect("id", what)
        value = first.value
        while self._accept("/"):
            value += "/" + self._expect("id", what).value
        return Token("id", value, first.line, first.column)

    # -- file ----------------------------------------------------------------------------
    def parse(self) -> Schema:
        seen_definition = False
        while self.tok.kind != "eof":
            self._accept(";")  # SpiceDB takes one statement terminator between top-level blocks
            if self.tok.kind == "eof":
                break
            if self._is("id", "use"):
                self._use(seen_definition)
            elif self._is("kw", "definition"):
                seen_definition = True
                self._definition()
            elif self._is("kw", "caveat"):
                seen_definition = True
                self._caveat()
            elif self._is("id", "import"):
                raise self._unsupported("'import'")
            elif self._is("id", "partial"):
                raise self._unsupported("'partial'")
            else:
                raise self._fail("expected 'definition', 'caveat' or 'use'")
        return Schema(types=self.types, conditions=self.conditions, dialect="spicedb")

    def _use(self, seen_definition: bool) -> None:
        self.k += 1
        flag = self.tok  # the lexer has already made an enabled flag's own name a keyword
        if flag.kind not in ("id", "kw"):
            raise self._fail("expected a flag name after 'use'")
        self.k += 1
        after = self.tok  # SpiceDB reports these two where the statement ends, after the flag
        if flag.value not in FLAG_KEYWORDS:
            raise SchemaError(f"unknown use flag '{flag.value}' (options: {', '.join(sorted(FLAG_KEYWORDS))})",
                              rule="syntax", line=after.line, column=after.column)
        if seen_definition:
            raise SchemaError(f"'use {flag.value}' must come before any definition", rule="syntax", line=after.line,
                              column=after.column)
        if flag.value in UNSUPPORTED_FLAGS:
            raise SchemaError(f"'use {flag.value}' is not supported in tenantguard schemas", rule="unsupported",
                              line=flag.line, column=flag.column)

    def _claim(self, name: Token) -> None:
        if name.value in self.names:
            raise SchemaError(f"found name reused between multiple definitions and/or caveats: {name.value}",
                              rule="duplicate_type", line=name.line, column=name.column)
        self.names.add(name.value)

    def _definition(self) -> None:
        self.k += 1
        name = self._path("a definition name")
        self._claim(name)
        if len(self.types) >= MAX_TYPES:
            raise SchemaError(f"more than {MAX_TYPES} definitions", rule="too_large", line=name.line,
                              column=name.column)
        self._expect("{", "'{'")
        relations: dict[str, Relation] = {}
        # SpiceDB's loop: '}' ends the block; otherwise an optional relation or permission, then
        # a statement terminator (so empty statements are allowed).
        while not self._accept("}"):
            if self._is("kw", "relation") or self._is("kw", "permission"):
                rel = self._relation() if self.tok.value == "relation" else self._permission()
                if rel.name in relations:
                    raise SchemaError(f"found duplicate relation/permission name '{rel.name}' under definition "
                                      f"'{name.value}'", rule="duplicate_relation", line=rel.pos.line,
                                      column=rel.pos.column)
                relations[rel.name] = rel
                self.relation_count += 1
                if self.relation_count > MAX_RELATIONS:
                    raise SchemaError(f"more than {MAX_RELATIONS} relations", rule="too_large", line=rel.pos.line,
                                      column=rel.pos.column)
            elif self.tok.kind == "...":
                raise self._unsupported("a '...partial' reference")
            if self.tok.kind == "eof":
                raise self._fail(f"expected '}}' closing definition '{name.value}'")
            if not self._accept(";"):
                raise self._fail("expected end of statement or definition")
        self.types[name.value] = TypeDef(name.value, relations, Position(name.line, name.column))

    def _relation(self) -> Relation:
        self.k += 1
        name = self._expect("id", "a relation name")
        self._expect(":", "':' after the relation name")
        allowed = [self._subject()]
        while self._accept("|"):
            allowed.append(self._subject())
        return Relation(name.value, Direct(), tuple(allowed), pos=Position(name.line, name.column))

    def _subject(self) -> SubjectRef:
        type_name = self._path("a subject type").value
        relation: str | None = None
        wildcard = False
        if self._accept(":"):
            self._expect("*", "'*' after ':'")
            wildcard = True
        elif self._accept("#"):
            rel = self.tok
            if not (self._accept("id") or self._accept("...")):
                raise self._fail("expected a relation name or '...' after '#'")
            relation = None if rel.value == "..." else rel.value
        caveat: str | None = None
        expiration = False
        # SpiceDB's consumeSpecificTypeWithCaveat. Without 'use expiration', 'expiration' and
        # 'and' are plain identifiers: 'with expiration' then names a caveat called expiration.
        if self._is("kw", "with"):
            self.k += 1
            if not self._is("kw", "expiration"):
                caveat = self._path("a caveat name after 'with'").value
                if not self._is("kw", "and"):
                    return SubjectRef(type_name, relation, wildcard, caveat, expiration)
                self.k += 1
            if self._is("kw", "expiration"):
                self.k += 1
                expiration = True
                if self._is("kw", "and"):
                    raise self._fail("the caveat must come before expiration, e.g. `with <caveat_name> and "
                                     "expiration`")
        return SubjectRef(type_name, relation, wildcard, caveat, expiration)

    def _permission(self) -> Relation:
        self.k += 1
        name = self._expect("id", "a permission name")
        if self._accept(":"):
            self._type_annotation()
        self._expect("=", "'=' after the permission name")
        if not self._starts_expression():
            raise self._fail("expected a compute expression for the permission")
        expr = self._expr(0, 0)
        return Relation(name.value, expr, (), is_permission=True, pos=Position(name.line, name.column))

    def _type_annotation(self) -> None:
        """``permission p: user | org = ...``: SpiceDB drops the annotation unless 'use typechecking'
        (refused here as unsupported) is on, so it is read and dropped."""
        self._expect("id", "a type in the type annotation")
        while self._accept("|"):
            self._expect("id", "a type after '|' in the type annotation")

    def _starts_expression(self) -> bool:
        return self.tok.kind in ("(", "id") or self._is("kw", "nil")

    # -- expressions: '-' loosest, then '&', then '+' ------------------------------------
    _LEVELS = (("-", Exclusion), ("&", Intersection), ("+", Union))

    def _expr(self, level: int, depth: int) -> Expr:
        check_depth(depth, self.tok.line, self.tok.column)
        if level == len(self._LEVELS):
            return self._arrow_or_base(depth)
        op, kind = self._LEVELS[level]
        left = self._expr(level + 1, depth)
        while self._accept(op):
            if not self._starts_expression():
                raise self._fail("expected right hand expression")
            right = self._expr(level + 1, depth)
            left = _combine(kind, left, right)
        return left

    def _arrow_or_base(self, depth: int) -> Expr:
        if self._accept("("):
            if not self._starts_expression():
                raise self._fail("expected a compute expression for the permission")
            inner = self._expr(0, depth + 1)
            self._expect(")", "')'")
            return inner
        if self._is("kw", "nil"):
            self.k += 1
            return Nil()
        name = self._expect("id", "a relation, permission, 'nil' or '('")
        pos = Position(name.line, name.column)
        if self.tok.kind not in ("->", "."):
            return Computed(name.value, pos=pos)
        arrow = self._arrow_step(name.value, pos)
        if self.tok.kind in ("->", "."):
            # SpiceDB parses a chain (a->b->c) and its compiler refuses it at the chain's start.
            while self.tok.kind in ("->", "."):
                self._arrow_step("", pos)
            raise SchemaError("Nested arrows not yet supported", rule="nested_arrow", line=pos.line,
                              column=pos.column)
        return arrow

    def _arrow_step(self, tupleset: str, pos: Position) -> Arrow:
        if self._accept("->"):
            if self.tok.kind != "id":
                raise self._fail("expected right hand expression")
            return Arrow(tupleset, self._expect("id", "a relation or permission after '->'").value, pos=pos)
        self._expect(".", "'.'")
        fn = self._expect("id", "'any' or 'all'")
        if fn.value not in ("any", "all"):
            raise self._fail(f"expected 'any' or 'all' for arrow function, not '{fn.value}'")
        self._expect("(", "'('")
        target = self._expect("id", "a relation or permission")
        self._expect(")", "')'")
        return Arrow(tupleset, target.value, all=fn.value == "all", pos=pos)

    # -- caveats ---------------------------------------------------------------------------
    def _caveat(self) -> None:
        self.k += 1
        name = self._path("a caveat name")
        self._claim(name)
        if len(self.conditions) >= MAX_CONDITIONS:
            raise SchemaError(f"more than {MAX_CONDITIONS} caveats", rule="too_large", line=name.line,
                              column=name.column)
        self._expect("(", "'(' after the caveat name")
        params: list[Param] = []
        while True:
            pname = self._expect("id", "a parameter name")
            if any(p.name == pname.value for p in params):
                raise SchemaError(f"duplicate parameter '{pname.value}' defined on caveat '{name.value}'",
                                  rule="duplicate_param", line=pname.line, column=pname.column)
            ptype = self._cel_type(0)
            try:
                check_param_type(ptype, CEL_TYPES, f"caveat '{name.value}'")
            except SchemaError as e:
                raise SchemaError(e.message, rule=e.rule, line=pname.line, column=pname.column) from None
            params.append(Param(pname.value, ptype))
            if not self._accept(","):
                break
        self._expect(")", "')'")
        self._expect("{", "'{'")
        start = self.tok
        expression = self._caveat_expression(name.value)
        self._expect("}", "'}' closing the caveat expression")
        self.conditions[name.value] = Condition(name.value, tuple(params), expression,
                                                pos=Position(name.line, name.column),
                                                expression_pos=Position(start.line, start.column))

    def _caveat_expression(self, caveat: str) -> str:
        """SpiceDB's consumeCaveatExpression: the tokens up to the '}' that balances the opening
        one (braces inside strings and comments do not count); the CEL text runs from the first
        token to the end of the last, exactly what SpiceDB hands to CEL."""
        depth, first, last = 1, None, None
        while self.tok.kind not in ("eof", "error"):
            if self.tok.kind == "{":
                depth += 1
            elif self.tok.kind == "}":
                if depth == 1:
                    break
                depth -= 1
            first = first or self.tok
            last = self.tok
            self.k += 1
        if first is None or last is None:
            raise SchemaError(f"missing caveat expression in '{caveat}'", rule="syntax", line=self.tok.line,
                              column=self.tok.column)
        return self.text[first.offset:last.end].strip()

    def _cel_type(self, depth: int) -> str:
        check_depth(depth, self.tok.line, self.tok.column)
        base = self._expect("id", "a parameter type").value
        if not self._accept("<"):
            return base
        inner = [self._cel_type(depth + 1)]
        while self._accept(","):
            inner.append(self._cel_type(depth + 1))
        self._expect(">", "'>'")
        return f"{base}<{','.join(inner)}>"


def _combine(kind: type, left: Expr, right: Expr) -> Expr:
    if kind is Exclusion:
        return Exclusion(left, right)
    children = _flatten(left, kind) + _flatten(right, kind)
    return Union(children) if kind is Union else Intersection(children)


def _flatten(expr: Expr, kind: type) -> tuple[Expr, ...]:
    """SpiceDB's collapseOps: a child of the same set operation contributes its children."""
    if isinstance(expr, kind) and isinstance(expr, (Union, Intersection)):
        return expr.children
    return (expr,)


def cel_lex_error(expression: str) -> str | None:
    """Why SpiceDB's lexer cannot read this caveat expression (a string with an escaped quote, a
    character it does not know), or None when it can; for writing CEL into a SpiceDB schema."""
    last = _Lexer(expression).tokens()[-2:]
    return last[0].value if last and last[0].kind == "error" else None


def parse_spicedb(text: str) -> Schema:
    """Parse SpiceDB schema text into the internal form (syntax only; see ``validate``)."""
    check_size(text)
    return _Parser(_Lexer(text).tokens(), text).parse()
