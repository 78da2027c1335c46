"""Property fuzzing of every HTTP door of a real sidecar, with structure-aware inputs.

Properties, for every request: no 5xx and an answer within the socket timeout; every
refusal a typed 4xx carrying ``{"error", "message"}`` (``{"error", "error_description"}``
at the OAuth token endpoint). Inputs start from a request the door accepts and break one
thing: a member of the wrong type, odd JSON text, deep nesting, broken UTF-8, a content
type, the Authorization header, the path, the size. Cases of classes other branches are
fixing are kept out of the draws and listed in :mod:`tests.fuzz.known` instead.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .budget import budget, timeout
from .conftest import FuzzSidecar
from .strategies import (
    CONTENT_TYPES,
    PATH_TRICKS,
    broken_bytes,
    garbage_authorization,
    json_text,
    json_values,
    mutated,
    nested,
    nesting_depths,
    odd_strings,
)
from .wire import check_answer, send

pytestmark = timeout

QUESTION: dict[str, Any] = {
    "subject": {"type": "user", "id": "alice", "properties": {"department": "sales"}},
    "action": {"name": "invoices:read", "properties": {"method": "GET"}},
    "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}},
    "context": {"time": "2026-01-01T00:00:00Z", "ip": "10.0.0.1"},
}
BODIES: dict[str, dict[str, Any]] = {
    "/v1/check": {**QUESTION, "at_least": 0},
    "/access/v1/evaluation": QUESTION,
    "/access/v1/evaluations": {
        "subject": QUESTION["subject"],
        "evaluations": [{"action": QUESTION["action"], "resource": QUESTION["resource"]},
                        {"action": {"name": "invoices:write"}, "resource": QUESTION["resource"]}],
        "options": {"evaluations_semantic": "deny_on_first_deny"},
    },
    "/v1/data/tenantguard/decision": {"input": QUESTION},
    "/v1/data/tenantguard/decision/allow": {"input": QUESTION},
}
DOORS = sorted(BODIES)
doors = st.sampled_from(DOORS)


def _post(sidecar: FuzzSidecar, path: str, body: bytes, *, authorization: str | None = None,
          content_type: str | None = "application/json") -> None:
    headers = {}
    if content_type is not None:
        headers["Content-Type"] = content_type
    if authorization is not None:
        headers["Authorization"] = authorization
    check_answer(send(sidecar.address, "POST", path, headers=headers, body=body))


def _bearer(sidecar: FuzzSidecar) -> st.SearchStrategy[str | None]:
    return st.sampled_from([None, "Bearer " + sidecar.token()])


@budget(60)
@given(data=st.data(), path=doors)
def test_a_member_of_the_wrong_type_is_a_typed_refusal(fuzz_sidecar: FuzzSidecar, data: st.DataObject,
                                                       path: str) -> None:
    """Every member of every door's body, replaced by another type or removed."""
    body = data.draw(mutated(BODIES[path]))
    auth = data.draw(_bearer(fuzz_sidecar))
    _post(fuzz_sidecar, path, json.dumps(body).encode(), authorization=auth)


@budget(60)
@given(data=st.data(), path=doors)
def test_odd_json_text_is_a_typed_refusal(fuzz_sidecar: FuzzSidecar, data: st.DataObject, path: str) -> None:
    """Duplicate keys, NaN/Infinity literals, bignums, lone surrogates, in an otherwise valid body."""
    text = data.draw(json_text(data.draw(st.one_of(st.just(BODIES[path]), mutated(BODIES[path])))))
    _post(fuzz_sidecar, path, text.encode("utf-8", "surrogatepass"), authorization=data.draw(_bearer(fuzz_sidecar)))


@budget(30)
@given(data=st.data(), path=doors, value=json_values)
def test_any_json_value_as_the_body_is_a_typed_refusal(fuzz_sidecar: FuzzSidecar, data: st.DataObject, path: str,
                                                       value: Any) -> None:
    _post(fuzz_sidecar, path, json.dumps(value).encode(), authorization=data.draw(_bearer(fuzz_sidecar)))


@budget(20)
@given(path=doors, depth=nesting_depths, kind=st.sampled_from(["list", "object"]),
       where=st.sampled_from(["body", "properties", "context"]))
def test_deep_nesting_is_a_typed_refusal(fuzz_sidecar: FuzzSidecar, path: str, depth: int, kind: str,
                                         where: str) -> None:
    """Nesting deeper than recursive parsers and encoders survive, at the top or inside a member."""
    if where == "body":
        text = nested(depth, kind=kind)
    else:
        marker = '"__deep__"'
        doc = json.loads(json.dumps(BODIES[path]))
        holder = doc.get("input", doc)
        if where == "context":
            holder["context"] = "__deep__"
        else:
            holder.setdefault("resource", {})["properties"] = "__deep__"
        text = json.dumps(doc).replace(marker, nested(depth, kind="object" if kind == "object" else "list",
                                                      leaf="{}" if where == "properties" else "1"))
    _post(fuzz_sidecar, path, text.encode(), authorization="Bearer " + fuzz_sidecar.token())


@budget(40)
@given(data=st.data(), path=doors)
def test_broken_utf8_is_a_typed_refusal(fuzz_sidecar: FuzzSidecar, data: st.DataObject, path: str) -> None:
    raw = data.draw(broken_bytes(json.dumps(BODIES[path], ensure_ascii=False)))
    _post(fuzz_sidecar, path, raw, authorization=data.draw(_bearer(fuzz_sidecar)))


@budget(60)
@given(data=st.data(), path=doors, content_type=st.sampled_from(CONTENT_TYPES))
def test_content_types_and_authorization_headers(fuzz_sidecar: FuzzSidecar, data: st.DataObject, path: str,
                                                 content_type: str | None) -> None:
    """Any content type and any Authorization value: an answer or a typed refusal, never a 5xx."""
    authorization = data.draw(garbage_authorization(fuzz_sidecar.token()))
    _post(fuzz_sidecar, path, json.dumps(BODIES[path]).encode(), authorization=authorization,
          content_type=content_type)


@budget(12)
@given(path=st.sampled_from([*DOORS, "/oauth2/token", "/v1/status"]),
       size=st.sampled_from([64 * 1024 + 1, 256 * 1024, 4 * 1024 * 1024]),
       declared=st.booleans())
def test_oversized_bodies_are_refused_with_413(fuzz_sidecar: FuzzSidecar, path: str, size: int,
                                               declared: bool) -> None:
    """Over the 64 KiB bound: 413, whether the length is declared or chunked; in OAuth's words at
    the token endpoint (found by this test: it answered the sidecar's own error shape there)."""
    body = b'{"input":"' + b"x" * size + b'"}'
    headers = {"Content-Type": "application/json"}
    if declared:
        answer = send(fuzz_sidecar.address, "POST", path, headers=headers, body=body)
    else:
        answer = send(fuzz_sidecar.address, "POST", path, headers={**headers, "Transfer-Encoding": "chunked"},
                      body=b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    check_answer(answer, oauth=path == "/oauth2/token")
    assert answer.status == 413, answer
    assert answer.json()["error"] == ("invalid_request" if path == "/oauth2/token" else "payload_too_large")


@budget(80)
@given(data=st.data(), target=st.sampled_from(PATH_TRICKS),
       method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]))
def test_path_tricks_and_methods(fuzz_sidecar: FuzzSidecar, data: st.DataObject, target: str, method: str) -> None:
    """Dot segments, doubled slashes, encoded separators, case, long paths, odd methods."""
    headers = {"Content-Type": "application/json"}
    if data.draw(st.booleans()):
        headers["Authorization"] = "Bearer " + fuzz_sidecar.token()
    body = json.dumps({"input": QUESTION, **QUESTION}).encode() if method in ("POST", "PUT", "PATCH") else None
    answer = send(fuzz_sidecar.address, method, target, headers=headers, body=body)
    check_answer(answer, oauth=target.startswith("/oauth2/token") and answer.status != 404)


@budget(60)
@given(data=st.data())
def test_opa_get_input_query(fuzz_sidecar: FuzzSidecar, data: st.DataObject) -> None:
    """``GET /v1/data/{path}?input=<json>``: the input travels URL-encoded in the query."""
    text = data.draw(st.one_of(json_text(data.draw(st.one_of(st.just(QUESTION), mutated(QUESTION)))),
                               odd_strings, st.just(nested(5000))))
    query = urllib.parse.quote(text.encode("utf-8", "surrogatepass"), safe="")
    headers = {"Authorization": "Bearer " + fuzz_sidecar.token()} if data.draw(st.booleans()) else {}
    check_answer(send(fuzz_sidecar.address, "GET", f"/v1/data/tenantguard/decision?input={query}", headers=headers))


@budget(30)
@given(target=st.one_of(odd_strings, st.from_regex(r"[a-z][a-z0-9_-]{0,70}", fullmatch=True)))
def test_propagation_target_query(fuzz_sidecar: FuzzSidecar, target: str) -> None:
    query = urllib.parse.quote(target.encode("utf-8", "surrogatepass"), safe="")
    check_answer(send(fuzz_sidecar.address, "GET", f"/v1/propagation?target={query}"))


# --------------------------------------------------------------------------- token exchange

GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt"
FORM_FIELDS = ["grant_type", "subject_token", "subject_token_type", "audience", "scope", "actor_token",
               "actor_token_type", "requested_token_type", "resource", "client_id"]


def _form(sidecar: FuzzSidecar) -> list[tuple[str, str]]:
    return [("grant_type", GRANT), ("subject_token", sidecar.token()), ("subject_token_type", JWT_TYPE),
            ("audience", "reports"), ("scope", "invoices:read")]


@st.composite
def forms(draw: st.DrawFn, base: list[tuple[str, str]]) -> bytes:
    """A valid exchange form with fields dropped, repeated, renamed or given odd values."""
    pairs = list(base)
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["drop", "repeat", "odd", "add", "empty"]))
        index = draw(st.integers(0, max(len(pairs) - 1, 0)))
        if how == "drop" and pairs:
            pairs.pop(index)
        elif how == "repeat" and pairs:
            pairs.append((pairs[index][0], draw(odd_strings)))
        elif how == "odd" and pairs:
            pairs[index] = (pairs[index][0], draw(odd_strings))
        elif how == "add":
            pairs.append((draw(st.sampled_from(FORM_FIELDS)), draw(odd_strings)))
        elif pairs:
            pairs[index] = (pairs[index][0], "")
    encoded = "&".join(f"{urllib.parse.quote(k.encode('utf-8', 'surrogatepass'), safe='')}="
                       f"{urllib.parse.quote(v.encode('utf-8', 'surrogatepass'), safe='')}" for k, v in pairs)
    raw = encoded.encode()
    mangle = draw(st.sampled_from(["none", "none", "percent", "utf8", "separators"]))
    if mangle == "percent":
        raw += draw(st.sampled_from([b"&scope=%", b"&scope=%zz", b"&%ff=1", b"&scope=%C3%28", b"&=", b"&&&",
                                     b"&scope=%ED%A0%80", b"&subject_token=%00"]))
    elif mangle == "utf8":
        raw += b"&scope=" + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80"]))
    elif mangle == "separators":
        raw = raw.replace(b"&", draw(st.sampled_from([b";", b"&&", b"&amp;", b"\n"])))
    return raw


@budget(80)
@given(data=st.data())
def test_token_exchange_form_parsing(fuzz_sidecar: FuzzSidecar, data: st.DataObject) -> None:
    """``POST /oauth2/token``: every refusal an RFC 6749 error body, never a 5xx."""
    body = data.draw(forms(_form(fuzz_sidecar)))
    content_type = data.draw(st.sampled_from(["application/x-www-form-urlencoded",
                                              "application/x-www-form-urlencoded; charset=utf-8",
                                              "application/x-www-form-urlencoded; charset=latin-1",
                                              "application/json", "text/plain", "", None]))
    headers = {"Content-Type": content_type} if content_type is not None else {}
    authorization = data.draw(st.one_of(st.none(), st.sampled_from(["Basic", "Basic !!!", "Basic Og==",
                                                                     "Basic " + "QQ" * 3000, "Bearer x"])))
    if authorization is not None:
        headers["Authorization"] = authorization
    check_answer(send(fuzz_sidecar.address, "POST", "/oauth2/token", headers=headers, body=body), oauth=True)


@budget(40)
@given(data=st.data())
def test_token_exchange_with_odd_subject_tokens(fuzz_sidecar: FuzzSidecar, data: st.DataObject) -> None:
    """Subject tokens that verify but carry odd claims: a typed OAuth refusal or a token."""
    claims = data.draw(st.fixed_dictionaries({}, optional={
        "scope": st.one_of(odd_strings, st.just("invoices:read invoices:write")),
        "roles": st.lists(st.text(max_size=10), max_size=3),
        "act": st.recursive(st.fixed_dictionaries({"sub": st.text(max_size=12)}),
                            lambda inner: st.fixed_dictionaries({"sub": st.text(max_size=12), "act": inner}),
                            max_leaves=8),
        "sub": st.text(min_size=1, max_size=30), "tenant_id": st.text(min_size=1, max_size=30),
    }))
    form = [("grant_type", GRANT), ("subject_token", fuzz_sidecar.token(**claims)), ("subject_token_type", JWT_TYPE),
            ("audience", data.draw(st.one_of(st.sampled_from(["reports", "orders", "billing"]), odd_strings)))]
    body = urllib.parse.urlencode([(k, v.encode("utf-8", "surrogatepass")) for k, v in form]).encode()
    check_answer(send(fuzz_sidecar.address, "POST", "/oauth2/token",
                      headers={"Content-Type": "application/x-www-form-urlencoded"}, body=body), oauth=True)


# --------------------------------------------------------------------------- regressions


@pytest.mark.parametrize("where", ["token_sub", "token_tenant", "token_roles", "opa_get_input", "exchange"])
def test_lone_surrogates_never_crash_the_sidecar(fuzz_sidecar: FuzzSidecar, where: str) -> None:
    """Found by these fuzzers: a lone surrogate (``"\\ud800"``, from a JSON escape in a signed
    token or the OPA GET input) reached regorus's ``set_input``, which killed the sidecar
    (SIGSEGV). The engine now refuses such input (``tenantguard.policy.engine``), and since then the
    token and OPA parsers refuse it earlier too; either way: a typed refusal or a deny, and
    the sidecar still answers."""
    question = {"action": QUESTION["action"], "resource": QUESTION["resource"]}
    claims = {"token_sub": {"sub": "\ud800"}, "token_tenant": {"tenant_id": "acme\ud800"},
              "token_roles": {"roles": ["editor", "\udfff"]}}.get(where, {})
    token = fuzz_sidecar.token(**claims)
    oauth = where == "exchange"
    if where == "opa_get_input":
        text = json.dumps({**QUESTION, "context": {"note": "\ud800"}})
        answer = send(fuzz_sidecar.address, "GET", "/v1/data/tenantguard/decision?input=" + urllib.parse.quote(text),
                      headers={"Authorization": "Bearer " + token})
    elif oauth:
        form = [("grant_type", GRANT), ("subject_token", fuzz_sidecar.token(sub="\ud800")),
                ("subject_token_type", JWT_TYPE), ("audience", "reports")]
        answer = send(fuzz_sidecar.address, "POST", "/oauth2/token",
                      headers={"Content-Type": "application/x-www-form-urlencoded"},
                      body=urllib.parse.urlencode(form).encode())
    else:
        answer = send(fuzz_sidecar.address, "POST", "/v1/check",
                      headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
                      body=json.dumps(question).encode())
    check_answer(answer, oauth=oauth)
    if answer.status == 200:
        body = answer.json()
        assert "access_token" not in body and body.get("result", body)["allow"] is False, body
    assert send(fuzz_sidecar.address, "GET", "/health").status == 200  # still alive
