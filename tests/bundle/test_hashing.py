"""Canonical JSON for digests must match OPA's Go hasher byte for byte."""

from __future__ import annotations

import hashlib

import pytest
from tenantguard.bundle import canonical_json, file_digest
from tenantguard.errors import BundleMalformed


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # sorted keys (byte order), no whitespace, nested
        (b'{ "b": {"d": 1, "c": [true, false, null]}, "a": "x" }', b'{"a":"x","b":{"c":[true,false,null],"d":1}}'),
        # numbers keep their literal text (Go json.Number): 1.0, 1e3, -0 are not rewritten
        (b'{"n": [1.0, 1e3, -0, 10, 0.50]}', b'{"n":[1.0,1e3,-0,10,0.50]}'),
        # UTF-8 kept raw; escapes for quote, backslash and controls as Go writes them
        ('{"k": "é\\"\\\\\\n\\t\\b\\f\\u0001/<>&"}'.encode(), '{"k":"é\\"\\\\\\n\\t\\b\\f\\u0001/<>&"}'.encode()),
        # U+2028 and U+2029 are escaped by Go even with HTML escaping off
        ('{"k": "a\u2028b\u2029c"}'.encode(), b'{"k":"a\\u2028b\\u2029c"}'),
        # a lone surrogate decodes to U+FFFD in Go
        (b'{"k": "\\ud800"}', '{"k":"\ufffd"}'.encode()),
        # non-ASCII keys sort by code point (= UTF-8 byte order)
        ('{"é": 1, "z": 2, "a": 3}'.encode(), '{"a":3,"z":2,"é":1}'.encode()),
    ],
)
def test_canonical_json_matches_go(source: bytes, expected: bytes) -> None:
    assert canonical_json(source, "data.json") == expected


def test_structured_files_hash_canonically_and_others_raw() -> None:
    content = b'{"b": 1, "a": 2}'
    assert file_digest("x/data.json", content) == hashlib.sha256(b'{"a":2,"b":1}').hexdigest()
    assert file_digest(".manifest", content) == hashlib.sha256(b'{"a":2,"b":1}').hexdigest()
    assert file_digest("x/other.json", content) == hashlib.sha256(content).hexdigest()
    assert file_digest("p.rego", content) == hashlib.sha256(content).hexdigest()
    assert file_digest("p.rego", content, "SHA-512") == hashlib.sha512(content).hexdigest()


@pytest.mark.parametrize("bad", [b"{", b'{"a": NaN}', b"\xef\xbb\xbf{}", b'{"a": "\xff"}', b"[" * 100_000])
def test_invalid_json_is_malformed(bad: bytes) -> None:
    with pytest.raises(BundleMalformed) as exc:
        canonical_json(bad, "data.json")
    assert exc.value.file == "data.json"
