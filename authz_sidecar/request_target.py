"""The request target the Envoy doors decide on: already normal, or refused.

Why: the decision is taken on the path the sidecar is shown, and the app routes on the
path the proxy forwards. If the two can be read differently (``/tenants/acme/../globex``,
``/%74enants/globex``, ``//tenants/globex``, ``/tenants%2Fglobex``), a request judged as
one resource reaches another. So the door does not depend on the proxy's settings:

* it computes the normal form exactly as RFC 3986 normalisation (percent-decoding of
  unreserved characters, section 6.2.2.2; ``remove_dot_segments``, section 5.2.4) followed
  by Envoy's ``merge_slashes`` would;
* a path that is **not already in that form** is refused (400 ``path_rejected``, rule
  ``not_normal``, with the normal form in the detail), because the upstream may or may not
  normalise it the same way. Envoy with ``normalize_path`` + ``merge_slashes`` (the shipped
  config) only ever shows the sidecar normal paths, so this costs nothing there;
* what has no safe normal form is refused outright: encoded slashes and backslashes
  (``%2F``, ``%5C``; Envoy's default keeps them, and apps disagree on them), raw
  backslashes, control characters and NUL (raw or encoded), ``;`` path parameters (some
  servlet containers strip ``;...`` before routing), fragments, malformed escapes,
  non-ASCII bytes, percent-encoded bytes that are not valid UTF-8 (overlong forms such as
  ``%C0%AE``), and anything but an origin-form target.

Percent-escapes that stay (reserved and non-ASCII characters) compare without regard to
hex case, and are rendered upper case. The query is kept apart (never part of the path a
tenant is read from), validated, and not decoded.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from tenantguard.errors import InvalidInput

MAX_TARGET = 8192
UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
# pchar without ";" (path parameters are refused) and "%" (handled as escapes).
_PATH_RAW = UNRESERVED | frozenset("!$&'()*+,=:@/")
_HEX = frozenset(string.hexdigits)
# Segments of allowed raw characters, none of them empty, "." or ".." (an optional trailing "/").
_PLAINLY_NORMAL = re.compile(r"(?:/(?!\.\.?(?:/|\Z))[A-Za-z0-9\-._~!$&'()*+,=:@]+)*/?\Z")


class PathRejected(InvalidInput):
    """A request target the doors will not decide on (see the module docstring)."""

    code = "path_rejected"


@dataclass(frozen=True, slots=True)
class Target:
    """A normal path and its (validated, undecoded) query, or None without one."""

    path: str
    query: str | None = None


def _refuse(rule: str, message: str, **detail: str) -> PathRejected:
    return PathRejected(message, rule=rule, **detail)


def normal_target(target: str, query: str | None = None) -> Target:
    """``target`` (``path[?query]`` as on the request line) as a :class:`Target`, or PathRejected.

    ``query`` is a query given apart (Envoy's ``http.query``); it is used only when the
    target carries none.
    """
    if len(target) > MAX_TARGET:
        raise _refuse("too_long", f"request target exceeds {MAX_TARGET} characters")
    if "#" in target:
        raise _refuse("fragment", "a request target carries no fragment")
    path, sep, own_query = target.partition("?")
    if sep:
        query = own_query
    if not path.startswith("/"):
        raise _refuse("not_origin_form", "the request target must be an absolute path")
    if query is not None:
        _check_query(query)
    if _PLAINLY_NORMAL.match(path):  # the common case, ~1 µs: nothing to decode, no dot segment, no "//"
        return Target(path, query)
    normal = normalise_path(path)
    if normal != _upper_escapes(path):
        raise _refuse("not_normal", "the path is not in normal form (dot segments, repeated slashes or "
                      "percent-encoded unreserved characters)", normal=normal)
    return Target(normal, query)


def normalise_path(path: str) -> str:
    """The normal form of an absolute ``path`` (no query), or PathRejected when it has none."""
    decoded = _decode_unreserved(path)
    return _merge_slashes(remove_dot_segments(decoded))


def _decode_unreserved(path: str) -> str:
    """Decode ``%XX`` of unreserved characters; keep (upper-cased) the others; refuse the unsafe."""
    out: list[str] = []
    pending: bytearray = bytearray()  # a run of escaped bytes >= 0x80: must be strict UTF-8
    i, n = 0, len(path)
    while i < n:
        ch = path[i]
        if ch == "%":
            pair = path[i + 1:i + 3]
            if len(pair) != 2 or not set(pair) <= _HEX:
                raise _refuse("bad_escape", "malformed percent-escape in the path")
            byte = int(pair, 16)
            i += 3
            if byte >= 0x80:
                pending.append(byte)
                continue
            _flush_utf8(pending, out)
            if chr(byte) in UNRESERVED:
                out.append(chr(byte))
            elif byte in (0x2F, 0x5C):
                raise _refuse("encoded_slash", "encoded slashes and backslashes (%2F, %5C) are refused")
            elif byte < 0x20 or byte == 0x7F:
                raise _refuse("control", "control characters (NUL included) are refused in the path")
            else:
                out.append("%" + pair.upper())
            continue
        _flush_utf8(pending, out)
        if ch not in _PATH_RAW:
            raise _refuse(*_raw_rule(ch))
        out.append(ch)
        i += 1
    _flush_utf8(pending, out)
    return "".join(out)


def _raw_rule(ch: str) -> tuple[str, str]:
    if ch == "\\":
        return "backslash", "backslashes are refused in the path"
    if ch == ";":
        return "path_parameter", "';' path parameters are refused (servers disagree on them)"
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return "control", "control characters (NUL included) are refused in the path"
    if ord(ch) > 0x7F:
        return "non_ascii", "non-ASCII characters must be percent-encoded UTF-8"
    return "character", f"the character {ch!r} is not allowed in a path"


def _flush_utf8(pending: bytearray, out: list[str]) -> None:
    if not pending:
        return
    try:
        bytes(pending).decode("utf-8", errors="strict")  # refuses overlong forms and surrogates
    except UnicodeDecodeError:
        raise _refuse("invalid_utf8", "percent-encoded bytes are not valid UTF-8 (overlong forms included)") from None
    out.append("".join(f"%{b:02X}" for b in pending))
    pending.clear()


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, for an absolute path (input and output start with '/')."""
    out: list[str] = []
    segments = path.split("/")[1:]
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                out.append("")
        elif segment == "..":
            if out:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(segment)
    return "/" + "/".join(out)


def _merge_slashes(path: str) -> str:
    while "//" in path:
        path = path.replace("//", "/")
    return path


def _upper_escapes(path: str) -> str:
    """``path`` with every escape's hex upper-cased (escapes compare without regard to case)."""
    if "%" not in path:
        return path
    parts = path.split("%")
    return parts[0] + "".join("%" + p[:2].upper() + p[2:] for p in parts[1:])


def _check_query(query: str) -> None:
    """A query is data for the app: never decoded here, but it must be printable ASCII."""
    for i, ch in enumerate(query):
        code = ord(ch)
        if code <= 0x20 or code >= 0x7F:
            raise _refuse("query_character", "the query holds a control, space or non-ASCII character")
        if ch == "%" and not (len(query) > i + 2 and set(query[i + 1:i + 3]) <= _HEX):
            raise _refuse("bad_escape", "malformed percent-escape in the query")
