"""PlaneClient writes carry an Idempotency-Key and are retried with it while the refusal is retryable."""

from __future__ import annotations

import httpx
import pytest
from tenantguard.errors import TenantGuardError, Unavailable
from tenantguard.plane_client import PlaneClient
from tenantguard.relations import RelationChange, Relationship

CHANGE = [RelationChange("write", Relationship.parse("acme/project:p1#member@user:alice"))]


def _client(answers: list[httpx.Response | Exception], seen: list[httpx.Request], **kw: float) -> PlaneClient:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return PlaneClient("http://plane", token="t", transport=httpx.MockTransport(handle), **kw)


def _refusal(status: int, code: str) -> httpx.Response:
    return httpx.Response(status, json={"error": code, "message": code}, headers={"Retry-After": "1"})


def test_a_write_is_retried_with_one_key_through_refusals_and_lost_answers() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [
        _refusal(503, "unavailable"),  # the stream leader being replaced
        httpx.ReadError("reset"),  # no answer: the outcome is unknown
        _refusal(503, "plane_not_ready"),  # a plane-only code: arrives as PlaneError, 503
        _refusal(409, "sequence_conflict"),
        httpx.Response(200, json={"consistency_token": 7}, headers={"Idempotent-Replayed": "true"}),
    ]
    with _client(answers, seen) as client:
        assert client.write(CHANGE) == 7
        assert client.retries == 4
    keys = {r.headers["Idempotency-Key"] for r in seen}
    assert len(seen) == 5 and len(keys) == 1


def test_a_revocation_is_retried_with_one_key_and_a_given_key_is_used() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [httpx.ConnectError("refused"), httpx.Response(200, json={"seq": 3})]
    with _client(answers, seen) as client:
        assert client.revoke({"kind": "tenant", "tenant": "acme"}, idempotency_key="kill-acme") == 3
    assert [r.headers["Idempotency-Key"] for r in seen] == ["kill-acme", "kill-acme"]


def test_a_refusal_that_is_not_retryable_is_raised_at_once() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [_refusal(422, "idempotency_key_reused")]
    with _client(answers, seen) as client, pytest.raises(TenantGuardError) as caught:
        client.write(CHANGE)
    assert caught.value.code == "idempotency_key_reused" and len(seen) == 1


def test_retries_stop_at_retry_for() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [httpx.ConnectError("refused")] * 50
    with _client(answers, seen, retry_for=0.5) as client, pytest.raises(Unavailable):
        client.write(CHANGE)
    assert 1 < len(seen) < 50
