"""Credential checks under a flood: scrypt per unknown value is the price of keeping only
hashes, so the queue of checks is bounded (refused at once past it, 503 retryable) and values
verified while others waited are let through without another scrypt."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tenantguard.errors import Unavailable

from policy_plane.secrets import _CHECKS_IN_FLIGHT, MAX_QUEUED_CHECKS, HashedSecret, SecretChecker

SECRET = "join-secret-" + "d4" * 16


def test_a_flood_of_wrong_values_is_refused_past_the_bound_and_the_secret_passes_after() -> None:
    checker = SecretChecker(HashedSecret.of(SECRET))

    async def flood() -> tuple[list[Any], bool]:
        results = await asyncio.gather(*(checker.check(f"wrong-{i:040d}") for i in range(MAX_QUEUED_CHECKS + 40)),
                                       return_exceptions=True)
        return results, await checker.check(SECRET)

    results, after = asyncio.run(flood())
    refused = [r for r in results if isinstance(r, Unavailable)]
    assert len(refused) == 40 and refused[0].retryable and refused[0].http_status == 503
    assert [r for r in results if not isinstance(r, Unavailable)] == [False] * MAX_QUEUED_CHECKS
    assert after is True  # the queue drained; nothing stays refused


def test_one_secret_presented_by_many_at_once_costs_scrypt_only_for_those_already_running(
        monkeypatch: pytest.MonkeyPatch) -> None:
    checker = SecretChecker(HashedSecret.of(SECRET))
    runs: list[str] = []
    real = HashedSecret.matches

    def counted(self: HashedSecret, presented: str) -> bool:  # the real scrypt, counted
        runs.append(presented)
        return real(self, presented)

    monkeypatch.setattr(HashedSecret, "matches", counted)

    async def fleet() -> list[bool]:
        return await asyncio.gather(*(checker.check(SECRET) for _ in range(50)))

    assert asyncio.run(fleet()) == [True] * 50
    assert len(runs) == _CHECKS_IN_FLIGHT  # the ones that started before the first success; the rest waited
