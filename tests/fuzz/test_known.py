"""Replays of the failures listed in :mod:`tests.fuzz.known` (owned by other branches).

Each replay asserts its failure still happens exactly as listed; when it stops (the owning
branch landed), the replay fails on purpose so that the entry and its exclusion are
deleted and the fuzzers cover the class again. """

from __future__ import annotations

from . import known
from .conftest import FuzzSidecar
from .wire import send

STILL = "no longer reproduces: the fix landed; delete it from tests/fuzz/known.py and its exclusion"


def test_envoy_http_empty_allow(fuzz_sidecar: FuzzSidecar) -> None:
    answer = send(fuzz_sidecar.address, "GET", "/envoy/ext_authz/0",
                  headers={"Authorization": "Bearer " + fuzz_sidecar.token()})
    documented = send(fuzz_sidecar.address, "GET", "/openapi.json").json()["paths"]["/envoy/ext_authz/{path}"]["get"]
    declares_json = "application/json" in documented["responses"].get("200", {}).get("content", {})
    assert answer.status == 200 and answer.body == b"" and declares_json, \
        f"{known.ENVOY_HTTP_EMPTY_ALLOW.name} {STILL}"


def test_every_known_entry_has_a_replay() -> None:
    names = {k.name for k in known.KNOWN}
    replays = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert names <= replays, names - replays


def test_opa_get_newline_path(fuzz_sidecar: FuzzSidecar) -> None:
    answer = send(fuzz_sidecar.address, "GET", "/v1/data/a%0Ab",
                  headers={"Authorization": "Bearer " + fuzz_sidecar.token()})
    assert answer.status == 404 and "code" not in answer.json(), f"{known.OPA_GET_NEWLINE_PATH.name} {STILL}"
