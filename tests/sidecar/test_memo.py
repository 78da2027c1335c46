"""The verdict memo in a running sidecar: counted in status and metrics, and off with
``--decision-memo 0`` (the answers stay the same either way)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.harness.sidecar_doors import invoice
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World, token


@pytest.fixture(scope="module")
def unmemoized(world: World) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args("billing", "--decision-memo", "0"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def alice(world: World) -> str:
    return token(world)  # one token, as a client reuses it (a new token is new claims: no memo hit)


def ask(sidecar: SidecarProcess, alice: str, tenant: str) -> dict[str, object]:
    headers = {"authorization": f"Bearer {alice}"}
    return httpx.post(f"{sidecar.base_url}/v1/check", json=invoice(tenant), headers=headers).json()


def memo_status(sidecar: SidecarProcess) -> dict[str, object]:
    status: dict[str, object] = httpx.get(f"{sidecar.base_url}/v1/status").json()["decision_memo"]
    return status


def test_repeated_questions_hit_the_memo_and_are_counted(sidecar: SidecarProcess, alice: str) -> None:
    before = memo_status(sidecar)
    assert before["enabled"] is True and before["size"] == 10_000
    answers = [ask(sidecar, alice, "acme") for _ in range(3)]
    assert all(a["allow"] is True for a in answers)
    assert len({a["decision_id"] for a in answers}) == 3
    after = memo_status(sidecar)
    assert after["hits"] >= before["hits"] + 2  # type: ignore[operator]
    metrics = httpx.get(f"{sidecar.base_url}/metrics").text
    assert "tg_decision_memo_hits_total" in metrics and "tg_decision_memo_misses_total" in metrics


def test_the_memo_can_be_turned_off_and_answers_do_not_change(
        sidecar: SidecarProcess, unmemoized: SidecarProcess, alice: str) -> None:
    assert memo_status(unmemoized) == {"enabled": False, "reason": "disabled (--decision-memo 0)"}
    for tenant in ("acme", "globex", "acme"):
        memoized, plain = ask(sidecar, alice, tenant), ask(unmemoized, alice, tenant)
        assert (memoized["allow"], memoized["reasons"]) == (plain["allow"], plain["reasons"])
