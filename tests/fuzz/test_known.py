"""Replays of the failures listed in :mod:`tests.fuzz.known` (owned by other branches).

Each test asserts the failure still happens exactly as listed. When it stops happening
(the owning branch landed and was merged here), the test fails on purpose: delete the
entry from known.py, this replay, and the exclusion, so the fuzzers cover the class again.
"""

from __future__ import annotations

import json
import urllib.parse

import pytest
from tenantguard.errors import TokenError

from . import known
from .conftest import FuzzSidecar
from .test_tokens import header, payload, signed, verifier
from .wire import send

STILL = "no longer reproduces: the fix landed; delete it from tests/fuzz/known.py and its exclusion"


def test_opa_get_deep_input(fuzz_sidecar: FuzzSidecar) -> None:
    text = known.nested_text(known.DEEP)
    answer = send(fuzz_sidecar.address, "GET", "/v1/data/tenantguard/decision?input=" + urllib.parse.quote(text))
    assert answer.status == 500, f"{known.OPA_GET_DEEP_INPUT.name} {STILL} ({answer.status})"


def test_token_huge_integer_claim() -> None:
    token = signed(json.dumps(header()).encode(), json.dumps(payload(exp=10**400)).encode())
    with pytest.raises(OverflowError):  # not a TokenError: a 500 at the doors
        verifier().verify(token)


def test_token_nan_times() -> None:
    body = json.dumps(payload(exp="__")).replace('"__"', "NaN").encode()
    try:
        claims = verifier().verify(signed(json.dumps(header()).encode(), body))
    except TokenError:
        pytest.fail(f"{known.TOKEN_NAN_TIMES.name} {STILL}")
    assert claims.exp != claims.exp  # NaN: accepted, and it never expires


def test_every_known_entry_has_a_replay() -> None:
    names = {k.name for k in known.KNOWN}
    replays = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert names <= replays, names - replays
