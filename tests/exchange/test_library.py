"""The exchange library without a server: request model, scopes, client auth, policy reading, keys."""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

import pytest
from tenantguard import exchange as ex
from tenantguard.decision.core import PolicyRevision
from tenantguard.errors import KeyMaterialError

GRANT = ex.GRANT_TYPE_TOKEN_EXCHANGE
BASE = [("grant_type", GRANT), ("subject_token", "t"), ("subject_token_type", ex.TOKEN_TYPE_JWT),
        ("audience", "billing")]


def request(*extra: tuple[str, str], drop: str | None = None) -> ex.ExchangeRequest:
    return ex.ExchangeRequest.from_form([p for p in BASE if p[0] != drop] + list(extra))


# -- request model -------------------------------------------------------------------


def test_a_minimal_request() -> None:
    r = request()
    assert (r.subject_token, r.audience, r.scope, r.issued_token_type) == ("t", "billing", None,
                                                                         ex.TOKEN_TYPE_ACCESS_TOKEN)


def test_empty_values_count_as_omitted_and_unknown_parameters_are_ignored() -> None:
    r = request(("scope", ""), ("client_id", "orders"), ("requested_token_type", ""))
    assert r.scope is None and r.requested_token_type is None


def test_requested_token_type_is_echoed() -> None:
    assert request(("requested_token_type", ex.TOKEN_TYPE_JWT)).issued_token_type == ex.TOKEN_TYPE_JWT


@pytest.mark.parametrize(("extra", "drop", "error"), [
    ((), "grant_type", ex.InvalidRequest),
    ((("grant_type", "password"),), "grant_type", ex.UnsupportedGrantType),
    ((), "subject_token", ex.InvalidRequest),
    ((), "subject_token_type", ex.InvalidRequest),
    ((), "audience", ex.InvalidRequest),
    ((("subject_token", "again"),), None, ex.InvalidRequest),
    ((("audience", "exports"),), None, ex.InvalidTarget),
    ((("resource", "svc:exports"),), None, ex.InvalidTarget),
    ((("resource", "https://billing/"),), "audience", ex.InvalidTarget),
    ((("audience", "../etc"),), "audience", ex.InvalidTarget),
    ((("actor_token", "a"),), None, ex.InvalidRequest),
    ((("actor_token", "a"), ("actor_token_type", ex.TOKEN_TYPE_JWT)), None, ex.InvalidRequest),
    ((("actor_token_type", ex.TOKEN_TYPE_JWT),), None, ex.InvalidRequest),
    ((("requested_token_type", ex.TOKEN_TYPE_ID_TOKEN),), None, ex.InvalidRequest),
    ((("scope", "a\\b"),), None, ex.InvalidScope),
    ((("scope", " ".join(f"s{i}" for i in range(40))),), None, ex.InvalidScope),
])
def test_bad_requests(extra: tuple[tuple[str, str], ...], drop: str | None, error: type[Exception]) -> None:
    with pytest.raises(error):
        request(*extra, drop=drop)


def test_resource_alone_and_agreeing_audience_and_resource() -> None:
    assert request(("resource", "svc:billing"), drop="audience").audience == "billing"
    assert request(("resource", "svc:billing")).audience == "billing"


def test_parse_form_is_strict() -> None:
    assert ex.parse_form(b"a=1&b=x+y%21&c=") == [("a", "1"), ("b", "x y!"), ("c", "")]
    with pytest.raises(ex.InvalidRequest):
        ex.parse_form("a=\u00e9".encode())
    with pytest.raises(ex.InvalidRequest):
        ex.parse_form(b"a=%ff")
    with pytest.raises(ex.InvalidRequest):
        ex.parse_form(b"&".join(b"f%d=1" % i for i in range(100)))


def test_error_descriptions_stay_within_the_rfc_character_set() -> None:
    err = ex.InvalidRequest('bad "quoted" \\ value\n', reason="token_expired")
    assert err.to_oauth() == {"error": "invalid_request",
                              "error_description": "token_expired: bad 'quoted' ' value'"}


# -- scopes ----------------------------------------------------------------------------


@pytest.mark.parametrize(("granted", "wanted", "covered"), [
    ("invoices:read", "invoices:read", True),
    ("invoices:*", "invoices:read", True),
    ("invoices:read", "invoices:*", False),
    ("*", "invoices:read", False),
    ("invoices:*", "invoicesX:read", False),
])
def test_scope_covers_matches_the_bundle(granted: str, wanted: str, covered: bool) -> None:
    assert ex.scope_covers(granted, wanted) is covered


# -- client authentication -------------------------------------------------------------


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_client_basic() -> None:
    secret = b"s3cret-s3cret-s3cret"
    ex.check_client_basic(basic("orders", "s3cret-s3cret-s3cret"), client_id="orders", secret=secret)
    ex.check_client_basic(None, client_id="orders", secret=None)  # no secret configured: loopback is the auth
    for header in (None, "Bearer x", "Basic !!!", basic("orders", "nope"), basic("billing", "s3cret-s3cret-s3cret"),
                   "Basic " + base64.b64encode(b"orders").decode()):
        with pytest.raises(ex.InvalidClient):
            ex.check_client_basic(header, client_id="orders", secret=secret)


def test_client_secret_file_must_be_private_and_long_enough(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text("0123456789abcdef\n")
    path.chmod(0o644)
    with pytest.raises(KeyMaterialError):
        ex.read_client_secret(path)
    path.chmod(0o600)
    assert ex.read_client_secret(path) == b"0123456789abcdef"
    path.write_text("short")
    with pytest.raises(KeyMaterialError):
        ex.read_client_secret(path)


# -- reading the policy, fail closed ----------------------------------------------------


@pytest.mark.parametrize("result", [
    None, True, "allow", {"allow": "yes"},
    {"allow": True, "scope": [], "max_lifetime": 60},
    {"allow": True, "scope": ["a"], "max_lifetime": 0},
    {"allow": True, "scope": ["a"], "max_lifetime": True},
    {"allow": True, "scope": "a", "max_lifetime": 60},
    {"allow": True, "scope": ["a", 3], "max_lifetime": 60},
])
def test_malformed_policy_results_deny(result: Any) -> None:
    assert ex.ExchangeVerdict.from_result(result).allow is False


def test_verdict_allow_and_deny() -> None:
    ok = ex.ExchangeVerdict.from_result({"allow": True, "reasons": [], "scope": ["a"], "max_lifetime": 120})
    assert (ok.allow, ok.scope, ok.max_lifetime) == (True, ("a",), 120.0)
    no = ex.ExchangeVerdict.from_result({"allow": False, "reasons": ["audience_not_allowed"]})
    assert (no.allow, no.reasons) == (False, ("audience_not_allowed",))


class StubPolicy:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def evaluate(self, entrypoint: str, input: Any) -> Any:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize("answer", [None, "teleport", 42, RuntimeError("boom")])
def test_propagation_mode_fails_closed(answer: Any) -> None:
    assert ex.propagation_mode(PolicyRevision("1", StubPolicy(answer)), "orders", "billing") == "deny"
    assert ex.propagation_mode(None, "orders", "billing") == "deny"


def test_propagation_mode_passes_known_modes() -> None:
    assert ex.propagation_mode(PolicyRevision("1", StubPolicy("forward")), "edge", "orders") == "forward"


# -- keys --------------------------------------------------------------------------------


def test_signing_key_is_created_0600_once_and_reloaded(tmp_path: Path) -> None:
    first = ex.load_or_create_signing_key(tmp_path)
    path = tmp_path / ex.KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ex.load_or_create_signing_key(tmp_path).kid == first.kid
    path.chmod(0o640)
    with pytest.raises(KeyMaterialError):
        ex.load_or_create_signing_key(tmp_path)


def test_in_memory_keys_differ() -> None:
    assert ex.load_or_create_signing_key(None).kid != ex.load_or_create_signing_key(None).kid
