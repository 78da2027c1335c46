"""Bounded, interoperable parsing of untrusted JSON (request bodies, query inputs, NATS messages).

Python's ``json`` recurses once per nesting level (5,000 ``[`` raise ``RecursionError``,
which is not a ``ValueError``), accepts ``NaN``/``Infinity``, keeps the last of two
duplicate keys, parses integers of any size and keeps lone UTF-16 surrogates. Other
parsers (the service that built a body, Go, Rust, Rego) disagree on the last four, so a
value that means one thing here could mean another there. :func:`loads` accepts only
I-JSON (RFC 7493) nested at most ``max_depth`` deep, and says what is wrong with a
typed error (400, stable code) instead of an exception a caller could turn into a 500.

The depth is checked on the bytes before parsing: when the text holds no more brackets
than the bound (every ordinary request) that is two ``bytes.count`` calls; otherwise a
scan in C (strings removed by one regex, brackets summed with ``accumulate``).

:func:`is_json_media_type` answers whether a ``Content-Type`` announces JSON.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any, Final, NoReturn

from tenantguard.errors import JsonInvalid, JsonNotInteroperable, JsonTooDeep, PayloadTooLarge

MAX_DEPTH: Final = 32
"""Default nesting bound: arrays and objects inside each other (a top-level object is 1)."""

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""RFC 7493 section 2.2: integers beyond +-(2**53 - 1) lose precision in IEEE doubles."""

# A string, or an unterminated one running to the end (a lone backslash may end it): every
# match attempt succeeds, so sub() makes one linear pass. A pattern that must find the closing
# quote fails from every '"' of an unterminated string and rescans to the end each time:
# quadratic, 15 s of CPU for 60 KB of '["\\"[\\"[...' (tests/sdk/test_jsonlimits.py).
_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
# '[' and '{' -> +1, ']' and '}' -> -1 (0xFF read as a signed byte).
_STEPS: Final = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def exceeds_depth(data: bytes, max_depth: int = MAX_DEPTH) -> bool:
    """True when arrays/objects in ``data`` nest deeper than ``max_depth``.

    Exact for valid JSON, and never lower than what a parser reaches before it finds
    an error in invalid JSON (brackets inside strings are not counted).
    """
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False
    brackets = _STRING.sub(b"", data).translate(_STEPS, _NOT_BRACKETS)
    return max(accumulate(memoryview(brackets).cast("b")), default=0) > max_depth


def check_depth(data: bytes, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`JsonTooDeep` when ``data`` nests deeper than ``max_depth``."""
    if exceeds_depth(data, max_depth):
        raise JsonTooDeep(f"JSON nests deeper than {max_depth} levels", limit=max_depth)


def loads(data: bytes | str, *, max_depth: int = MAX_DEPTH, max_bytes: int | None = None) -> Any:
    """Parse untrusted I-JSON: UTF-8, depth-bounded, unique keys, finite numbers,
    integers within +-(2**53 - 1), no lone surrogates. Raises a :class:`JsonInvalid`
    subclass (400), or :class:`PayloadTooLarge` (413) past ``max_bytes``, and nothing else."""
    if max_bytes is not None and len(data) > max_bytes:  # a str of n code points is >= n UTF-8 bytes
        raise PayloadTooLarge(f"JSON exceeds {max_bytes} bytes", limit=max_bytes)
    if isinstance(data, str):
        try:
            raw = data.encode("utf-8")
        except UnicodeEncodeError:
            raise JsonNotInteroperable("JSON text holds a lone UTF-16 surrogate", problem="surrogate") from None
        text = data
    else:
        raw = bytes(data)
        try:
            text = raw.decode("utf-8")  # a BOM decodes to U+FEFF, which the decoder refuses
        except UnicodeDecodeError:
            raise JsonInvalid("JSON text is not UTF-8") from None
    check_depth(raw, max_depth)
    try:
        value = _DECODER.decode(text)
    except _Refused as exc:
        raise JsonNotInteroperable(exc.message, problem=exc.problem) from None
    except json.JSONDecodeError as exc:
        raise JsonInvalid(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # e.g. int() digit limits; depth is checked above
        raise JsonInvalid(f"not JSON: {str(exc)[:80]}") from None
    if "\\u" in text or "\\U" in text:
        _refuse_lone_surrogates(value)
    return value


def loads_object(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """:func:`loads` for a document that must be a JSON object."""
    value = loads(data, max_depth=max_depth)
    if type(value) is not dict:
        raise JsonInvalid(f"the JSON document must be an object, not {_kind(value)}")
    return value


def is_json_media_type(content_type: str | None) -> bool:
    """``application/json`` or ``application/<anything>+json``, any parameters (``charset``),
    case-insensitive. ``None`` (no header) is not JSON: the caller decides what that means."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or (subtype.endswith("+json") and len(subtype) > 5))


class _Refused(ValueError):
    def __init__(self, problem: str, message: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.message = message


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _Refused("duplicate_key", f"duplicate key {duplicate[:60]!r} in a JSON object")
    return value


def _int(token: str) -> int:
    # JSON has no leading zeros, so 17 digits or more is always beyond 2**53 (16 digits):
    # refused before int() is asked to convert thousands of digits.
    value = int(token) if len(token) <= 17 else None
    if value is None or not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise _Refused("number", f"integer {token[:24]} is beyond +-(2**53 - 1)")
    return value


def _float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _Refused("number", f"number {token[:24]} does not fit a double")
    return value


def _constant(token: str) -> NoReturn:
    raise _Refused("number", f"{token} is not JSON")


_DECODER: Final = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_int, parse_float=_float,
                                   parse_constant=_constant)


def _refuse_lone_surrogates(value: Any) -> None:
    """Only text holding a ``\\u`` escape can decode to a lone surrogate (raw UTF-8 cannot)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise JsonNotInteroperable("a JSON string holds a lone UTF-16 surrogate", problem="surrogate") from None


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")
