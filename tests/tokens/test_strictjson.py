"""tenantguard.strictjson: one meaning per document, bounded work, typed refusals."""

from __future__ import annotations

import json

import pytest
from tenantguard import strictjson
from tenantguard.errors import JSONInvalid, PayloadTooLarge


def rule(data: bytes | str, **bounds: int) -> str:
    with pytest.raises(JSONInvalid) as info:
        strictjson.loads(data, **{"max_bytes": 1 << 20, **bounds})
    assert info.value.code == "json_invalid" and info.value.http_status == 400
    return str(info.value.detail["rule"])


def test_plain_json_decodes_as_json_loads_does() -> None:
    text = '{"a":[1,2.5,-0,"x",{"b":null,"c":true}],"\\u00e9":"\\ud83d\\ude00","[":"{{{{"}'
    assert strictjson.loads(text.encode(), max_bytes=1024) == json.loads(text)


@pytest.mark.parametrize("text", [
    '{"tenant_id":"acme","tenant_id":"globex"}',
    '{"a":{"x":1,"x":1}}',
    '[{"aud":"a"},{"aud":"b","aud":"c"}]',
])
def test_duplicate_member_names(text: str) -> None:
    assert rule(text) == "duplicate"


@pytest.mark.parametrize("text", ['{"exp":NaN}', '[Infinity]', '[-Infinity]', "NaN"])
def test_nan_and_infinity(text: str) -> None:
    assert rule(text) == "constant"


@pytest.mark.parametrize("text", ["[1e400]", "[-1e400]", '{"iat":1E999}'])
def test_numbers_that_overflow_a_double(text: str) -> None:
    assert rule(text) == "number"


def test_nesting_is_bounded_before_decoding() -> None:
    assert rule("[" * 5000) == "depth"  # never a RecursionError
    assert rule("[" * 5000 + "]" * 5000) == "depth"
    assert rule('{"a":' * 40 + "1" + "}" * 40, max_depth=32) == "depth"
    assert strictjson.loads("[" * 32 + "]" * 32, max_bytes=100, max_depth=32) is not None
    # brackets inside strings are text, not nesting
    assert strictjson.loads(json.dumps(["[" * 100, "{" * 100]), max_bytes=1000, max_depth=2) == ["[" * 100, "{" * 100]


def test_unterminated_string_scan_stays_linear() -> None:
    """A depth scan over many unterminated strings must not go quadratic (it is one regex pass)."""
    assert rule('["' + '\\"[' * 20000, max_depth=4) == "syntax"


@pytest.mark.parametrize(("data", "expected"), [
    (b"\xff\xfe{}", "utf8"),
    (b'{"a":"\xc3"}', "utf8"),
    (b"\xef\xbb\xbf{}", "syntax"),  # a BOM
    ('["\\ud800"]', "surrogate"),
    ('{"a\\udfff":1}', "surrogate"),
    ("{", "syntax"),
    ("{} {}", "syntax"),
    ("[1" + "0" * 5000 + "]", "syntax"),  # past int()'s digit limit: a typed refusal, not a crash
])
def test_other_refusals(data: bytes | str, expected: str) -> None:
    assert rule(data) == expected


def test_size_bound_is_payload_too_large() -> None:
    with pytest.raises(PayloadTooLarge) as info:
        strictjson.loads(b"[" + b"1," * 600 + b"1]", max_bytes=1000)
    assert info.value.http_status == 413
    with pytest.raises(PayloadTooLarge):
        strictjson.loads("x" * 1001, max_bytes=1000)


def test_bounds_must_be_sane() -> None:
    with pytest.raises(ValueError):
        strictjson.loads("{}", max_bytes=0)
    with pytest.raises(ValueError):
        strictjson.loads("{}", max_bytes=10, max_depth=10_000)
