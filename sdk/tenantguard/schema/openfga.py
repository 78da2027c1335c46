"""OpenFGA modeling language (schema 1.1) -> the internal form.

A hand-written lexer and recursive-descent parser that follow OpenFGA's ANTLR grammar
(``OpenFGAParser.g4``): the layout is line-oriented (a type, a ``define`` and a condition
each start a line), ``or``/``and`` may not be mixed at one level without parentheses,
``but not`` takes exactly one right operand, and the direct assignment ``[...]`` may only
stand first. Groups are kept as written, so ``(a or b) or c`` is ``Union(Union(a, b), c)``
exactly like OpenFGA's own DSL-to-JSON transformer. Modular models (``module``,
``extend type``) are refused: a tenantguard bundle carries one self-contained model.

Syntax errors raise SchemaError(rule="syntax"); the semantic rules live in ``validate``.
"""

from __future__ import annotations

import itertools
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
    Param,
    Position,
    Relation,
    Schema,
    SubjectRef,
    TypeDef,
    Union,
)

# Words the OpenFGA lexer turns into their own tokens, so they cannot name a type or relation.
RESERVED = frozenset({"and", "or", "from", "define", "relations", "condition", "with", "in",
                      "true", "false", "null"})
PARAM_TYPES = frozenset({"bool", "string", "int", "uint", "double", "duration", "timestamp",
                         "ipaddress"})
CONTAINERS = frozenset({"list", "map"})

_IDENT = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_-]|[/.](?=[A-Za-z0-9_]))*")
_VERSION = re.compile(r"[0-9]+\.[0-9]+")
_PUNCT = frozenset(":,[]()#*<>{")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "id", "ver", "nl", "eof", or the punctuation character itself
    value: str
    line: int
    column: int


class _Lexer:
    """Splits DSL text into tokens; newlines matter everywhere except inside ``[...]``.

    A ``#`` that starts a line or follows whitespace begins a comment (OpenFGA allows them
    on their own lines and after a definition); ``group#member`` keeps its ``#``.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.line = 1
        self.col = 1
        self.bracket = 0

    def tokens(self) -> list[Token]:
        out: list[Token] = []
        while True:
            tok = self._next()
            if tok.kind == "nl" and out and out[-1].kind == "nl":
                continue
            out.append(tok)
            if tok.kind == "eof":
                return out
            if tok.kind == "{":
                out.append(self._condition_body())

    def _advance(self, n: int) -> None:
        for ch in self.text[self.i:self.i + n]:
            if ch == "\n":
                self.line += 1
                self.col = 1
            else:
                self.col += 1
        self.i += n

    def _next(self) -> Token:
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch in " \t\f":
                self._advance(1)
            elif ch == "#" and (self.i == 0 or text[self.i - 1] in " \t\f\r\n"):
                end = text.find("\n", self.i)
                self._advance((len(text) if end < 0 else end) - self.i)
            elif ch in "\r\n":
                line, col = self.line, self.col
                self._advance(2 if text.startswith("\r\n", self.i) else 1)
                if self.bracket == 0:
                    return Token("nl", "\n", line, col)
            else:
                return self._word()
        return Token("eof", "", self.line, self.col)

    def _word(self) -> Token:
        line, col, ch = self.line, self.col, self.text[self.i]
        m = _VERSION.match(self.text, self.i) or _IDENT.match(self.text, self.i)
        if m:
            self._advance(m.end() - self.i)
            return Token("ver" if m.re is _VERSION else "id", m.group(), line, col)
        if ch in _PUNCT:
            # Newlines may break a type list, but not a group or a condition's parameters.
            if ch in "[]":
                self.bracket = max(self.bracket + (1 if ch == "[" else -1), 0)
            self._advance(1)
            return Token(ch, ch, line, col)
        raise SchemaError(f"unexpected character {ch!r}", rule="syntax", line=line, column=col)

    def _condition_body(self) -> Token:
        """The CEL text up to the first ``}`` outside a string literal (OpenFGA's own rule)."""
        start, line, col = self.i, self.line, self.col
        text, i = self.text, self.i
        while i < len(text):
            ch = text[i]
            if ch == "}":
                body = text[start:i]
                self._advance(i - start + 1)
                self.bracket = 0
                return Token("cel", body, line, col)
            if ch in "\"'":
                i = skip_string(text, i, line, col)
                continue
            i += 1
        raise SchemaError("condition body has no closing '}'", rule="syntax", line=line, column=col)


def skip_string(text: str, i: int, line: int, col: int) -> int:
    """Index just past the CEL string literal starting at ``i`` (quotes, triple quotes, escapes)."""
    quote = text[i] * 3 if text.startswith(text[i] * 3, i) else text[i]
    j = i + len(quote)
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text.startswith(quote, j):
            return j + len(quote)
        if len(quote) == 1 and text[j] == "\n":
            break
        j += 1
    raise SchemaError("unterminated string in condition", rule="syntax", line=line, column=col)


def cel_expression(body: str) -> str:
    """The expression OpenFGA stores for a condition body: edges trimmed as its grammar does.

    Leading whitespace and newlines go; trailing whitespace goes only if it holds a newline
    (``{ x < 1 }`` keeps its inner trailing space, as OpenFGA's transformer does).
    """
    body = body.lstrip(" \t\f\r\n")
    stripped = body.rstrip(" \t\f\r\n")
    tail = body[len(stripped):]
    return stripped if ("\n" in tail or "\r" in tail) else body


class _Parser:
    """Recursive descent over the token list; one method per grammar rule."""

    def __init__(self, tokens: list[Token]) -> None:
        self.toks = tokens
        self.k = 0
        self.types: dict[str, TypeDef] = {}
        self.conditions: dict[str, Condition] = {}
        self.relation_count = 0

    # -- token helpers -------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.k]

    def _fail(self, message: str, tok: Token | None = None) -> SchemaError:
        t = tok or self.tok
        found = "end of file" if t.kind == "eof" else "end of line" if t.kind == "nl" else repr(t.value)
        return SchemaError(f"{message}, found {found}", rule="syntax", line=t.line, column=t.column)

    def _expect(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            raise self._fail(f"expected {what}")
        tok = self.tok
        self.k += 1
        return tok

    def _keyword(self, word: str) -> Token:
        if self.tok.kind != "id" or self.tok.value != word:
            raise self._fail(f"expected '{word}'")
        return self._expect("id", word)

    def _is_word(self, word: str, offset: int = 0) -> bool:
        t = self.toks[min(self.k + offset, len(self.toks) - 1)]
        return t.kind == "id" and t.value == word

    def _name(self, what: str) -> Token:
        tok = self._expect("id", what)
        if tok.value in RESERVED:
            raise self._fail(f"expected {what} ('{tok.value}' is a keyword)", tok)
        return tok

    def _skip_newlines(self) -> None:
        while self.tok.kind == "nl":
            self.k += 1

    def _end_of_line(self) -> None:
        if self.tok.kind not in ("nl", "eof"):
            raise self._fail("expected end of line")

    # -- file ----------------------------------------------------------------------------
    def parse(self) -> Schema:
        self._skip_newlines()
        if self._is_word("module"):
            if self.toks[self.k + 1].kind in ("nl", "eof"):
                raise SchemaError("expected a module name after 'module'", rule="syntax", line=self.tok.line,
                                  column=self.tok.column + len("module"))
            raise SchemaError("modular models (module / fga.mod) are not supported: combine the modules "
                              "into one model first (`fga model write` does this)", rule="unsupported",
                              line=self.tok.line, column=self.tok.column)
        self._header()
        while True:
            self._skip_newlines()
            if self.tok.kind == "eof":
                break
            if self._is_word("type"):
                if self.conditions:
                    raise self._fail("types must come before conditions")
                self._type_def()
            elif self._is_word("condition"):
                self._condition()
            elif self._is_word("extend"):
                # OpenFGA points at the extended type's name
                named = self._is_word("type", 1) and self.toks[self.k + 2].kind == "id"
                at = self.toks[self.k + 2] if named else self.tok
                raise SchemaError("'extend type' belongs to modular models, which are not supported",
                                  rule="unsupported", line=at.line, column=at.column)
            else:
                raise self._fail("expected 'type' or 'condition'")
        return Schema(types=self.types, conditions=self.conditions, dialect="openfga")

    def _header(self) -> None:
        self._keyword("model")
        self._expect("nl", "a new line after 'model'")
        self._keyword("schema")
        ver = self._expect("ver", "a schema version such as 1.1")
        if ver.value not in ("1.1", "1.2"):
            raise SchemaError(f"schema version {ver.value} is not supported (1.1 is)", rule="schema_version",
                              line=ver.line, column=ver.column)
        self._end_of_line()

    def _type_def(self) -> None:
        self._keyword("type")
        name = self._name("a type name")
        if name.value in self.types:
            first = self.types[name.value].pos
            raise SchemaError(f"type '{name.value}' is defined twice (again at line {name.line})",
                              rule="duplicate_type", line=first.line, column=first.column)
        if len(self.types) >= MAX_TYPES:
            raise SchemaError(f"more than {MAX_TYPES} types", rule="too_large", line=name.line, column=name.column)
        self._end_of_line()
        relations: dict[str, Relation] = {}
        if self.tok.kind == "nl" and self._is_word("relations", 1):
            self.k += 2
            self._end_of_line()
            while self.tok.kind == "nl" and self._is_word("define", 1):
                self.k += 1
                rel = self._define()
                if rel.name in relations:
                    raise SchemaError(f"relation '{rel.name}' is defined twice in type '{name.value}'",
                                      rule="duplicate_relation", line=rel.pos.line, column=rel.pos.column)
                relations[rel.name] = rel
            if not relations:
                self._skip_newlines()
                raise self._fail("expected at least one 'define' after 'relations'")
        self.types[name.value] = TypeDef(name.value, relations, Position(name.line, name.column))

    def _define(self) -> Relation:
        self._keyword("define")
        name = self._name("a relation name")
        self.relation_count += 1
        if self.relation_count > MAX_RELATIONS:
            raise SchemaError(f"more than {MAX_RELATIONS} relations", rule="too_large",
                              line=name.line, column=name.column)
        self._expect(":", "':' after the relation name")
        allowed: list[SubjectRef] = []
        rewrite = self._relation_def(allowed, depth=0, direct_ok=True)
        self._end_of_line()
        return Relation(name.value, rewrite, tuple(allowed), pos=Position(name.line, name.column))

    # -- relation expressions ------------------------------------------------------------
    def _relation_def(self, allowed: list[SubjectRef], depth: int, direct_ok: bool) -> Expr:
        """First operand (direct assignment only if ``direct_ok``), then one kind of partials."""
        check_depth(depth, self.tok.line, self.tok.column)
        if self.tok.kind == "[":
            if not direct_ok:
                raise self._fail("a direct assignment [...] may only come first")
            first: Expr = self._direct(allowed)
        elif self.tok.kind == "(":
            first = self._group(allowed, depth, direct_ok)
        else:
            first = self._rewrite()
        return self._partials(first, allowed, depth)

    def _partials(self, first: Expr, allowed: list[SubjectRef], depth: int) -> Expr:
        op = self._operator()
        if op is None:
            return first
        items = [first]
        while True:
            items.append(self._operand(allowed, depth))
            nxt = self._operator()
            if nxt is None:
                break
            if nxt != op or op == "but not":
                at = self.toks[self.k - (2 if nxt == "but not" else 1)]  # the operator's first word
                raise self._fail("mixing 'or', 'and' and 'but not' needs parentheses", at)
        if op == "or":
            return Union(tuple(items))
        if op == "and":
            return Intersection(tuple(items))
        return Exclusion(items[0], items[1])

    def _operator(self) -> str | None:
        if self._is_word("or") or self._is_word("and"):
            word = self.tok.value
            self.k += 1
            return word
        if self._is_word("but") and self._is_word("not", 1):
            self.k += 2
            return "but not"
        return None

    def _operand(self, allowed: list[SubjectRef], depth: int) -> Expr:
        if self.tok.kind == "(":
            return self._group(allowed, depth, direct_ok=False)
        if self.tok.kind == "[":
            raise self._fail("a direct assignment [...] may only come first")
        return self._rewrite()

    def _group(self, allowed: list[SubjectRef], depth: int, direct_ok: bool) -> Expr:
        self._expect("(", "'('")
        inner = self._relation_def(allowed, depth + 1, direct_ok)
        self._expect(")", "')'")
        return inner

    def _rewrite(self) -> Expr:
        if self._is_word("but") and self._is_word("not", 1):
            raise self._fail("expected a relation name, '(' or '[' before 'but not'")
        name = self._name("a relation name")
        pos = Position(name.line, name.column)
        if self._is_word("from"):
            self.k += 1
            tupleset = self._name("a relation name after 'from'")
            return Arrow(tupleset.value, name.value, pos=pos, tupleset_pos=Position(tupleset.line, tupleset.column))
        return Computed(name.value, pos=pos)

    def _direct(self, allowed: list[SubjectRef]) -> Expr:
        self._expect("[", "'['")
        while True:
            allowed.append(self._restriction())
            if self.tok.kind == "]":
                self.k += 1
                return Direct()
            self._expect(",", "',' or ']'")

    def _restriction(self) -> SubjectRef:
        start = self._name("a type name")
        type_name = start.value
        relation: str | None = None
        wildcard = False
        if self.tok.kind == ":":
            self.k += 1
            self._expect("*", "'*' after ':'")
            wildcard = True
        elif self.tok.kind == "#":
            self.k += 1
            relation = self._name("a relation name after '#'").value
        condition: str | None = None
        condition_pos = Position()
        if self._is_word("with"):
            self.k += 1
            cond = self._name("a condition name after 'with'")
            condition, condition_pos = cond.value, Position(cond.line, cond.column)
        return SubjectRef(type_name, relation, wildcard, condition, pos=Position(start.line, start.column),
                          condition_pos=condition_pos)

    # -- conditions ----------------------------------------------------------------------
    def _condition(self) -> None:
        self._keyword("condition")
        name = self._name("a condition name")
        if name.value in self.conditions:
            raise SchemaError(f"condition '{name.value}' is defined twice", rule="duplicate_condition",
                              line=name.line, column=name.column)
        if len(self.conditions) >= MAX_CONDITIONS:
            raise SchemaError(f"more than {MAX_CONDITIONS} conditions", rule="too_large",
                              line=name.line, column=name.column)
        self._expect("(", "'(' after the condition name")
        params: list[Param] = []
        while True:
            pname = self._name("a parameter name")
            if any(p.name == pname.value for p in params):
                raise SchemaError(f"parameter '{pname.value}' is defined twice in condition '{name.value}'",
                                  rule="duplicate_param", line=pname.line, column=pname.column)
            if self.tok.kind != ":":
                raise self._fail("expected 'name: type' for a parameter", pname)
            self.k += 1
            params.append(Param(pname.value, self._param_type()))
            if self.tok.kind == ")":
                self.k += 1
                break
            self._expect(",", "',' or ')'")
        self._expect("{", "'{' opening the condition body")
        body = self._expect("cel", "a condition expression")
        expression = cel_expression(body.value)
        if not expression.strip():
            raise SchemaError(f"condition '{name.value}' has an empty expression", rule="invalid_condition",
                              line=body.line, column=body.column)
        self._end_of_line()
        self.conditions[name.value] = Condition(name.value, tuple(params), expression,
                                                pos=Position(name.line, name.column))

    def _param_type(self) -> str:
        tok = self._expect("id", "a parameter type")
        if tok.value in CONTAINERS:
            parts = [tok, self._expect("<", f"'<' after '{tok.value}'"), self._expect("id", "a parameter type"),
                     self._expect(">", "'>'")]
            for left, right in itertools.pairwise(parts):
                if (right.line, right.column) != (left.line, left.column + len(left.value)):
                    raise self._fail(f"no spaces are allowed inside '{tok.value}<...>'", right)
            if parts[2].value not in PARAM_TYPES:
                raise _bad_param_type(parts[2])
            return f"{tok.value}<{parts[2].value}>"
        if tok.value not in PARAM_TYPES:
            raise _bad_param_type(tok)
        return tok.value


def _bad_param_type(tok: Token) -> SchemaError:
    allowed = ", ".join(sorted(PARAM_TYPES | {"list<T>", "map<T>"}))
    return SchemaError(f"unsupported parameter type '{tok.value}' (one of {allowed})", rule="invalid_param_type",
                       line=tok.line, column=tok.column)


def parse_openfga(text: str) -> Schema:
    """Parse OpenFGA DSL text into the internal form (syntax only; see ``validate``)."""
    check_size(text)
    return _Parser(_Lexer(text).tokens()).parse()
