"""How long a sidecar is held (not ready, every decision denied) while it replays its revocations.

Run: python -m bench.bench_revocations N_REVOCATIONS [--runs 5] [--no-state-dir]

Why: a fed sidecar decides nothing until its revocations consumer has applied the stream up
to the last sequence JetStream reported at start (``authz_sidecar.feed.catchup``); this is
the price of that rule at start-up, per stream size.

Setup: a real nats-server (JetStream, file store) on a free port, the stand-in plane of the
feed tests (``tests.harness.stand_in_plane``) publishing N signed ``jti`` revocations, then
``--runs`` cold starts of an in-process ``Sidecar`` + ``Feed`` (production ``FeedOptions``,
a fresh state dir each run unless ``--no-state-dir``: a deployed sidecar persists what it
applies). Time: from ``Feed.start()`` to the hold's release. Prints each run and the median.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]  # also runnable as bench/bench_revocations.py (bench/run.py does that)

from tenantguard.dev.natsserver import NatsServer  # noqa: E402
from tenantguard.identity.keys import SigningKey  # noqa: E402

from authz_sidecar.config import SidecarConfig  # noqa: E402
from authz_sidecar.feed import Feed, FeedOptions  # noqa: E402
from authz_sidecar.runtime import Sidecar  # noqa: E402
from tests.harness.stand_in_plane import TestPlane  # noqa: E402

FAR = 4_102_444_800  # 2100-01-01: the revocations stay live however long the run takes


async def catch_up_once(url: str, plane_pem: Path, state_dir: Path | None, timeout: float = 600.0) -> float:
    """Seconds from feed start to caught up, for one cold sidecar."""
    config = SidecarConfig(service="billing", nats_url=url, plane_key=plane_pem, state_dir=state_dir,
                           grpc_port=None)
    sidecar = Sidecar.from_config(config)
    feed = Feed.for_sidecar(sidecar, FeedOptions())
    feed.load_persisted()
    start = time.perf_counter()
    await feed.start()
    try:
        while not feed.revocations.catch_up.synced:
            if time.perf_counter() - start > timeout:
                raise RuntimeError(f"not caught up within {timeout:.0f} s")
            await asyncio.sleep(0.001)
        return time.perf_counter() - start
    finally:
        await feed.stop()


async def run(count: int, runs: int, with_state_dir: bool) -> None:
    key = SigningKey.generate("EdDSA")
    with tempfile.TemporaryDirectory(prefix="tg-bench-revocations-") as tmp, NatsServer(Path(tmp) / "nats") as nats:
        root = Path(tmp)
        plane_pem = root / "plane.pem"
        plane_pem.write_bytes(key.public_pem())
        plane = await TestPlane.connect(nats.url, key)
        try:
            await plane.create_topology()
            began = time.perf_counter()
            await plane.revoke_many([{"kind": "jti", "jti": f"bench-{i}", "exp": FAR} for i in range(count)])
            print(f"published {count:,} signed revocations in {time.perf_counter() - began:.2f} s")
        finally:
            await plane.close()
        times = []
        for i in range(runs):
            state_dir = root / f"state-{i}" if with_state_dir else None
            seconds = await catch_up_once(nats.url, plane_pem, state_dir)
            times.append(seconds)
            print(f"run {i + 1}: caught up in {seconds:.2f} s ({count / seconds:,.0f} revocations/s)")
    median = statistics.median(times)
    print(f"revocations={count:,} runs={runs} state_dir={'yes' if with_state_dir else 'no'}: "
          f"median {median:.2f} s (min {min(times):.2f}, max {max(times):.2f}), "
          f"{count / median:,.0f} revocations/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revocations", type=int, help="revocations in the stream (N_REVOCATIONS)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-state-dir", action="store_true", help="run without a state dir (no persistence)")
    args = parser.parse_args()
    asyncio.run(run(args.revocations, args.runs, not args.no_state_dir))


if __name__ == "__main__":
    main()
