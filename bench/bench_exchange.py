"""RFC 8693 token exchange latency: in process and through ``POST /oauth2/token``.

Run: python bench/bench_exchange.py [--iterations N]

Measures, for the orders sidecar exchanging a user token towards billing (the example
bundle's policy, EdDSA keys):
- in-process ``TokenExchanger.exchange``: subject verify + policy + mint, with the subject
  token's verification cached (the same token exchanged again) and uncached (a fresh
  token every call, so the signature is checked each time);
- HTTP: one keep-alive client against a real sidecar process (the CLI), sequential
  requests, so the figure is one request's full round trip on loopback.
Prints a markdown table of median and p99 in microseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tenantguard.exchange import GRANT_TYPE_TOKEN_EXCHANGE, TOKEN_TYPE_JWT, ExchangeRequest  # noqa: E402
from tenantguard.identity.tokens import mint  # noqa: E402

from authz_sidecar.config import SidecarConfig  # noqa: E402
from authz_sidecar.runtime import Sidecar  # noqa: E402
from tests.harness.sidecar_process import start_sidecar  # noqa: E402
from tests.harness.sidecar_world import World  # noqa: E402  (the world the integration tests use)


def percentiles(samples: list[int]) -> tuple[float, float]:
    samples.sort()
    return statistics.median(samples) / 1000, samples[max(0, int(len(samples) * 0.99) - 1)] / 1000


def user_token(world: World) -> str:
    return mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders", roles=["editor"],
                scope="invoices:read orders:*")


async def measure_async(fn: Callable[[int], Awaitable[object]], iterations: int, warmup: int = 200) -> list[int]:
    for i in range(warmup):
        await fn(i)
    samples = []
    for i in range(iterations):
        start = time.perf_counter_ns()
        await fn(i)
        samples.append(time.perf_counter_ns() - start)
    return samples


def in_process(world: World, iterations: int) -> list[tuple[str, float, float]]:
    config = SidecarConfig(service="orders", bundle_file=world.bundle_file, bundle_keys=(world.plane_pub,),
                           trust_file=world.trust_file, relations_file=world.relations_file)
    sidecar = Sidecar.from_config(config)
    same = ExchangeRequest(user_token(world), TOKEN_TYPE_JWT, "billing", ("invoices:read",))
    fresh = [ExchangeRequest(user_token(world), TOKEN_TYPE_JWT, "billing", ("invoices:read",))
             for _ in range(iterations + 200)]

    async def run() -> list[tuple[str, float, float]]:
        cached = await measure_async(lambda _i: sidecar.exchange.exchange(same), iterations)
        uncached = await measure_async(lambda i: sidecar.exchange.exchange(fresh[i % len(fresh)]), iterations,
                                       warmup=0)
        return [("in-process, subject verify cached", *percentiles(cached)),
                ("in-process, subject verify uncached", *percentiles(uncached))]

    return asyncio.run(run())


def over_http(world: World, iterations: int) -> list[tuple[str, float, float]]:
    proc = start_sidecar(world.args("orders"))
    try:
        url = f"{proc.base_url}/oauth2/token"
        form = {"grant_type": GRANT_TYPE_TOKEN_EXCHANGE, "subject_token": user_token(world),
                "subject_token_type": TOKEN_TYPE_JWT, "audience": "billing", "scope": "invoices:read"}
        with httpx.Client() as client:
            for _ in range(200):
                assert client.post(url, data=form).status_code == 200
            samples = []
            for _ in range(iterations):
                start = time.perf_counter_ns()
                response = client.post(url, data=form)
                samples.append(time.perf_counter_ns() - start)
                assert response.status_code == 200
    finally:
        proc.stop()
    return [("HTTP POST /oauth2/token (keep-alive, sequential)", *percentiles(samples))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp))
        rows = in_process(world, args.iterations) + over_http(world, args.iterations)
    print(f"\nToken exchange, {args.iterations} iterations, Python {platform.python_version()}, "
          f"{platform.machine()}\n")
    print("| path | median (µs) | p99 (µs) |")
    print("|---|---:|---:|")
    for name, median, p99 in rows:
        print(f"| {name} | {median:.0f} | {p99:.0f} |")


if __name__ == "__main__":
    main()
