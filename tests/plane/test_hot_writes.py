"""The hot write doors answer exactly as the FastAPI routes do.

Two replicas that differ only in ``--no-fast-writes``, each on its own nats-server (so
both see the same history and hand out the same sequences), get the same corpus of good
and bad requests in the same order: missing or wrong credentials, oversized, chunked,
deep or non-interoperable JSON, wrong media types, shapes the models refuse, bad tuples,
tenants of two cells, Idempotency-Key replays and reuse, revocations of every kind, and
finally NATS gone. Every answer must match: status, body bytes, and every header but
``date``. The fast replica must have answered the good requests itself.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import topology as topo

from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import ADMIN_TOKEN
from tests.harness.twin_planes import ADMIN, CELLS, ISSUED, MAX_BODY, answer, as_json, send, twin_planes

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]


def _tenants_in_two_cells() -> tuple[str, str]:
    first = "acme"
    other = next(f"t{i}" for i in range(1000) if topo.cell_of(f"t{i}", CELLS) != topo.cell_of(first, CELLS))
    return first, other


def _write(obj: str, *, tenant: str = "acme", op: str = "write", **extra: Any) -> dict[str, Any]:
    return {"changes": [{"op": op, "rel": {"tenant": tenant, "object": obj, "relation": "member",
                                           "subject": "user:alice", **extra}}]}


def corpus() -> Iterator[tuple[str, str, list[tuple[str, str]], Any]]:
    """(label, path, headers, body: bytes, or an iterator of chunks) in the order sent."""
    rel, rev = "/v1/relations", "/v1/revocations"
    admin = list(ADMIN.items())
    a, b = _tenants_in_two_cells()
    yield "first use of the token (the framework checks it)", rel, admin, as_json(_write("doc:warm"))
    yield "a write", rel, admin, as_json(_write("doc:1"))
    yield "a delete", rel, admin, as_json(_write("doc:1", op="delete"))
    yield "several changes", rel, admin, as_json({"changes": _write("doc:2")["changes"] * 3})
    yield "members the models ignore", rel, admin, as_json({**_write("doc:3", color="red"), "note": 1})
    yield "keyed", rel, [*admin, ("Idempotency-Key", "key-1")], as_json(_write("doc:4"))
    yield "keyed retry", rel, [*admin, ("Idempotency-Key", "key-1")], as_json(_write("doc:4"))
    yield "key reused", rel, [*admin, ("Idempotency-Key", "key-1")], as_json(_write("doc:5"))
    yield "two keys: the first counts", rel, [*admin, ("Idempotency-Key", "key-1"), ("Idempotency-Key", "key-2")], \
        as_json(_write("doc:4"))
    yield "bad key", rel, [*admin, ("Idempotency-Key", "no spaces")], as_json(_write("doc:6"))
    yield "empty key", rel, [*admin, ("Idempotency-Key", "")], as_json(_write("doc:6"))
    yield "long key", rel, [*admin, ("Idempotency-Key", "k" * 129)], as_json(_write("doc:6"))
    yield "no credential", rel, [("Content-Type", "application/json")], as_json(_write("doc:7"))
    yield "not bearer", rel, [("Authorization", f"Basic {ADMIN_TOKEN}"), ("Content-Type", "application/json")], \
        as_json(_write("doc:7"))
    yield "empty bearer", rel, [("Authorization", "Bearer"), ("Content-Type", "application/json")], \
        as_json(_write("doc:7"))
    yield "wrong token", rel, [("Authorization", "Bearer " + "w" * 40), ("Content-Type", "application/json")], \
        as_json(_write("doc:7"))
    yield "bearer, any case, spaces", rel, [("Authorization", f"bEaReR   {ADMIN_TOKEN}"),
                                           ("Content-Type", "application/json")], as_json(_write("doc:8"))
    yield "no credential, bad body", rel, [("Content-Type", "application/json")], b"[[["
    yield "no credential, bad media type", rel, [("Content-Type", "text/plain")], as_json(_write("doc:7"))
    yield "text/plain", rel, [*admin[:1], ("Content-Type", "text/plain")], as_json(_write("doc:9"))
    yield "no content type", rel, admin[:1], as_json(_write("doc:9"))
    yield "+json media type", rel, [*admin[:1], ("Content-Type", "application/merge-patch+json; charset=utf-8")], \
        as_json(_write("doc:10"))
    yield "over the bound", rel, admin, as_json(_write("doc:11", padding="x" * MAX_BODY))
    yield "over the bound, chunked", rel, admin, iter([b'{"changes": [', b" " * MAX_BODY, b"]}"])
    yield "chunked, within the bound", rel, admin, iter([b'{"changes": ', as_json(_write("doc:12")["changes"]), b"}"])
    yield "too deep", rel, admin, b'{"changes": ' + b"[" * 40 + b"]" * 40 + b"}"
    yield "not JSON", rel, admin, b'{"changes": [}'
    yield "duplicate member", rel, admin, b'{"changes": [], "changes": []}'
    yield "unsafe integer", rel, admin, b'{"changes": [], "n": 9007199254740993}'
    yield "lone surrogate", rel, admin, b'{"changes": [], "s": "\\ud800"}'
    yield "not UTF-8", rel, admin, b'{"changes": [], "s": "\xff"}'
    yield "empty body", rel, admin, b""
    yield "null", rel, admin, b"null"
    yield "an array", rel, admin, b"[]"
    yield "no changes member", rel, admin, b"{}"
    yield "changes not a list", rel, admin, as_json({"changes": {"op": "write"}})
    yield "no change", rel, admin, as_json({"changes": []})
    yield "unknown op", rel, admin, as_json(_write("doc:13", op="upsert"))
    yield "rel lacks subject", rel, admin, as_json({"changes": [{"op": "write", "rel": {
        "tenant": "acme", "object": "doc:14", "relation": "member"}}]})
    yield "tenant not a string", rel, admin, as_json(_write("doc:15", tenant=7))  # type: ignore[arg-type]
    yield "change not an object", rel, admin, as_json({"changes": ["write"]})
    yield "bad tuple", rel, admin, as_json(_write("doc:16", tenant="Acme"))
    yield "second tuple bad", rel, admin, as_json({"changes": [*_write("doc:17")["changes"],
                                                               *_write("doc 18")["changes"]]})
    yield "too many changes", rel, admin, as_json({"changes": _write("d:1")["changes"] * 1001})
    yield "two cells", rel, admin, as_json({"changes": [*_write("doc:19", tenant=a)["changes"],
                                                        *_write("doc:19", tenant=b)["changes"]]})
    yield "another cell", rel, [*admin, ("X-Request-ID", "req-42")], as_json(_write("doc:20", tenant=b))
    yield "request id on an error", rel, [*admin, ("X-Request-ID", "req-43")], as_json({"changes": []})
    yield "a trailing slash", rel + "/", admin, as_json(_write("doc:21"))
    yield "a query string", rel + "?x=1", admin, as_json(_write("doc:22"))
    yield "revoke a subject", rev, admin, as_json({"kind": "subject", "tenant": "acme", "sub": "user:bob",
                                                   "issued_before": ISSUED})
    yield "revoke a jti", rev, [*admin, ("Idempotency-Key", "rev-1")], as_json({"kind": "jti", "jti": "j-1",
                                                                               "exp": ISSUED})
    yield "revocation retried", rev, [*admin, ("Idempotency-Key", "rev-1")], as_json({"kind": "jti", "jti": "j-1",
                                                                                     "exp": ISSUED})
    yield "revocation key reused", rev, [*admin, ("Idempotency-Key", "rev-1")], \
        as_json({"kind": "jti", "jti": "j-2", "exp": ISSUED})
    yield "kill switch", rev, admin, as_json({"kind": "tenant", "tenant": "acme", "issued_before": ISSUED,
                                              "jti": None})
    yield "lift it", rev, admin, as_json({"kind": "lift_tenant", "tenant": "acme"})
    yield "revoke an unknown kid", rev, admin, as_json({"kind": "kid", "kid": "kid-that-was-never-trusted"})
    yield "revocation lacks a field", rev, admin, as_json({"kind": "jti", "jti": "j-3"})
    yield "revocation, bad tenant", rev, admin, as_json({"kind": "tenant", "tenant": "ACME", "issued_before": ISSUED})
    yield "revocation, unknown member", rev, admin, as_json({"kind": "kid", "kid": "k", "why": "x"})
    yield "revocation, unknown kind", rev, admin, as_json({"kind": "everything"})
    yield "revocation, kind not a string", rev, admin, as_json({"kind": ["jti"]})
    yield "revocation, exp as text", rev, admin, as_json({"kind": "jti", "jti": "j-4", "exp": str(ISSUED)})
    yield "revocation, exp a boolean", rev, admin, as_json({"kind": "jti", "jti": "j-5", "exp": True})
    yield "revocation, negative cut-off", rev, admin, as_json({"kind": "tenant", "tenant": "acme", "issued_before": -1})
    yield "revocation, no credential", rev, [("Content-Type", "application/json")], as_json({"kind": "kid", "kid": "k"})
    yield "revocation, wrong media type", rev, [*admin[:1], ("Content-Type", "text/json")], \
        as_json({"kind": "kid", "kid": "k"})
    # a body labelled with a content coding: the fast door read a plain one as if it had none
    yield "plain body labelled gzip", rel, [*admin, ("Content-Encoding", "gzip")], as_json(_write("doc:23"))
    yield "gzip body", rel, [*admin, ("Content-Encoding", "gzip")], gzip.compress(as_json(_write("doc:24")))
    yield "revocation labelled br", rev, [*admin, ("Content-Encoding", "br")], as_json({"kind": "kid", "kid": "k"})


@pytest.fixture
def planes(tmp_path: Path) -> Iterator[tuple[PlaneProcess, PlaneProcess, NatsServer, NatsServer]]:
    yield from twin_planes(tmp_path)


def test_the_fast_doors_answer_every_request_exactly_as_the_framework_routes(
        planes: tuple[PlaneProcess, PlaneProcess, NatsServer, NatsServer]) -> None:
    fast, framework, fast_nats, framework_nats = planes
    assert fast.status()["fast_writes"]["on"] and not framework.status()["fast_writes"]["on"]
    with httpx.Client(base_url=fast.base_url, timeout=30) as to_fast, \
            httpx.Client(base_url=framework.base_url, timeout=30) as to_framework:
        statuses = []
        for label, path, headers, body in corpus():
            chunks = list(body) if not isinstance(body, bytes) else None
            got = answer(send(to_fast, path, headers, iter(chunks) if chunks is not None else body))
            want = answer(send(to_framework, path, headers, iter(chunks) if chunks is not None else body))
            assert got == want, label
            statuses.append(got["status"])
        assert {200, 400, 401, 403, 413, 415, 422} <= set(statuses), statuses
        doors = fast.status()["fast_writes"]
        assert doors["answered"] >= 15 and doors["to_framework"] >= 15, doors
        assert framework.status()["fast_writes"] == {"on": False, "answered": 0, "to_framework": 0}

        # NATS gone: both refuse the same way (503, retryable)
        fast_nats.stop()
        framework_nats.stop()
        for plane in (fast, framework):
            plane.wait_until(lambda s: not s["nats"]["connected"])
        body = as_json(_write("doc:after"))
        got = answer(send(to_fast, "/v1/relations", list(ADMIN.items()), body))
        assert got == answer(send(to_framework, "/v1/relations", list(ADMIN.items()), body))
        assert got["status"] == 503
