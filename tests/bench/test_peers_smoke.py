"""Smoke test for bench/peers.py: the delay-and-drop proxy and a 2-hop chain for about a
second, with the accounting checked (every chain counted once, every injected fault is
exactly one failed decision and one failed chain); Cerbos only when installed."""

from __future__ import annotations

import asyncio
import statistics
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import peers  # noqa: E402  (bench/peers.py)


async def _chain_through_proxy() -> tuple[peers.ChainResult, dict]:
    import aiohttp
    from aiohttp import web

    async def decision(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"allow": True})

    app = web.Application()
    app.router.add_post("/v1/check", decision)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = peers.free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    proxy = peers.ProxyProcess(port, peers.Lossy(median_ms=0.5, p99_ms=2, fail=0.05, seed=3), core=None)
    proxied = proxy.port
    session = aiohttp.ClientSession()
    try:
        decide = await peers.http_decider(session, f"http://127.0.0.1:{proxied}/v1/check",
                                          lambda _t: peers.QUESTION, tenantguard=True)
        chain = peers.Chain(2, decide)
        await chain.start()
        try:
            result = await chain.drive("smoke", "t", count=60, rate=60, budget_s=5)
        finally:
            await chain.close()
        stats = proxy.stats()
        result.injected = stats["failed"]
        return result, stats
    finally:
        await session.close()
        proxy.close()
        await runner.cleanup()


def test_proxy_and_two_hop_chain_account_for_every_request() -> None:
    result, proxy = asyncio.run(_chain_through_proxy())  # the proxy runs in a process of its own
    assert result.sent == 60
    assert result.ok + result.failed + result.denied == result.sent
    assert result.denied == 0
    assert result.failed == result.decision_errors == result.injected  # no retries: one fault, one failed chain
    assert result.injected > 0  # 5 % of ~120 requests: the fault path ran
    # both hops asked, except past a cut
    assert proxy["forwarded"] + proxy["failed"] >= 2 * result.sent - result.failed
    assert len(result.latencies_ms) == result.ok
    assert statistics.median(result.latencies_ms) >= 2 * 2 * 0.5 * 0.5  # two round trips through the delay


def test_lossy_delay_distribution_matches_its_statement() -> None:
    lossy = peers.Lossy(median_ms=1, p99_ms=5, seed=1)
    samples = sorted(lossy.delay() * 1000 for _ in range(20_000))
    assert 0.9 < statistics.median(samples) < 1.1
    assert 4.3 < samples[int(len(samples) * 0.99)] < 5.8


@pytest.mark.skipif(peers.missing_cerbos() is not None, reason=str(peers.missing_cerbos()))
def test_cerbos_policy_answers_like_the_bundle() -> None:
    server = peers.start_cerbos(core=None)
    try:
        peers.cerbos_allowed(server.info["http"], server.info["grpc"])  # exits on a wrong answer
    finally:
        server.stop()
