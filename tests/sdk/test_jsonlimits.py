"""tenantguard.util.jsonlimits: the bounded I-JSON parser every untrusted JSON text goes through."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tenantguard.errors import InvalidInput, JsonInvalid, JsonNotInteroperable, JsonTooDeep
from tenantguard.util.jsonlimits import (
    MAX_DEPTH,
    MAX_SAFE_INTEGER,
    exceeds_depth,
    is_json_media_type,
    loads,
    loads_object,
)


@pytest.mark.parametrize(("text", "error", "problem"), [
    (b"[" * 100_000, JsonTooDeep, None),
    (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), JsonTooDeep, None),
    (b'{"a": 1, "a": 1}', JsonNotInteroperable, "duplicate_key"),
    (b'{"x": {"a": 1, "b": 2, "a": 3}}', JsonNotInteroperable, "duplicate_key"),
    (b"NaN", JsonNotInteroperable, "number"),
    (b"[-Infinity]", JsonNotInteroperable, "number"),
    (b"1e309", JsonNotInteroperable, "number"),
    (str(MAX_SAFE_INTEGER + 1).encode(), JsonNotInteroperable, "number"),
    (str(-MAX_SAFE_INTEGER - 1).encode(), JsonNotInteroperable, "number"),
    (b"1" * 10_000, JsonNotInteroperable, "number"),
    (b'["\\udfff"]', JsonNotInteroperable, "surrogate"),
    (b'{"\\ud800": 1}', JsonNotInteroperable, "surrogate"),
    (b"\xc3\x28", JsonInvalid, None),
    (b"{", JsonInvalid, None),
    (b"", JsonInvalid, None),
])
def test_refusals_are_typed_400s(text: bytes, error: type[JsonInvalid], problem: str | None) -> None:
    with pytest.raises(error) as info:
        loads(text)
    assert isinstance(info.value, InvalidInput) and info.value.http_status == 400
    assert info.value.detail.get("problem") == problem


@pytest.mark.parametrize("text", [
    b"[" * MAX_DEPTH + b"]" * MAX_DEPTH,
    b'{"a": "' + b"[" * 1000 + b'"}',  # brackets inside strings do not nest
    b'{"a": "\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}',
    str(MAX_SAFE_INTEGER).encode(), str(-MAX_SAFE_INTEGER).encode(), b"1e308", b"1e-400",
    b'"\\ud83d\\ude00"', '"\u00e9"'.encode(),
])
def test_accepts_what_every_parser_agrees_on(text: bytes) -> None:
    assert loads(text) == json.loads(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@given(value=json_values)
def test_depth_scan_is_exact_for_valid_json(value: Any) -> None:
    text = json.dumps(value).encode()
    depth = _depth(value)
    assert not exceeds_depth(text, depth) and (depth == 0 or exceeds_depth(text, depth - 1))
    if not any("\ud800" <= c <= "\udfff" for c in json.dumps(value, ensure_ascii=False)):
        assert loads(text, max_depth=max(depth, 1)) == value


def test_loads_object_wants_an_object() -> None:
    assert loads_object(b'{"a": []}') == {"a": []}
    for text in (b"[]", b'"x"', b"1", b"null", b"true"):
        with pytest.raises(JsonInvalid, match="must be an object"):
            loads_object(text)


@pytest.mark.parametrize(("content_type", "is_json"), [
    ("application/json", True), ("application/json; charset=utf-8", True), ("Application/JSON ; charset=UTF-8", True),
    ("application/problem+json", True), ("application/vnd.api+json", True),
    (None, False), ("", False), ("text/plain", False), ("text/json", False), ("application/jsonx", False),
    ("application/+json", False), ("application/x-www-form-urlencoded", False), ("json", False),
])
def test_json_media_types(content_type: str | None, is_json: bool) -> None:
    assert is_json_media_type(content_type) is is_json


def test_size_bound_is_payload_too_large_before_parsing() -> None:
    """Tokens bound their segments by size as well as depth (``max_bytes``)."""
    from tenantguard.errors import PayloadTooLarge

    with pytest.raises(PayloadTooLarge) as info:
        loads(b"[" + b"1," * 600 + b"1]", max_bytes=1000)
    assert info.value.http_status == 413
    with pytest.raises(PayloadTooLarge):
        loads("x" * 1001, max_bytes=1000)
    assert loads(b"[1]", max_bytes=3) == [1]


@pytest.mark.parametrize("data", [b"\xef\xbb\xbf{}", b"[1" + b"0" * 5000 + b"]", b'["' + b'\\"[' * 20000])
def test_boms_huge_numbers_and_unterminated_strings_are_typed_refusals(data: bytes) -> None:
    with pytest.raises(JsonInvalid):
        loads(data, max_depth=4)


def test_unterminated_strings_full_of_escaped_quotes_are_refused_in_one_pass() -> None:
    """The depth check strips strings with a regular expression: one that had to find a closing
    quote rescanned to the end from every escaped quote of an unterminated string (quadratic:
    60 KB took 15 s of CPU). 6 MB of it must be refused like any other malformed JSON; the
    suite's per-test timeout is what a quadratic scan would run into (hours at this size)."""
    for attack in (b'["' + b'\\"[' * 2_000_000, b'"' * 3_000_000 + b"\\", b'{"a":"' + b'\\"{' * 2_000_000):
        with pytest.raises(JsonInvalid):
            loads(attack, max_depth=4)
