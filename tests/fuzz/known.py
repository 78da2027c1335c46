"""Failures the fuzzers found in areas other branches are fixing right now.

Each entry names the branch that owns the fix and a minimal reproducer. Draws of these
classes are kept out of the fuzzers (the ``excluded_*`` predicates) so the suite stays
green while the fix is in flight, and ``test_known.py`` replays every reproducer and
asserts it still fails as described: when a fix lands (after ``git merge main``), its
replay fails, telling whoever merged to delete the entry here, which puts the class back
into the fuzzers' reach. Nothing is silently skipped or xfailed.
"""

from __future__ import annotations

from dataclasses import dataclass

DEEP = 5_000  # nesting that Python's recursive json.loads cannot parse


@dataclass(frozen=True)
class Known:
    name: str
    branch: str
    what: str


OPA_GET_DEEP_INPUT = Known(
    "opa_get_deep_input", "doors / opa",
    "GET /v1/data/tenantguard/decision?input=<[[[...]]] nested 5000 deep>: json.loads raises RecursionError "
    "in opa_compat.get_data, answered 500 internal_error instead of 400",
)
TOKEN_HUGE_INTEGER_CLAIM = Known(
    "token_huge_integer_claim", "tokens",
    "a validly signed token with exp or nbf = 10**400 (a JSON integer no float holds): float() in "
    "TokenVerifier._claims raises OverflowError, not a TokenError (a 500 at every door)",
)
TOKEN_NAN_TIMES = Known(
    "token_nan_times", "tokens",
    "a validly signed token with exp = NaN (pyjwt's json.loads reads the NaN literal): every comparison "
    "is False, so the token never expires and passes the lifetime bound",
)
KNOWN = (OPA_GET_DEEP_INPUT, TOKEN_HUGE_INTEGER_CLAIM, TOKEN_NAN_TIMES)


def nesting(text: str) -> int:
    """The deepest bracket nesting in JSON ``text`` (strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def excluded_opa_get_input(text: str) -> bool:
    """:data:`OPA_GET_DEEP_INPUT`: input nested deeper than Python's json.loads recursion."""
    return nesting(text) > 500


def excluded_token_payload(payload: bytes) -> bool:
    """:data:`TOKEN_NAN_TIMES`, :data:`TOKEN_HUGE_INTEGER_CLAIM` and duplicate claims (branch
    ``tokens``): a payload pyjwt reads with NaN/Infinity, a duplicate member or a number
    beyond float range."""
    import json
    import math

    odd = False

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        nonlocal odd
        keys = [k for k, _ in items]
        odd = odd or len(set(keys)) != len(keys)
        return dict(items)

    def constant(_: str) -> float:
        nonlocal odd
        odd = True
        return 0.0

    try:
        value = json.loads(payload, object_pairs_hook=pairs, parse_constant=constant)
    except (ValueError, RecursionError):
        return False
    if isinstance(value, dict):
        for name in ("exp", "iat", "nbf"):
            number = value.get(name)
            if isinstance(number, int) and not isinstance(number, bool) and abs(number) > 2**1000:
                odd = True
            if isinstance(number, float) and not math.isfinite(number):
                odd = True
    return odd


def nested_text(depth: int) -> str:
    return "[" * depth + "]" * depth
