"""Readers for SpiceDB's schema-language tests (``spicedb_language/``, copied unchanged).

``parse_errors`` reads a ``*.zed.expected`` parse tree (the format ``getParseTree`` in
SpiceDB's ``parser_test.go`` prints) and returns its ``NodeTypeError`` nodes.
``compile_cases`` reads the ``TestCompile`` table of ``compiler_test.go`` from the Go source.
Both fail loudly (``LayoutError``) on anything they do not understand rather than skip it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent / "spicedb_language"
PARSER = ROOT / "parser"
COMPILER_TEST = ROOT / "compiler" / "compiler_test.go"


class LayoutError(Exception):
    """A vendored file is not laid out as this reader expects: update the reader, never skip."""


# ------------------------------------------------------------------------------------------
# Parse trees
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParseError:
    message: str
    offset: int  # SpiceDB's ``start-rune``: a byte offset into the UTF-8 source (the lexer counts bytes)

    def line_column(self, source: bytes) -> tuple[int, int]:
        """1-based line and column, as SpiceDB's compiler reports them (its position mapper
        splits the bytes on ``\\n`` and counts 0-based; the error text adds 1 to both)."""
        before = source[:self.offset]
        return before.count(b"\n") + 1, self.offset - (before.rfind(b"\n") + 1) + 1


_PROPERTY = re.compile(r"( *)([a-z-]+) = ?(.*)")


def parse_errors(expected: str) -> list[ParseError]:
    """The error nodes of a parse tree, in the order printed (pre-order, keys sorted).

    A node is its type on one line, then ``key = value`` properties indented two more spaces
    (a value may run over lines: ``error-source`` is the offending token, a newline
    included), then ``predicate =>`` lines with the children further in.
    """
    lines = expected.splitlines()
    found: list[ParseError] = []
    for i, line in enumerate(lines):
        if line.strip() != "NodeTypeError":
            continue
        indent = len(line) - len(line.lstrip())
        props: dict[str, str] = {}
        key: str | None = None
        for following in lines[i + 1:]:
            m = _PROPERTY.fullmatch(following)
            if m and len(m.group(1)) == indent + 2:
                key = m.group(2)
                props[key] = m.group(3)
                continue
            if following.strip() and len(following) - len(following.lstrip()) <= indent + 2:
                break  # a predicate (``child-node =>``) or the next node
            if key is None:
                raise LayoutError(f"line {i + 2}: text before any property of an error node: {following!r}")
            props[key] += "\n" + following
        if "error-message" not in props or not props.get("start-rune", "").isdigit():
            raise LayoutError(f"line {i + 1}: an error node without error-message or start-rune: {props}")
        found.append(ParseError(props["error-message"], int(props["start-rune"])))
    if not lines or not lines[0].startswith("NodeTypeFile"):
        raise LayoutError("a parse tree starts with NodeTypeFile")
    return found


def parser_files() -> list[Path]:
    files = sorted(PARSER.glob("*.zed"))
    for path in files:
        if not path.with_name(path.name + ".expected").exists():
            raise LayoutError(f"{path.name} has no .expected tree")
    return files


# ------------------------------------------------------------------------------------------
# compiler_test.go's table
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CompileCase:
    name: str
    prefix: str  # the ObjectPrefixOption expression, verbatim (``withTenantPrefix``, ...)
    schema: str
    error: str  # "" when SpiceDB's compiler accepts the schema
    line: int  # where the entry starts in compiler_test.go


_STRUCT = re.compile(r"type compileTest struct \{\s*name\s+string\s+objectPrefix\s+ObjectPrefixOption\s+"
                     r"input\s+string\s+expectedError\s+string\s+expectedProto\s+\[\]SchemaDefinition\s*\}")
_TABLE_START = "tests := []compileTest{"
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b", "f": "\f",
            "v": "\v"}


class _GoReader:
    """Just enough of Go's lexical grammar to split composite-literal entries into fields."""

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos

    def where(self) -> int:
        return self.text.count("\n", 0, self.pos) + 1

    def fail(self, message: str) -> LayoutError:
        return LayoutError(f"compiler_test.go line {self.where()}: {message}")

    def skip_space(self) -> None:
        while True:
            m = re.compile(r"\s+|//[^\n]*|/\*.*?\*/", re.S).match(self.text, self.pos)
            if not m or not m.group():
                return
            self.pos = m.end()

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos:self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.fail(f"expected {char!r}, found {self.text[self.pos:self.pos + 20]!r}")
        self.pos += 1

    def string(self) -> str:
        """One Go string literal, or several joined with ``+``; raw (backquoted) or interpreted."""
        value = self._one_string()
        while self.peek() == "+":
            self.pos += 1
            value += self._one_string()
        return value

    def _one_string(self) -> str:
        quote = self.peek()
        if quote == "`":
            end = self.text.find("`", self.pos + 1)
            if end < 0:
                raise self.fail("unterminated raw string")
            value = self.text[self.pos + 1:end].replace("\r", "")  # Go drops \r from raw strings
            self.pos = end + 1
            return value
        if quote != '"':
            raise self.fail(f"expected a string literal, found {self.text[self.pos:self.pos + 30]!r}")
        out: list[str] = []
        i = self.pos + 1
        while True:
            ch = self.text[i:i + 1]
            if ch in ("", "\n"):
                raise self.fail("unterminated string")
            if ch == '"':
                self.pos = i + 1
                return "".join(out)
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            esc = self.text[i + 1]
            if esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                i += 2
            elif esc in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[esc]
                out.append(chr(int(self.text[i + 2:i + 2 + width], 16)))
                i += 2 + width
            else:
                raise self.fail(f"unknown escape \\{esc}")

    def expression(self) -> str:
        """Source text up to the next top-level comma (brackets and strings balanced)."""
        self.skip_space()
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in "`\"":
                self._one_string()
                continue
            if ch in "({[":
                depth += 1
            elif ch in ")}]":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                break
            self.pos += 1
        if depth:
            raise self.fail("unbalanced brackets")
        return self.text[start:self.pos].strip()


def compile_cases(path: Path = COMPILER_TEST) -> list[CompileCase]:
    """Every entry of ``TestCompile``'s table, in order."""
    text = path.read_text()
    if not _STRUCT.search(text):
        raise LayoutError("compileTest is no longer {name, objectPrefix, input, expectedError, expectedProto}")
    start = text.find(_TABLE_START)
    if start < 0 or text.find(_TABLE_START, start + 1) >= 0:
        raise LayoutError(f"expected exactly one {_TABLE_START!r}")
    r = _GoReader(text, start + len(_TABLE_START))
    cases: list[CompileCase] = []
    while r.peek() != "}":
        r.expect("{")
        line = r.where()
        name = r.string()
        r.expect(",")
        prefix = r.expression()
        r.expect(",")
        schema = r.string()
        r.expect(",")
        error = r.string()
        r.expect(",")
        r.expression()  # expectedProto: the compiled form, not compared here
        if r.peek() == ",":
            r.pos += 1
        r.expect("}")
        r.expect(",")
        cases.append(CompileCase(_unique(name, cases), prefix, schema, error, line))
    return cases


def _unique(name: str, cases: list[CompileCase]) -> str:
    """Go's ``t.Run`` names a repeated subtest ``name#01``, ``name#02``...; so do we."""
    taken = {c.name for c in cases}
    if name not in taken:
        return name
    n = 1
    while f"{name}#{n:02d}" in taken:
        n += 1
    return f"{name}#{n:02d}"
