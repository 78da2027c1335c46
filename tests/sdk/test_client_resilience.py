"""Retry, backoff and the circuit breaker of both clients, against a real failing server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tenantguard.client import AsyncAuthzClient, AuthzClient, CircuitBreaker, CircuitOpen, RetryPolicy
from tenantguard.client.base import MAX_RESPONSE_BYTES
from tenantguard.client.errors import UnexpectedResponse
from tenantguard.context import NoTenantContext, use_context
from tenantguard.errors import ConfigError, InvalidInput, TenantGuardError, TokenExpired, TokenMalformed, Unavailable
from tenantguard.testing import TestIssuer

from .flaky import DENY, FlakyServer

pytestmark = pytest.mark.timeout(30)

FAST_RETRY = RetryPolicy(attempts=3, base=0.001, cap=0.002)
SHORT = httpx.Timeout(connect=0.5, read=0.3, write=0.5, pool=0.5)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def server() -> Iterator[FlakyServer]:
    with FlakyServer() as running:
        yield running


def sync_client(url: str, **kw: Any) -> AuthzClient:
    kw.setdefault("retry", FAST_RETRY)
    return AuthzClient(url, timeout=SHORT, **kw)


def async_client(url: str, **kw: Any) -> AsyncAuthzClient:
    kw.setdefault("retry", FAST_RETRY)
    return AsyncAuthzClient(url, timeout=SHORT, **kw)


Q = ("invoices:read", {"type": "invoice", "id": "inv-1"})


def test_retries_5xx_then_answers(server: FlakyServer) -> None:
    server.then((503, {"error": "not_ready", "message": "starting"}), (500, b"oops"))
    with sync_client(server.url) as client:
        result = client.check(*Q, token="t")
    assert result.allow and result.relations_seq == 3
    assert server.count == 3


async def test_retries_transport_errors_then_answers(server: FlakyServer) -> None:
    server.then("drop", "drop")
    async with async_client(server.url) as client:
        assert (await client.check(*Q, token="t")).allow
    assert server.count == 3


@pytest.mark.parametrize("answer", [(200, DENY), (400, {"error": "invalid_request", "message": "bad"}),
                                    (401, {"error": "token_expired", "message": "token has expired"}),
                                    (403, {"error": "caller_not_local", "message": "loopback only"})])
def test_never_retries_a_deny_or_a_4xx(server: FlakyServer, answer: tuple[int, Any]) -> None:
    server.then(answer)
    with sync_client(server.url) as client:
        if answer[0] == 200:
            result = client.check(*Q, token="t")
            assert not result and result.reasons == ("policy_denied",)
        else:
            with pytest.raises((InvalidInput, TokenExpired)):
                client.check(*Q, token="t")
    assert server.count == 1


async def test_4xx_bodies_come_back_as_the_same_typed_errors(server: FlakyServer) -> None:
    server.then((401, {"error": "token_expired", "message": "token has expired"}))
    async with async_client(server.url) as client:
        with pytest.raises(TokenExpired) as caught:
            await client.check(*Q, token="t")
    assert caught.value.http_status == 401


def test_persistent_failure_is_unavailable_and_is_allowed_is_false(server: FlakyServer) -> None:
    server.then("drop", "drop", "drop", (503, {}), (503, {}), (503, {}))
    with sync_client(server.url) as client:
        with pytest.raises(Unavailable):
            client.check(*Q, token="t")
        assert client.is_allowed(*Q, token="t") is False
    assert server.count == 6


OVERSIZED = json.dumps({"allow": True, "reasons": [], "pad": "x" * (MAX_RESPONSE_BYTES + 1)}).encode()


@pytest.mark.parametrize("step", [(200, OVERSIZED), ("chunked", OVERSIZED)], ids=["content-length", "chunked"])
async def test_an_oversized_answer_is_never_an_allow(server: FlakyServer, step: Any) -> None:
    server.then(step, step)
    async with async_client(server.url) as client:
        with pytest.raises(UnexpectedResponse):
            await client.check(*Q, token="t")
    with sync_client(server.url) as blocking:
        assert blocking.is_allowed(*Q, token="t") is False
    assert server.count == 2


def test_a_client_built_before_any_loop_serves_one_loop_after_another(server: FlakyServer) -> None:
    """Services build clients at import time; the session is made per running loop."""
    client = async_client(server.url)

    async def ask() -> bool:
        return (await client.check(*Q, token="t")).allow

    assert asyncio.run(ask()) and asyncio.run(ask())
    asyncio.run(client.aclose())
    assert server.count == 2


async def test_a_hanging_sidecar_times_out_and_fails_closed(server: FlakyServer) -> None:
    server.then(("hang", 1.0))
    async with async_client(server.url, retry=RetryPolicy(attempts=1)) as client:
        assert await client.is_allowed(*Q, token="t") is False


def test_breaker_opens_after_n_transport_failures_and_half_opens_after_cooldown(server: FlakyServer) -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(threshold=3, cooldown=5.0, clock=clock)
    server.then("drop", "drop", "drop")
    with sync_client(server.url, breaker=breaker, retry=RetryPolicy(attempts=1)) as client:
        for _ in range(3):
            with pytest.raises(Unavailable):
                client.check(*Q, token="t")
        assert breaker.state == "open"
        with pytest.raises(CircuitOpen):  # fails fast: the server is not even asked
            client.check(*Q, token="t")
        assert server.count == 3

        clock.now += 5.0  # cool-down over: one trial goes out; it fails, so open again
        server.then("drop")
        with pytest.raises(Unavailable):
            client.check(*Q, token="t")
        assert breaker.state == "open" and server.count == 4
        with pytest.raises(CircuitOpen):
            client.check(*Q, token="t")

        clock.now += 5.0  # next trial succeeds: closed
        assert client.check(*Q, token="t").allow
        assert breaker.state == "closed" and server.count == 5


async def test_breaker_opens_mid_retry_and_stops_retrying(server: FlakyServer) -> None:
    breaker = CircuitBreaker(threshold=2, cooldown=60.0, clock=FakeClock())
    server.then("drop", "drop", "drop", "drop")
    async with async_client(server.url, breaker=breaker, retry=RetryPolicy(attempts=4, base=0.001, cap=0.001)) as c:
        with pytest.raises(CircuitOpen):
            await c.check(*Q, token="t")
    assert server.count == 2


def test_a_4xx_proves_the_sidecar_is_alive(server: FlakyServer) -> None:
    breaker = CircuitBreaker(threshold=2, cooldown=60.0, clock=FakeClock())
    server.then("drop", (400, {"error": "invalid_request", "message": "x"}), "drop")
    with sync_client(server.url, breaker=breaker, retry=RetryPolicy(attempts=1)) as client:
        for _ in range(3):
            with pytest.raises((Unavailable, InvalidInput)):
                client.check(*Q, token="t")
    assert breaker.state == "closed"


def test_connection_refused_is_a_transport_failure(refused_port: int) -> None:
    breaker = CircuitBreaker(threshold=3, cooldown=60.0, clock=FakeClock())
    with sync_client(f"http://127.0.0.1:{refused_port}", breaker=breaker) as client:
        assert client.is_allowed(*Q, token="t") is False
    assert breaker.state == "open"  # three attempts, three failures


def test_request_shape_and_token_from_the_context(server: FlakyServer, issuer: TestIssuer) -> None:
    ctx = issuer.context(audience="orders")
    with sync_client(server.url) as client:
        with pytest.raises(NoTenantContext):
            client.check(*Q)
        with use_context(ctx):
            client.check(*Q, context={"ip": "10.0.0.1"})
    method, path, headers, body = server.requests[-1]
    assert (method, path) == ("POST", "/v1/check")
    assert headers["Authorization"] == f"Bearer {ctx.token}"
    assert json.loads(body) == {"action": {"name": "invoices:read"}, "resource": {"type": "invoice", "id": "inv-1"},
                                "context": {"ip": "10.0.0.1"}}


def test_timeouts_must_be_finite() -> None:
    with pytest.raises(ConfigError):
        AuthzClient("http://127.0.0.1:1", timeout=httpx.Timeout(None))
    with pytest.raises(ConfigError):
        RetryPolicy(attempts=0)


def test_full_jitter_stays_within_the_exponential_cap() -> None:
    policy = RetryPolicy(attempts=5, base=0.1, cap=0.5)
    assert policy.delay(0, rng=lambda lo, hi: hi) == pytest.approx(0.1)
    assert policy.delay(2, rng=lambda lo, hi: hi) == pytest.approx(0.4)
    assert policy.delay(6, rng=lambda lo, hi: hi) == pytest.approx(0.5)
    assert policy.delay(3, rng=lambda lo, hi: lo) == 0.0


# --------------------------------------------------------------------------- answers that are not an allow


def _decide(client_kind: str, url: str, call: str, *args: Any, **kwargs: Any) -> Any:
    """Run one client call on the sync or the async client (same server, same rules)."""
    if client_kind == "sync":
        with sync_client(url, retry=RetryPolicy(attempts=1)) as client:
            return getattr(client, call)(*args, **kwargs)

    async def run() -> Any:
        async with async_client(url, retry=RetryPolicy(attempts=1)) as client:
            return await getattr(client, call)(*args, **kwargs)

    return asyncio.run(run())


ALLOW_BODY = {"allow": True, "reasons": [], "decision_id": "d-1"}


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("step", [
    (301, ALLOW_BODY), (302, ALLOW_BODY), (304, ALLOW_BODY), (307, ALLOW_BODY), (308, ALLOW_BODY),
    (300, ALLOW_BODY),
    (200, {"allow": True}), (200, {"allow": True, "decision_id": ""}), (200, {"allow": True, "decision_id": 7}),
    (200, {"allow": True, "decision_id": "d", "reasons": "ok"}),
    (200, {"allow": "true", "decision_id": "d"}), (200, {"allow": 1, "decision_id": "d"}),
    (200, [ALLOW_BODY]), (200, b"allow"), (200, b""),
])
def test_a_check_answer_that_is_not_the_sidecars_allow_is_never_an_allow(server: FlakyServer, kind: str,
                                                                         step: Any) -> None:
    """A redirect with an allow body, an allow without a decision id, a non-JSON 200: unavailable
    (a 304 with a body may also break the connection: a transport failure, unavailable too)."""
    server.then(step)
    with pytest.raises(Unavailable):
        _decide(kind, server.url, "check", *Q, token="t")
    server.then(step)
    assert _decide(kind, server.url, "is_allowed", *Q, token="t") is False


EVAL_ALLOW = {"decision": True, "context": {"decision_id": "d-1", "reasons": []}}
EVAL_DENY = {"decision": False, "context": {"decision_id": "d-2", "reasons": ["policy_denied"]}}
THREE = [{"resource": {"type": "invoice", "id": f"inv-{n}"}} for n in range(3)]


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize(("semantic", "body"), [
    ("execute_all", {"evaluations": [EVAL_ALLOW]}),            # truncated
    ("execute_all", EVAL_ALLOW),                                # a single decision for three questions
    ("execute_all", {"evaluations": [EVAL_ALLOW] * 4}),        # more answers than questions
    ("execute_all", {"evaluations": []}),
    ("deny_on_first_deny", {"evaluations": [EVAL_ALLOW, EVAL_ALLOW]}),  # stopped on an allow
    ("deny_on_first_deny", EVAL_ALLOW),
    ("permit_on_first_permit", {"evaluations": [EVAL_DENY]}),  # stopped on a deny
])
def test_evaluations_answered_for_fewer_questions_are_refused(server: FlakyServer, kind: str, semantic: str,
                                                              body: Any) -> None:
    server.then((200, body))
    with pytest.raises(UnexpectedResponse):
        _decide(kind, server.url, "check_many", THREE, action="invoices:read", token="t", semantic=semantic)


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize(("semantic", "body", "allows"), [
    ("execute_all", {"evaluations": [EVAL_ALLOW, EVAL_DENY, EVAL_ALLOW]}, [True, False, True]),
    ("deny_on_first_deny", {"evaluations": [EVAL_ALLOW, EVAL_DENY]}, [True, False]),
    ("permit_on_first_permit", {"evaluations": [EVAL_DENY, EVAL_ALLOW]}, [False, True]),
])
def test_evaluations_answered_in_full_or_up_to_the_stop_are_read(server: FlakyServer, kind: str, semantic: str,
                                                                 body: Any, allows: list[bool]) -> None:
    server.then((200, body))
    results = _decide(kind, server.url, "check_many", THREE, action="invoices:read", token="t", semantic=semantic)
    assert [r.allow for r in results] == allows


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("status", [400, 401, 403, 500])
@pytest.mark.parametrize("body", [
    {"error": "invalid_request", "message": "x", "detail": {"message": "shadow"}},
    {"error": "token_expired", "message": "x", "detail": {"message": "shadow"}},
    {"error": "search_limit_exceeded", "message": "x"},           # lacks its required fields
    {"error": "search_limit_exceeded", "message": "x", "detail": {"limit": 1}},
])
def test_an_error_body_the_client_cannot_type_is_still_a_typed_failure(server: FlakyServer, kind: str,
                                                                       status: int, body: Any) -> None:
    """Never a TypeError that escapes `except TenantGuardError` (is_allowed, the FastAPI guard)."""
    server.then((status, body))
    with pytest.raises(TenantGuardError):
        _decide(kind, server.url, "check", *Q, token="t")
    server.then((status, body))
    assert _decide(kind, server.url, "is_allowed", *Q, token="t") is False


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize(("call", "body"), [
    ("check", {"allow": False, "reasons": 5, "decision_id": "d"}),
    ("check", {"allow": True, "reasons": True, "decision_id": "d"}),
    ("check", {"allow": False, "reasons": 1.5}),
    ("check_many", {"evaluations": [{"decision": True, "context": {"reasons": 7, "decision_id": "d"}}]}),
    ("check_many", {"evaluations": [{"decision": False, "context": {"reasons": False}}]}),
    ("propagation_mode", {"mode": ["forward"]}),
    ("propagation_mode", {"mode": {"forward": True}}),
    ("resource_filter", b'{"values": [], "include_null": false, "any_value": false, "attribute": "project", '
                        b'"relations_seq": Infinity}'),
])
def test_odd_shapes_in_an_answer_are_never_an_allow_nor_an_escaping_error(server: FlakyServer, kind: str,
                                                                          call: str, body: Any) -> None:
    """Each answer is a deny or a TenantGuardError; a TypeError would turn into a 500."""
    server.then((200, body))
    args: dict[str, Any] = {
        "check": {"args": Q, "kwargs": {"token": "t"}},
        "check_many": {"args": ([{}],), "kwargs": {"action": "invoices:read", "resource": "invoice", "token": "t"}},
        "propagation_mode": {"args": ("billing",), "kwargs": {}},
        "resource_filter": {"args": ("invoices:read", "invoice", "project"), "kwargs": {"token": "t"}},
    }[call]
    try:
        answer = _decide(kind, server.url, call, *args["args"], **args["kwargs"])
    except TenantGuardError:
        return
    if call == "propagation_mode":
        assert answer == "deny"
    else:
        results = answer if isinstance(answer, list) else [answer]
        assert not any(r.allow for r in results)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_sidecar_that_never_finishes_its_answer_is_unavailable(server: FlakyServer, kind: str) -> None:
    """Each byte arrives inside the read timeout, the answer never ends: the whole-exchange bound
    (the sum of the timeout phases) makes it a failure instead of a request held forever."""
    server.then(("dribble", 0.05))
    with pytest.raises(Unavailable):
        _decide(kind, server.url, "check", *Q, token="t")


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("token", ["abc\xe9def", "abc\u2603", "a\r\nX-Tenant: globex", "abc\x00", "a b", "a,b"])
def test_a_token_no_header_can_carry_is_malformed_before_anything_is_sent(server: FlakyServer, kind: str,
                                                                         token: str) -> None:
    """Not a ValueError escaping as a 500, not an 'unavailable' 503: the caller's token is malformed."""
    with pytest.raises(TokenMalformed):
        _decide(kind, server.url, "check", *Q, token=token)
    assert _decide(kind, server.url, "is_allowed", *Q, token=token) is False
    assert server.count == 0
