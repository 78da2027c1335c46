"""SpiceDB schema language -> the internal form.

Follows SpiceDB's own lexer and parser (``pkg/schemadsl``): a newline ends a statement when
it follows a name, a keyword, ``)``, ``}`` or ``*`` (SpiceDB's synthetic semicolon); in
permission expressions ``+`` binds tightest, then ``&``, then ``-``, all left-associative,
so ``a + b - c`` is ``(a + b) - c`` and ``a - b + c`` is ``a - (b + c)``; nested unions and
intersections are flattened as SpiceDB's compiler does (``a + (b + c)`` is one union of
three). ``parent->view`` and ``parent.any(view)`` are the same arrow; ``parent.all(view)``
sets ``Arrow.all``.

Refused with SchemaError(rule="unsupported"): ``import``, ``partial`` and ``...partial``
references, ``self``, and type annotations on permissions (``permission p: user = ...``),
all newer composition features a single-file bundle schema does not need.
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

KEYWORDS = frozenset({"definition", "caveat", "relation", "permission", "nil", "with"})
_ENDS_STATEMENT = frozenset({"id", "kw", "}", ")", "*"})
_IDENT = re.compile(r"[^\W]+")  # letters, digits, underscore (SpiceDB's isAlphaNumeric)
_PUNCT = ("...", "->", "{", "}", "(", ")", "+", "|", "&", "-", "=", ":", ";", "#", "*", ".", "<", ">", ",", "/")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "id", "kw", ";" (also a synthetic one), "eof", "cel", or the punctuation itself
    value: str
    line: int
    column: int


class _Lexer:
    """Tokens of a SpiceDB schema, with SpiceDB's synthetic semicolons and comments dropped."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.line = 1
        self.col = 1
        self.out: list[Token] = []

    def tokens(self) -> list[Token]:
        caveat_state = 0  # 1: after 'caveat', 2: inside its parameters, next '{' opens the CEL body
        while True:
            tok = self._next()
            if tok.kind == "eof":
                self.out.append(tok)
                return self.out
            self.out.append(tok)
            if tok.kind == "kw" and tok.value == "caveat":
                caveat_state = 1
            elif tok.kind == "{" and caveat_state:
                caveat_state = 0
                self.out.append(self._caveat_body(tok))

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

    def _next(self) -> Token:
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            line, col = self.line, self.col
            if ch in " \t":
                self._advance(1)
            elif ch in "\r\n":
                self._advance(1)
                if self._last_kind() in _ENDS_STATEMENT:
                    return Token(";", "\n", line, col)
            elif text.startswith("//", self.i):
                end = text.find("\n", self.i)
                self._advance((len(text) if end < 0 else end) - self.i)
            elif text.startswith("/*", self.i):
                end = text.find("*/", self.i + 2)
                if end < 0:
                    raise SchemaError("unterminated /* comment", rule="syntax", line=line, column=col)
                self._advance(end + 2 - self.i)
            else:
                return self._word(line, col)
        return Token("eof", "", self.line, self.col)

    def _word(self, line: int, col: int) -> Token:
        m = _IDENT.match(self.text, self.i)
        if m:
            self._advance(m.end() - self.i)
            return Token("kw" if m.group() in KEYWORDS else "id", m.group(), line, col)
        if self.text[self.i] in "\"'":
            end = self._string_end(self.i)
            value = self.text[self.i:end]
            self._advance(end - self.i)
            return Token("str", value, line, col)
        for p in _PUNCT:
            if self.text.startswith(p, self.i):
                self._advance(len(p))
                return Token(p, p, line, col)
        raise SchemaError(f"unrecognized character {self.text[self.i]!r}", rule="syntax", line=line, column=col)

    def _string_end(self, i: int) -> int:
        quote = self.text[i] * 3 if self.text.startswith(self.text[i] * 3, i) else self.text[i]
        j = i + len(quote)
        while j < len(self.text):
            if self.text[j] == "\\":
                j += 2
            elif self.text.startswith(quote, j):
                return j + len(quote)
            else:
                j += 1
        raise SchemaError("unterminated string", rule="syntax", line=self.line, column=self.col)

    def _caveat_body(self, brace: Token) -> Token:
        """Raw CEL text up to the ``}`` that balances the opening one (strings and comments skipped)."""
        start, line, col, depth, j = self.i, self.line, self.col, 1, self.i
        text = self.text
        while j < len(text):
            ch = text[j]
            if ch in "\"'":
                self.i = j
                j = self._string_end(j)
                continue
            if text.startswith("//", j):
                nl = text.find("\n", j)
                j = len(text) if nl < 0 else nl
                continue
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if depth == 0:
                self.i = start
                self._advance(j - start)
                return Token("cel", text[start:j].strip(), line, col)
            j += 1
        raise SchemaError("caveat body has no closing '}'", rule="syntax", line=brace.line, column=brace.column)


class _Parser:
    """Recursive descent mirroring SpiceDB's ``consume*`` functions, one per construct."""

    def __init__(self, tokens: list[Token]) -> None:
        self.toks = tokens
        self.k = 0
        self.types: dict[str, TypeDef] = {}
        self.conditions: dict[str, Condition] = {}
        self.names: set[str] = set()
        self.expiration = False
        self.relation_count = 0

    @property
    def tok(self) -> Token:
        return self.toks[self.k]

    def _fail(self, message: str, tok: Token | None = None) -> SchemaError:
        t = tok or self.tok
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
        while True:
            while self._accept(";"):
                pass
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
        flag = self._expect("id", "a flag name after 'use'")
        if flag.value != "expiration":
            raise SchemaError(f"unknown use flag '{flag.value}' (options: expiration)", rule="syntax",
                              line=flag.line, column=flag.column)
        if seen_definition:
            raise SchemaError("'use' must come before any definition", rule="syntax", line=flag.line,
                              column=flag.column)
        self.expiration = True

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
        while not self._accept("}"):
            if self._is("kw", "relation"):
                rel = self._relation()
            elif self._is("kw", "permission"):
                rel = self._permission()
            elif self.tok.kind == "...":
                raise self._unsupported("a '...partial' reference")
            else:
                raise self._fail("expected 'relation', 'permission' or '}'")
            if rel.name in relations:
                raise SchemaError(f"found duplicate relation/permission name '{rel.name}' under definition "
                                  f"'{name.value}'", rule="duplicate_relation", line=rel.pos.line,
                                  column=rel.pos.column)
            relations[rel.name] = rel
            self.relation_count += 1
            if self.relation_count > MAX_RELATIONS:
                raise SchemaError(f"more than {MAX_RELATIONS} relations", rule="too_large", line=rel.pos.line,
                                  column=rel.pos.column)
            if not (self._accept(";") or self.tok.kind == "eof"):
                raise self._fail("expected end of statement")
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
        if self._is("kw", "with"):
            self.k += 1
            if not self._is("id", "expiration"):
                caveat = self._path("a caveat name after 'with'").value
                expiration = self._is("id", "and") and self._and_expiration()
            else:
                expiration = self._expiration_trait()
        return SubjectRef(type_name, relation, wildcard, caveat, expiration)

    def _and_expiration(self) -> bool:
        self.k += 1
        if not self._is("id", "expiration"):
            raise self._fail("expected 'expiration' after 'and'")
        return self._expiration_trait()

    def _expiration_trait(self) -> bool:
        tok = self._expect("id", "'expiration'")
        if not self.expiration:
            raise SchemaError("expiration trait is not allowed: add 'use expiration' at the top of the schema",
                              rule="expiration_not_enabled", line=tok.line, column=tok.column)
        if self._is("id", "and"):
            raise self._fail("the caveat must come before expiration, e.g. `with <caveat_name> and expiration`")
        return True

    def _permission(self) -> Relation:
        self.k += 1
        name = self._expect("id", "a permission name")
        if self.tok.kind == ":":
            raise self._unsupported("a type annotation on a permission")
        self._expect("=", "'=' after the permission name")
        expr = self._expr(0, 0)
        return Relation(name.value, expr, (), is_permission=True, pos=Position(name.line, name.column))

    # -- expressions: '-' loosest, then '&', then '+' ------------------------------------
    _LEVELS = (("-", Exclusion), ("&", Intersection), ("+", Union))

    def _expr(self, level: int, depth: int) -> Expr:
        check_depth(depth, self.tok.line, self.tok.column)
        if level == len(self._LEVELS):
            return self._arrow_or_base(depth)
        op, kind = self._LEVELS[level]
        left = self._expr(level + 1, depth)
        while self._accept(op):
            right = self._expr(level + 1, depth)
            left = _combine(kind, left, right)
        return left

    def _arrow_or_base(self, depth: int) -> Expr:
        if self._accept("("):
            inner = self._expr(0, depth + 1)
            self._expect(")", "')'")
            return inner
        if self._is("kw", "nil"):
            self.k += 1
            return Nil()
        if self._is("id", "self"):
            raise self._unsupported("'self'")
        name = self._expect("id", "a relation, permission, 'nil' or '('")
        pos = Position(name.line, name.column)
        if self.tok.kind not in ("->", "."):
            return Computed(name.value, pos=pos)
        arrow = self._arrow_step(name.value, pos)
        if self.tok.kind in ("->", "."):
            raise self._fail("nested arrows are not supported (SpiceDB: 'Nested arrows not yet supported')")
        return arrow

    def _arrow_step(self, tupleset: str, pos: Position) -> Arrow:
        if self._accept("->"):
            return Arrow(tupleset, self._expect("id", "a relation or permission after '->'").value, pos=pos)
        self._expect(".", "'.'")
        fn = self._expect("id", "'any' or 'all'")
        if fn.value not in ("any", "all"):
            raise self._fail(f"expected 'any' or 'all' for arrow function, found '{fn.value}'", fn)
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
            params.append(Param(pname.value, self._cel_type(0)))
            if not self._accept(","):
                break
        self._expect(")", "')'")
        self._expect("{", "'{'")
        body = self._expect("cel", "a caveat expression")
        if not body.value:
            raise SchemaError(f"missing caveat expression in '{name.value}'", rule="syntax", line=body.line,
                              column=body.column)
        self._expect("}", "'}'")
        self.conditions[name.value] = Condition(name.value, tuple(params), body.value,
                                                pos=Position(name.line, name.column))

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


def parse_spicedb(text: str) -> Schema:
    """Parse SpiceDB schema text into the internal form (syntax only; see ``validate``)."""
    check_size(text)
    return _Parser(_Lexer(text).tokens()).parse()
