"""Strict JSON for untrusted bytes: one meaning per document, bounded work.

``json.loads`` accepts documents that different readers understand differently, and
that is how a signed token can say two things: a duplicate member name (the last one
wins in Python, the first in some other parsers), ``NaN`` and ``Infinity`` (not JSON;
``NaN`` compares false with everything, so ``exp: NaN`` never expires), ``1e400``
(becomes ``inf``), lone surrogates such as ``"\\ud800"`` (no character at all; Go turns
them into U+FFFD, so two distinct names can become one). Deep nesting (``[[[[...``)
makes the C decoder recurse until ``RecursionError``. :func:`loads` refuses all of
these (RFC 8259 + RFC 7493 I-JSON) with a typed error, and bounds the input size and
the nesting depth *before* decoding, so a refusal costs a linear scan at most.

API (stable)::

    loads(data, *, max_bytes, max_depth=DEFAULT_MAX_DEPTH) -> Any
        data: bytes | bytearray | memoryview | str (bytes must be UTF-8, no BOM)
        raises PayloadTooLarge (413, "payload_too_large") when data exceeds max_bytes
        raises JSONInvalid (400, "json_invalid", detail["rule"] says which rule)

Numbers come back as ``int`` or finite ``float``; objects as ``dict`` (no duplicate
names). Callers check the shape they expect (e.g. "an object") themselves.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import JSONInvalid, PayloadTooLarge

DEFAULT_MAX_DEPTH = 32
MAX_DEPTH_LIMIT = 512  # the C decoder recurses per level; stay far below the interpreter's limit

# A string (possibly unterminated: it then runs to the end, so the scan stays linear) or a bracket.
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\Z)|[\[\]{}]', re.DOTALL)


def loads(data: bytes | bytearray | memoryview | str, *, max_bytes: int, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """Decode one strict JSON document; see the module docstring for what is refused."""
    if max_bytes <= 0 or not 1 <= max_depth <= MAX_DEPTH_LIMIT:
        raise ValueError(f"max_bytes must be positive and max_depth within 1..{MAX_DEPTH_LIMIT}")
    text = _text(data, max_bytes)
    if not _depth_within(text, max_depth):
        raise JSONInvalid(f"JSON nests deeper than {max_depth} levels", rule="depth")
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float,
                           object_pairs_hook=_unique_object)
    except RecursionError:  # unreachable with the depth bound; kept so it can never escape as a 500
        raise JSONInvalid("JSON nests too deeply", rule="depth") from None
    except ValueError as exc:  # JSONDecodeError, and int() past sys.get_int_max_str_digits()
        raise JSONInvalid(f"not JSON: {str(exc)[:120]}", rule="syntax") from None
    if "\\u" in text:
        _refuse_lone_surrogates(value)
    return value


def _text(data: bytes | bytearray | memoryview | str, max_bytes: int) -> str:
    if isinstance(data, str):
        if len(data) > max_bytes:  # a str of n code points is at least n UTF-8 bytes
            raise PayloadTooLarge(f"JSON exceeds {max_bytes} bytes", limit=max_bytes)
        return data
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"strictjson.loads takes bytes or str, not {type(data).__name__}")
    if len(data) > max_bytes:
        raise PayloadTooLarge(f"JSON exceeds {max_bytes} bytes", limit=max_bytes)
    try:
        return bytes(data).decode("utf-8")  # a BOM decodes to U+FEFF, which json.loads refuses
    except UnicodeDecodeError:
        raise JSONInvalid("JSON is not valid UTF-8", rule="utf8") from None


def _depth_within(text: str, max_depth: int) -> bool:
    """Nesting depth <= ``max_depth``; brackets inside strings do not count."""
    if text.count("[") + text.count("{") <= max_depth:  # the usual case: no scan at all
        return True
    depth = 0
    for match in _STRUCTURE.finditer(text):
        char = match.group()
        if char == "[" or char == "{":
            depth += 1
            if depth > max_depth:
                return False
        elif char == "]" or char == "}":
            depth -= 1
    return True


def _refuse_constant(name: str) -> Any:
    raise JSONInvalid(f"{name} is not a JSON number", rule="constant")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise JSONInvalid(f"number {literal[:40]} overflows a double", rule="number")
    return value


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise JSONInvalid(f"duplicate member name {name[:64]!r}", rule="duplicate")
            seen.add(name)
    return obj


def _refuse_lone_surrogates(value: Any) -> None:
    """Only reached when the text holds a ``\\u`` escape: re-encoding fails on a lone surrogate."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise JSONInvalid("JSON holds a lone surrogate escape (no character)", rule="surrogate") from None


__all__ = ["DEFAULT_MAX_DEPTH", "JSONInvalid", "PayloadTooLarge", "loads"]
