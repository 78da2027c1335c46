"""Structure-aware inputs: JSON that parsers disagree about, wrong shapes, hostile bytes.

Random bytes rarely get past the first ``json.loads``; these strategies start from what a
door or parser accepts and break one thing at a time: a value of the wrong type at one
field, nesting deeper than any recursive parser survives, numbers no float holds,
``NaN``/``Infinity`` literals, duplicate keys, lone surrogates, invalid UTF-8.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# --------------------------------------------------------------------------- JSON values

huge_ints = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([2**63 - 1, 2**63, -(2**63) - 1, 10**400, -(10**400)]),
)
odd_strings = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "\x00", "\ud800", "\udfff", "a\ud83dz", "\u2028", "\ufeff", "../..", "%2e%2e",
                     "acme\x00globex", "A" * 2000, "user:alice#member", "*", "\\", "'\"", "${x}", "null"]),
)
scalars = st.one_of(st.none(), st.booleans(), huge_ints, st.floats(allow_nan=False, allow_infinity=False),
                    odd_strings)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(odd_strings, inner, max_size=4)),
    max_leaves=12,
)

# Literals Python's json module emits or accepts but RFC 8259 forbids, and numbers that
# overflow floats or need bignums: each parser takes its own view of them.
ODD_NUMBER_LITERALS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1E400", "-0", "0.0e0",
                       "123456789012345678901234567890", "1" + "0" * 5000, "1.5", "-1", "2e-400"]


# The subset no parser should read differently from another: no NaN/Infinity, no overflow.
PLAIN_NUMBER_LITERALS = ["-0", "0.0e0", "1.5", "-1", "2e-400", "1E2", "123456789012345678901234567890"]


@st.composite
def json_text(draw: st.DrawFn, value: Any = None, *, duplicates: bool = True, odd_numbers: bool = True) -> str:
    """``value`` (or a drawn one) written as JSON text with odd but parseable choices.

    Objects may repeat a key (the second with another value), numbers may be written as
    one of :data:`ODD_NUMBER_LITERALS` (:data:`PLAIN_NUMBER_LITERALS` without
    ``odd_numbers``), and strings may carry lone ``\\udXXX`` escapes.
    """
    if value is None:
        value = draw(json_values)
    numbers = ODD_NUMBER_LITERALS if odd_numbers else PLAIN_NUMBER_LITERALS
    return _write(draw, value, duplicates, numbers)


def _write(draw: st.DrawFn, value: Any, duplicates: bool, numbers: list[str]) -> str:
    if isinstance(value, dict):
        parts = [f"{json.dumps(k)}:{_write(draw, v, duplicates, numbers)}" for k, v in value.items()]
        if duplicates and value and draw(st.integers(0, 4)) == 0:  # duplicate one key, other value
            key = draw(st.sampled_from(sorted(value)))
            parts.append(f"{json.dumps(key)}:{_write(draw, draw(json_values), duplicates, numbers)}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_write(draw, v, duplicates, numbers) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float) and draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(numbers))
    return json.dumps(value)


def nested(depth: int, *, kind: str = "list", leaf: str = "1") -> str:
    """``depth`` levels of arrays (``[[[1]]]``) or objects (``{"a":{"a":1}}``) as text."""
    if kind == "list":
        return "[" * depth + leaf + "]" * depth
    return '{"a":' * depth + leaf + "}" * depth


nesting_depths = st.sampled_from([64, 200, 1_000, 5_000, 50_000])


# --------------------------------------------------------------------------- shape mutation


def paths_of(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every member path in a JSON document (dict keys and list indices), depth first."""
    out: list[tuple[Any, ...]] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.append((*prefix, key))
            out.extend(paths_of(value, (*prefix, key)))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out.append((*prefix, index))
            out.extend(paths_of(value, (*prefix, index)))
    return out


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of ``doc`` with the member at ``path`` set to ``value`` (None path: delete it)."""
    doc = json.loads(json.dumps(doc))
    target = doc
    for step in path[:-1]:
        target = target[step]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


_DELETE = object()
wrong_types = st.one_of(st.none(), st.booleans(), huge_ints, st.floats(allow_nan=False, allow_infinity=False),
                        odd_strings, st.just([]), st.just({}), st.lists(scalars, max_size=3),
                        st.dictionaries(st.text(max_size=5), scalars, max_size=3), st.just(_DELETE))


@st.composite
def mutated(draw: st.DrawFn, doc: dict[str, Any]) -> Any:
    """``doc`` with one member replaced by a value of another type, or removed."""
    paths = paths_of(doc)
    path = draw(st.sampled_from(paths))
    return replaced(doc, path, draw(wrong_types))


# --------------------------------------------------------------------------- bytes


invalid_utf8 = st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf",
                                b"\xe2\x82", b"\xef\xbb\xbf", b"\x00"])


@st.composite
def broken_bytes(draw: st.DrawFn, text: str) -> bytes:
    """``text`` as UTF-8 with invalid sequences spliced in, or truncated, or a BOM ahead."""
    raw = text.encode("utf-8", "surrogatepass")
    how = draw(st.sampled_from(["splice", "truncate", "bom", "utf16"]))
    if how == "truncate":
        return raw[: draw(st.integers(0, max(len(raw) - 1, 0)))]
    if how == "bom":
        return b"\xef\xbb\xbf" + raw
    if how == "utf16":
        return text.encode("utf-16", "surrogatepass")
    at = draw(st.integers(0, len(raw)))
    return raw[:at] + draw(invalid_utf8) + raw[at:]


# --------------------------------------------------------------------------- HTTP parts


CONTENT_TYPES = [None, "application/json", "application/json; charset=utf-8", "application/json; charset=latin-1",
                 "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                 "application/xml", "application/jwt", "application/json-patch+json", "*/*", "garbage",
                 "application/gzip", ";;;", "APPLICATION/JSON"]


def garbage_authorization(valid_token: str) -> st.SearchStrategy[str | None]:
    """Authorization values a careless or hostile client sends; ``None`` sends no header."""
    head, payload, sig = valid_token.split(".")
    return st.one_of(
        st.none(),
        st.sampled_from([
            "", "Bearer", "Bearer ", "Bearer  ", "bearer " + valid_token, "BEARER " + valid_token,
            "Basic " + valid_token, "Bearer " + valid_token + " extra", "Bearer " + valid_token + ".",
            "Bearer " + head + "." + payload, "Bearer " + head + ".." + sig, "Bearer ...", "Bearer a.b.c",
            "Bearer " + "A" * 9000, "Bearer " + ".".join([head, payload, sig[::-1]]),
            "Bearer " + ".".join([head, payload[:-2], sig]), "Bearer " + valid_token + "," + valid_token,
            "Token " + valid_token, "Bearer\t" + valid_token, "Bearer eyJ.eyJ.", "Bearer %00",
        ]),
        st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=60).map(
            lambda s: "Bearer " + s),
    )


PATH_TRICKS = ["/v1/check/", "//v1/check", "/v1//check", "/v1/./check", "/v1/data/../check", "/V1/CHECK",
               "/v1/check%2f", "/v1/check;x=1", "/v1/check?x=1&x=2", "/v1/check#frag", "/access/v1/evaluation/",
               "/access/v1/evaluations/../evaluation", "/v1/data", "/v1/data/", "/v1/data//tenantguard/decision",
               "/v1/data/tenantguard/decision/..", "/v1/data/tenantguard/decision/../../../etc/passwd",
               "/v1/data/%2e%2e/%2e%2e", "/v1/data/tenantguard%2fauthz", "/v1/data/tenantguard/decision/allow/x",
               "/v1/data/" + "a/" * 400, "/v1/data/%C3%A9", "/v1/data/%ff%fe", "/v1/data/%00",
               "/oauth2/token/", "/oauth2//token", "/v1/status/../check", "/%2e%2e/v1/check", "/*", "*"]
