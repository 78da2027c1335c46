"""A second, hostile corpus for the write doors: every answer of the fast replica must equal
the framework replica's (status, body bytes, every header but ``date``), as in
``test_hot_writes.py``, for credentials, bodies, media types and Idempotency-Keys an
attacker would try."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import rawhttp
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import ADMIN_TOKEN, JOIN_SECRET
from tests.harness.twin_planes import ADMIN, ISSUED, answer, as_json, send, twin_planes

pytestmark = [pytest.mark.nats, pytest.mark.timeout(180)]

JSON = ("Content-Type", "application/json")
AUTH = ("Authorization", f"Bearer {ADMIN_TOKEN}")


def _rel(tenant: str = "acme", obj: str = "doc:x", relation: str = "member", subject: str = "user:alice") -> bytes:
    return as_json({"changes": [{"op": "write", "rel": {"tenant": tenant, "object": obj, "relation": relation,
                                                        "subject": subject}}]})


def corpus() -> Iterator[tuple[str, str, list[tuple[str, Any]], bytes]]:
    rel, rev = "/v1/relations", "/v1/revocations"
    admin = list(ADMIN.items())
    yield "warm the token", rel, admin, _rel(obj="doc:warm")
    # credentials
    yield "prefix of the token", rel, [("Authorization", f"Bearer {ADMIN_TOKEN[:-1]}"), JSON], _rel()
    yield "token and more", rel, [("Authorization", f"Bearer {ADMIN_TOKEN}x"), JSON], _rel()
    yield "token, a space, more", rel, [("Authorization", f"Bearer {ADMIN_TOKEN} x"), JSON], _rel()
    yield "token twice", rel, [("Authorization", f"Bearer {ADMIN_TOKEN} {ADMIN_TOKEN}"), JSON], _rel()
    yield "tab after the scheme", rel, [("Authorization", f"Bearer\t{ADMIN_TOKEN}"), JSON], _rel()
    yield "no scheme", rel, [("Authorization", ADMIN_TOKEN), JSON], _rel()
    yield "Token scheme", rel, [("Authorization", f"Token {ADMIN_TOKEN}"), JSON], _rel()
    yield "Bearer: scheme", rel, [("Authorization", f"Bearer: {ADMIN_TOKEN}"), JSON], _rel()
    yield "Basic scheme", rel, [("Authorization", f"Basic {ADMIN_TOKEN}"), JSON], _rel()
    yield "wrong, then right", rel, [("Authorization", "Bearer " + "w" * 40), AUTH, JSON], _rel()
    yield "right, then wrong", rel, [AUTH, ("Authorization", "Bearer " + "w" * 40), JSON], _rel(obj="doc:rw")
    yield "empty, then right", rel, [("Authorization", ""), AUTH, JSON], _rel()
    yield "in the query", rel + f"?access_token={ADMIN_TOKEN}", [JSON], _rel()
    yield "X-Api-Key", rel, [("X-Api-Key", ADMIN_TOKEN), JSON], _rel()
    yield "join secret as the admin token", rel, [("Authorization", f"Bearer {JOIN_SECRET}"), JSON], _rel()
    yield "join secret with the service header", rel, [("Authorization", f"Bearer {JOIN_SECRET}"),
                                                       ("X-Tenantguard-Service", "billing"), JSON], _rel()
    yield "admin with a service header", rel, [*admin, ("X-Tenantguard-Service", "billing")], _rel(obj="doc:svc")
    yield "latin-1 bytes in the token", rel, [("Authorization", b"Bearer " + b"\xe9" * 20), JSON], _rel()
    yield "a huge token", rel, [("Authorization", "Bearer " + "a" * 20000), JSON], _rel()
    # media types
    yield "two content types, JSON first", rel, [AUTH, JSON, ("Content-Type", "text/plain")], _rel(obj="doc:ct1")
    yield "two content types, JSON second", rel, [AUTH, ("Content-Type", "text/plain"), JSON], _rel(obj="doc:ct2")
    yield "JSON in capitals", rel, [AUTH, ("Content-Type", "APPLICATION/JSON")], _rel(obj="doc:ct3")
    # two content codings: the door read the first ("identity": a write) where the route refuses both
    yield "identity, then gzip", rel, [AUTH, JSON, ("Content-Encoding", "identity"), ("Content-Encoding", "gzip")], \
        _rel(obj="doc:ce1")
    yield "empty, then gzip", rel, [AUTH, JSON, ("Content-Encoding", ""), ("Content-Encoding", "gzip")], \
        _rel(obj="doc:ce2")
    yield "identity twice", rel, [AUTH, JSON, ("Content-Encoding", "identity"), ("Content-Encoding", "identity")], \
        _rel(obj="doc:ce3")
    yield "JSON with utf-16 charset", rel, [AUTH, ("Content-Type", "application/json; charset=utf-16")], _rel()
    yield "JSON list of types", rel, [AUTH, ("Content-Type", "application/json, text/plain")], _rel()
    yield "jsonp", rel, [AUTH, ("Content-Type", "application/jsonp")], _rel()
    yield "form", rel, [AUTH, ("Content-Type", "application/x-www-form-urlencoded")], b"changes=1"
    # bodies
    yield "BOM", rel, admin, b"\xef\xbb\xbf" + _rel(obj="doc:bom")
    yield "UTF-16", rel, admin, _rel(obj="doc:u16").decode().encode("utf-16")
    yield "UTF-32", rel, admin, _rel(obj="doc:u32").decode().encode("utf-32-le")
    yield "leading whitespace", rel, admin, b" \n\t" + _rel(obj="doc:ws")
    yield "trailing garbage", rel, admin, _rel(obj="doc:tg") + b"x"
    yield "two documents", rel, admin, _rel(obj="doc:two") + _rel(obj="doc:three")
    yield "NaN in an extra member", rel, admin, b'{"changes": [], "x": NaN}'
    yield "Infinity", rel, admin, b'{"changes": [], "x": Infinity}'
    yield "1e400", rel, admin, b'{"changes": [], "x": 1e400}'
    yield "-0", rel, admin, b'{"changes": [], "x": -0}'
    yield "duplicate in rel", rel, admin, (b'{"changes": [{"op": "write", "rel": {"tenant": "acme", "tenant": "evil",'
                                           b' "object": "doc:d", "relation": "member", "subject": "user:a"}}]}')
    yield "duplicate op", rel, admin, (b'{"changes": [{"op": "delete", "op": "write", "rel": {"tenant": "acme",'
                                       b' "object": "doc:d", "relation": "member", "subject": "user:a"}}]}')
    yield "escaped duplicate", rel, admin, (b'{"changes": [{"op": "write", "rel": {"tenant": "acme",'
                                            b' "t\\u0065nant": "evil", "object": "doc:d", "relation": "member",'
                                            b' "subject": "user:a"}}]}')
    yield "op as a boolean", rel, admin, as_json({"changes": [{"op": True, "rel": {}}]})
    yield "op as an int", rel, admin, as_json({"changes": [{"op": 1, "rel": {}}]})
    yield "rel null", rel, admin, as_json({"changes": [{"op": "write", "rel": None}]})
    yield "rel a list", rel, admin, as_json({"changes": [{"op": "write", "rel": ["acme", "doc:x", "member", "u:a"]}]})
    yield "a field null", rel, admin, as_json({"changes": [{"op": "write", "rel": {"tenant": None, "object": "doc:x",
                                                                                   "relation": "member",
                                                                                   "subject": "user:a"}}]})
    yield "a field a boolean", rel, admin, _rel(tenant=True)  # type: ignore[arg-type]
    yield "a field a number", rel, admin, _rel(obj=5)  # type: ignore[arg-type]
    yield "a field an object", rel, admin, _rel(subject={"type": "user"})  # type: ignore[arg-type]
    yield "changes null", rel, admin, as_json({"changes": None})
    yield "changes a string", rel, admin, as_json({"changes": "write"})
    yield "change null", rel, admin, as_json({"changes": [None]})
    yield "deep extra member", rel, admin, b'{"changes": [], "x": ' + b"[" * 20 + b"1" + b"]" * 20 + b"}"
    yield "depth 31", rel, admin, b'{"changes": [], "x": ' + b"[" * 30 + b"]" * 30 + b"}"
    yield "depth 33", rel, admin, b'{"changes": [], "x": ' + b"[" * 32 + b"]" * 32 + b"}"
    yield "escaped lone surrogate in a tuple", rel, admin, b'{"changes": [{"op": "write", "rel": {"tenant": "acme",' \
        b' "object": "doc:\\udc00", "relation": "member", "subject": "user:a"}}]}'
    yield "surrogate pair in a tuple", rel, admin, _rel(obj="doc:\U0001f600")
    yield "NUL in an id", rel, admin, _rel(obj="doc:a\x00b")
    yield "newline in an id", rel, admin, _rel(obj="doc:a\nb")
    yield "DEL in an id", rel, admin, _rel(obj="doc:a\x7fb")
    yield "bidi override", rel, admin, _rel(obj="doc:a\u202eb")
    yield "zero width", rel, admin, _rel(subject="user:al\u200bice")
    yield "unicode tenant", rel, admin, _rel(tenant="ácme")
    yield "fullwidth tenant", rel, admin, _rel(tenant="\uff41\uff43\uff4d\uff45")
    yield "tenant with colon", rel, admin, _rel(tenant="acme:x")
    yield "tenant with hash", rel, admin, _rel(tenant="acme#x")
    yield "tenant with at", rel, admin, _rel(tenant="acme@x")
    yield "tenant with a dot", rel, admin, _rel(tenant="acme.x")
    yield "tenant with a star", rel, admin, _rel(tenant="*")
    yield "tenant with a gt", rel, admin, _rel(tenant=">")
    yield "tenant with a space", rel, admin, _rel(tenant="ac me")
    yield "tenant empty", rel, admin, _rel(tenant="")
    yield "tenant 64", rel, admin, _rel(tenant="a" * 64)
    yield "tenant 65", rel, admin, _rel(tenant="a" * 65)
    yield "object without type", rel, admin, _rel(obj="x")
    yield "object with hash", rel, admin, _rel(obj="doc:x#member")
    yield "object with at", rel, admin, _rel(obj="doc:x@y")
    yield "object two colons", rel, admin, _rel(obj="doc:x:y")
    yield "object empty id", rel, admin, _rel(obj="doc:")
    yield "object huge", rel, admin, _rel(obj="doc:" + "x" * 5000)
    yield "relation with hash", rel, admin, _rel(relation="mem#ber")
    yield "relation with colon", rel, admin, _rel(relation="a:b")
    yield "relation empty", rel, admin, _rel(relation="")
    yield "userset subject", rel, admin, _rel(obj="doc:us", subject="group:eng#member")
    yield "subject with two hashes", rel, admin, _rel(subject="group:eng#member#x")
    yield "subject empty relation", rel, admin, _rel(subject="group:eng#")
    yield "subject with at", rel, admin, _rel(subject="user:a@b.c")
    yield "subject wildcard", rel, admin, _rel(subject="user:*")
    yield "subject no type", rel, admin, _rel(subject="alice")
    # idempotency keys
    yield "key with latin-1", rel, [*admin, ("Idempotency-Key", b"k\xe9y")], _rel(obj="doc:k1")
    yield "key 128", rel, [*admin, ("Idempotency-Key", "k" * 128)], _rel(obj="doc:k2")
    yield "key 128 again, same body", rel, [*admin, ("Idempotency-Key", "k" * 128)], _rel(obj="doc:k2")
    yield "key huge", rel, [*admin, ("Idempotency-Key", "k" * 8000)], _rel(obj="doc:k3")
    yield "key with a slash", rel, [*admin, ("Idempotency-Key", "a/b")], _rel(obj="doc:k4")
    yield "key with a tab inside", rel, [*admin, ("Idempotency-Key", "a\tb")], _rel(obj="doc:k5")
    yield "key reused on a revocation", rev, [*admin, ("Idempotency-Key", "k" * 128)], \
        as_json({"kind": "jti", "jti": "j-k", "exp": ISSUED})
    yield "key, bad body", rel, [*admin, ("Idempotency-Key", "kb")], as_json({"changes": []})
    yield "key, bad body, then good", rel, [*admin, ("Idempotency-Key", "kb")], _rel(obj="doc:kb")
    # revocations
    yield "revocation, exp as a float", rev, admin, as_json({"kind": "jti", "jti": "j", "exp": 1.0})
    yield "revocation, exp 2**53-1", rev, admin, as_json({"kind": "jti", "jti": "j-big", "exp": 2**53 - 1})
    yield "revocation, exp beyond", rev, admin, b'{"kind": "jti", "jti": "j", "exp": 9007199254740993}'
    yield "revocation, exp -0", rev, admin, b'{"kind": "jti", "jti": "j-neg0", "exp": -0}'
    yield "revocation, exp 1e3", rev, admin, b'{"kind": "jti", "jti": "j-e3", "exp": 1e3}'
    yield "revocation, exp 1000.0", rev, admin, b'{"kind": "jti", "jti": "j-f", "exp": 1000.0}'
    yield "revocation, jti null", rev, admin, as_json({"kind": "jti", "jti": None, "exp": ISSUED})
    yield "revocation, jti empty", rev, admin, as_json({"kind": "jti", "jti": "", "exp": ISSUED})
    yield "revocation, jti huge", rev, admin, as_json({"kind": "jti", "jti": "j" * 5000, "exp": ISSUED})
    yield "revocation, jti with NUL", rev, admin, as_json({"kind": "jti", "jti": "j\x00", "exp": ISSUED})
    yield "revocation, kind null", rev, admin, as_json({"kind": None})
    yield "revocation, kind in capitals", rev, admin, as_json({"kind": "JTI", "jti": "j", "exp": ISSUED})
    yield "revocation, tenant with a colon", rev, admin, as_json({"kind": "tenant", "tenant": "a:b",
                                                                  "issued_before": ISSUED})
    yield "revocation, subject of another kind", rev, admin, as_json({"kind": "kid", "kid": "k-x", "tenant": "acme",
                                                                      "sub": "user:a"})
    yield "revocation, lift with a cut-off", rev, admin, as_json({"kind": "lift_tenant", "tenant": "zeta",
                                                                  "issued_before": ISSUED})
    yield "revocation, duplicate kind", rev, admin, b'{"kind": "kid", "kind": "tenant", "kid": "k", "tenant": "a"}'
    yield "revocation, an array", rev, admin, b'[{"kind": "kid", "kid": "k"}]'
    yield "revocation, kid huge", rev, admin, as_json({"kind": "kid", "kid": "k" * 5000})
    yield "revocation, sub without tenant", rev, admin, as_json({"kind": "subject", "sub": "user:a"})


def _each(fast: PlaneProcess, framework: PlaneProcess) -> list[tuple[str, int]]:
    seen = []
    with httpx.Client(base_url=fast.base_url, timeout=30) as to_fast, \
            httpx.Client(base_url=framework.base_url, timeout=30) as to_framework:
        for label, path, headers, body in corpus():
            got = answer(send(to_fast, path, headers, body))
            want = answer(send(to_framework, path, headers, body))
            assert got == want, label
            assert got["status"] < 500, (label, got)
            seen.append((label, got["status"]))
    return seen


EXPECTED = {
    # two credentials are refused whichever comes first (proxies differ on which one counts)
    "wrong, then right": 401, "right, then wrong": 401, "empty, then right": 401,
    # credentials are never read from elsewhere, and one secret is never another
    "in the query": 401, "X-Api-Key": 401, "join secret as the admin token": 403,
    "join secret with the service header": 403, "prefix of the token": 403, "token and more": 403,
    "latin-1 bytes in the token": 403, "a huge token": 403,
    # one body, one meaning
    "identity, then gzip": 400, "empty, then gzip": 400, "identity twice": 200,
    "duplicate in rel": 400, "duplicate op": 400, "escaped duplicate": 400, "escaped lone surrogate in a tuple": 400,
    "BOM": 400, "UTF-16": 400, "two documents": 400, "NUL in an id": 400, "bidi override": 400,
    "tenant with a dot": 400, "tenant with a star": 400, "tenant with a gt": 400, "key with latin-1": 400,
    "key huge": 400, "revocation, exp 1000.0": 400, "revocation, exp beyond": 400,
}


def test_hostile_requests_get_the_same_answer_from_the_door_and_the_route(tmp_path: Path) -> None:
    for fast, framework, _, _ in twin_planes(tmp_path):
        seen = dict(_each(fast, framework))
        assert {label: seen[label] for label in EXPECTED} == EXPECTED
        assert fast.status()["fast_writes"]["answered"] >= 10
        for plane in (fast, framework):  # the right token alone still writes
            with plane.client() as http:
                assert http.post("/v1/relations", content=_rel(obj="doc:last"), headers=[JSON]).status_code == 200


def test_a_request_the_plane_cannot_parse_gets_the_json_error_body(plane: PlaneProcess) -> None:
    """uvicorn answers these before any route or door: the plane's protocol makes it the JSON body."""
    for request in rawhttp.UNPARSEABLE:
        rawhttp.refuses_as_json(rawhttp.exchange(plane.base_url, request))
