"""PlaneClient writes carry an Idempotency-Key and are retried with it while the refusal is retryable."""

from __future__ import annotations

import httpx
import pytest
from tenantguard.client.plane import PlaneClient
from tenantguard.errors import TenantGuardError, Unavailable
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


def test_a_write_moves_to_the_next_replica_of_the_list_with_its_key() -> None:
    """Losing the replica a client talks to costs a retry at another, not the write."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.host == "plane-0":
            raise httpx.ConnectError("refused")  # that replica is gone
        return httpx.Response(200, json={"consistency_token": 9})

    with PlaneClient("http://plane-0:8080, http://plane-1:8080/", token="t",
                     transport=httpx.MockTransport(handle)) as client:
        assert client.base_urls == ("http://plane-0:8080", "http://plane-1:8080")
        assert client.write(CHANGE) == 9
        assert client.base_url == "http://plane-1:8080"  # and it stays there
    assert [r.url.host for r in seen] == ["plane-0", "plane-1"]
    assert len({r.headers["Idempotency-Key"] for r in seen}) == 1
    assert str(seen[1].url) == "http://plane-1:8080/v1/relations"


def test_an_empty_plane_list_is_a_config_error() -> None:
    with pytest.raises(TenantGuardError) as caught:
        PlaneClient(" , ", token="t")
    assert caught.value.code == "config_invalid"
