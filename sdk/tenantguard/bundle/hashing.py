"""File digests exactly as OPA computes them for ``.signatures.json`` (v1/bundle/hash.go).

Unstructured files (``*.rego`` and anything else) are hashed as raw bytes. Structured
files (base name ``data.json``, ``data.yaml``, ``.manifest``, ``signatures.json``, per
OPA's ``IsStructuredDoc``) are parsed and re-encoded first, so whitespace and key order
do not change the digest. OPA's encoding, reproduced here:

* objects: ``{`` + ``key:value`` pairs sorted by key (byte order) joined by ``,`` + ``}``;
  arrays: ``[`` + values joined by ``,`` + ``]``; no whitespace anywhere;
* numbers: the literal text from the file (OPA decodes with ``UseNumber``), so ``1.0``
  and ``1`` hash differently;
* strings: Go's ``encoding/json`` with HTML escaping off: UTF-8 kept as is, ``"`` and
  ``\\`` escaped, ``\\b \\f \\n \\r \\t`` short forms, other controls as ``\\u00xx``,
  and U+2028/U+2029 escaped; a lone surrogate becomes U+FFFD as Go decodes it.
"""

from __future__ import annotations

import hashlib
import json
import math
import posixpath
import re
from typing import Any

from tenantguard.errors import BundleMalformed

# OPA also accepts MD5 and SHA-1; both are broken for collisions, so a signature that
# relies on them is refused here.
HASH_ALGORITHMS = {
    "SHA-224": "sha224",
    "SHA-256": "sha256",
    "SHA-384": "sha384",
    "SHA-512": "sha512",
    "SHA-512-224": "sha512_224",
    "SHA-512-256": "sha512_256",
}
_STRUCTURED = frozenset({"data.json", "data.yaml", "signatures.json", ".manifest"})
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


class _Number(str):
    """A JSON number kept as its source text (Go's ``json.Number``)."""


def is_structured(name: str) -> bool:
    return posixpath.basename(name) in _STRUCTURED


def file_digest(name: str, content: bytes, algorithm: str = "SHA-256") -> str:
    """The lowercase hex digest OPA records for ``name`` in a bundle signature."""
    hash_name = HASH_ALGORITHMS.get(algorithm)
    if hash_name is None:
        raise BundleMalformed(f"hash algorithm {algorithm!r} is not accepted", file=name)
    payload = canonical_json(content, name) if is_structured(name) else content
    return hashlib.new(hash_name, payload).hexdigest()


def canonical_json(content: bytes, name: str) -> bytes:
    """Re-encode a JSON document the way OPA's hasher walks it (see module docstring)."""
    try:
        value = json.loads(
            decode_utf8(content, name),
            parse_int=_Number,
            parse_float=_Number,
            parse_constant=_reject_constant,
            object_pairs_hook=_object,
        )
        return _encode(value).encode()
    except (ValueError, RecursionError) as exc:
        raise BundleMalformed(f"{name} is not valid JSON: {exc}", file=name) from None


def parse_strict(text: str) -> Any:
    """Parse JSON that means one thing to every reader, or raise ``ValueError``.

    Refused: duplicate member names (Python and Go keep the last, other parsers the first),
    lone UTF-16 surrogates (the digest above maps them to U+FFFD while Python keeps them, so
    a signed ``"\\ufffd"`` could be swapped for ``"\\ud800"``, or a second key slipped in,
    under the same digest), ``NaN``/``Infinity`` and numbers that overflow a double.
    Signed files are hashed by their canonical form, not their bytes: whatever that form
    folds together must be refused here, or the parsed content is not what was signed.
    """
    value = json.loads(text, object_pairs_hook=_unique, parse_constant=_reject_constant,
                       parse_float=_finite)
    if _ESCAPED_SURROGATE.search(text) is not None:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone UTF-16 surrogate") from None
    return value


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate member name {key[:60]!r}")
        result[key] = value
    return result


def _finite(token: str) -> float:
    value = float(token)
    if math.isinf(value):
        raise ValueError(f"number {token[:40]} overflows a double")
    return value


def decode_utf8(content: bytes, name: str) -> str:
    """Strict UTF-8; a BOM is refused (OPA's JSON decoder refuses it too)."""
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleMalformed(f"{name} is not valid UTF-8: {exc.reason}", file=name) from None


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Go replaces lone surrogates while decoding, before keys are sorted; so do we.
    return {_SURROGATE.sub("\ufffd", k): v for k, v in pairs}


def _encode(value: Any) -> str:
    if isinstance(value, dict):
        items = (f"{_string(k)}:{_encode(value[k])}" for k in sorted(value))
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_encode(v) for v in value) + "]"
    if isinstance(value, _Number):
        return str.__str__(value)
    if isinstance(value, str):
        return _string(value)
    return json.dumps(value)  # true, false, null


def _string(text: str) -> str:
    encoded = json.dumps(_SURROGATE.sub("\ufffd", text), ensure_ascii=False)
    return encoded.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
