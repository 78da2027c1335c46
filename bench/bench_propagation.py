"""Write-to-decision propagation through the NATS feed, and bootstrap of a big snapshot.

Run: python bench/bench_propagation.py [--iterations N] [--fleet 10] [--count 1000000] [--quick]

1. Propagation: a publisher signs one relations batch granting ``alice`` a fresh project
   and publishes it to TG_RELATIONS; the clock stops when a sidecar's decision for that
   project flips from deny to allow. Measured to 1 sidecar and to a fleet of 10.
   Sidecars are in-process ``Sidecar`` objects in one event loop, each with its own
   ``Feed`` and its own NATS connection (so 10 sidecars share one CPU core here: the
   fleet figure is an upper bound for 10 separate processes). Each sidecar waits
   event-driven (``wait_for_seq``, the ``at_least`` path) and then decides; no polling.
2. Bootstrap: a child process starts an empty sidecar whose feed finds a signed manifest
   for a 1,000,000-tuple snapshot (bench_relations' data set) and loads it from the
   ``tg-snapshots`` object store; reported: time to serve at that seq and process RSS.
   A second child restarts from the persisted local snapshot with NATS down (cold start).

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from bench_relations import all_tuples, rss_mb  # noqa: E402
from tenantguard.dev.natsserver import NatsServer  # noqa: E402
from tenantguard.feed import topology  # noqa: E402
from tenantguard.feed.events import sign_snapshot_manifest  # noqa: E402
from tenantguard.identity.keys import SigningKey  # noqa: E402
from tenantguard.relations import RelationIndex, snapshot_bytes  # noqa: E402

from authz_sidecar.config import SidecarConfig  # noqa: E402
from authz_sidecar.feed import Feed, FeedOptions  # noqa: E402
from authz_sidecar.runtime import Sidecar  # noqa: E402
from tests.harness.fleet import make_bundle, question  # noqa: E402  (the same tiny policy as the tests)
from tests.harness.stand_in_plane import TestPlane  # noqa: E402

OPTIONS = FeedOptions(persist_interval=3600.0)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


async def start_sidecars(url: str, pem: Path, root: Path, n: int) -> list[tuple[Sidecar, Feed]]:
    nodes = []
    for i in range(n):
        config = SidecarConfig(
            service="billing",
            nats_url=url,
            plane_key=pem,
            bundle_keys=(pem,),
            state_dir=root / f"s{i}",
            grpc_port=None,
            max_wait_ms=10_000,
        )
        sidecar = Sidecar.from_config(config)
        feed = Feed.for_sidecar(sidecar, OPTIONS)
        await feed.start()
        nodes.append((sidecar, feed))
    return nodes


async def flip_time(sidecar: Sidecar, seq: int, project: str, t0: float) -> float:
    if not await sidecar.wait_for_seq(seq):
        raise RuntimeError(f"seq {seq} did not arrive")
    if not sidecar.decide(question("alice", project), None, door="bench").allow:
        raise RuntimeError("decision did not flip")
    return time.perf_counter() - t0


async def propagation(
    plane: TestPlane, nodes: list[tuple[Sidecar, Feed]], iterations: int, tag: str
) -> tuple[list[float], list[float]]:
    """Per-sidecar and whole-fleet (slowest sidecar) latencies, in seconds."""
    per_sidecar, whole = [], []
    for i in range(iterations + 10):
        project = f"{tag}{i}"
        assert not nodes[0][0].decide(question("alice", project), None, door="bench").allow
        t0 = time.perf_counter()
        seq = await plane.write(f"acme/project:{project}#member@user:alice")
        times = await asyncio.gather(*(flip_time(s, seq, project, t0) for s, _ in nodes))
        if i >= 10:  # warm-up excluded
            per_sidecar.extend(times)
            whole.append(max(times))
    return per_sidecar, whole


async def run_propagation(iterations: int, fleet: int, root: Path) -> list[tuple[str, str]]:
    key = SigningKey.generate()
    pem = root / "plane.pem"
    pem.write_bytes(key.public_pem())
    rows = []
    with NatsServer(root / "nats") as server:
        plane = await TestPlane.connect(server.url, key)
        await plane.create_topology()
        await plane.bundle(make_bundle(key, 1), "1")
        for n in (1, fleet):
            nodes = await start_sidecars(server.url, pem, root / f"fleet{n}", n)
            deadline = time.monotonic() + 20
            while not all(
                s.feed_state == "live"
                and s.bundle_revision == "1"
                and s.relations.applied_seq == plane.index.applied_seq
                for s, _ in nodes
            ):
                if time.monotonic() > deadline:
                    raise RuntimeError("sidecars did not become live")
                await asyncio.sleep(0.01)
            per, whole = await propagation(plane, nodes, iterations, f"n{n}x")
            rows.append(
                (
                    f"propagation to {n} sidecar(s), per sidecar: median / p99",
                    f"{fmt_ms(statistics.median(per))} / {fmt_ms(percentile(per, 0.99))}",
                )
            )
            if n > 1:
                rows.append(
                    (
                        f"propagation to all {n} sidecars (slowest): median / p99",
                        f"{fmt_ms(statistics.median(whole))} / {fmt_ms(percentile(whole, 0.99))}",
                    )
                )
            for _, feed in nodes:
                await feed.stop()
        await plane.close()
    return rows


# --------------------------------------------------------------------------- bootstrap


async def publish_snapshot(url: str, key: SigningKey, count: int) -> tuple[int, int, float]:
    t0 = time.perf_counter()
    index = RelationIndex.from_trusted(1, all_tuples(count))
    data = snapshot_bytes(index)
    build = time.perf_counter() - t0
    del index
    gc.collect()
    plane = await TestPlane.connect(url, key)
    await plane.create_topology()
    await plane.bundle(make_bundle(key, 1), "1")
    store = await plane.js.object_store(topology.BUCKET_SNAPSHOTS)
    await store.put(topology.snapshot_object(1), data)
    await plane.js.publish(topology.snapshot_subject("c0"), sign_snapshot_manifest(key, data))
    await plane.close()
    return len(data), count, build


async def child(url: str, pem: Path, state_dir: Path, expect_seq: int, mode: str) -> dict[str, float]:
    """Runs in a fresh process: start a sidecar, time until it serves ``expect_seq``."""
    gc.collect()
    config = SidecarConfig(
        service="billing", nats_url=url, plane_key=pem, bundle_keys=(pem,), state_dir=state_dir, grpc_port=None
    )
    sidecar = Sidecar.from_config(config)
    feed = Feed.for_sidecar(sidecar, FeedOptions(persist_interval=3600.0, fetch_timeout=300.0))
    base = rss_mb()
    t0 = time.perf_counter()
    if mode == "cold":
        feed.load_persisted()
    await feed.start()
    while sidecar.relations.applied_seq < expect_seq:
        await asyncio.sleep(0.005)
    elapsed = time.perf_counter() - t0
    gc.collect()
    result = {"seconds": elapsed, "rss_mb": rss_mb(), "base_rss_mb": base, "count": sidecar.relations.count()}
    t1 = time.perf_counter()
    await feed.stop()  # persists the 1M-tuple snapshot for the cold-start run
    result["persist_seconds"] = time.perf_counter() - t1
    return result


def run_child(url: str, pem: Path, state_dir: Path, mode: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, url, str(pem), str(state_dir)],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


async def run_bootstrap(count: int, root: Path) -> list[tuple[str, str]]:
    key = SigningKey.generate()
    pem = root / "plane-boot.pem"
    pem.write_bytes(key.public_pem())
    with NatsServer(root / "nats-boot", max_store=4 * 1024**3) as server:
        size, count, build = await publish_snapshot(server.url, key, count)
        boot = run_child(server.url, pem, root / "boot-state", "nats")
    cold = run_child("nats://127.0.0.1:1", pem, root / "boot-state", "cold")  # NATS down
    n = f"{count:,}"
    return [
        (f"snapshot object for {n} tuples (gzip)", f"{size / 1e6:.1f} MB (built in {build:.1f} s)"),
        (f"bootstrap from NATS snapshot, {n} tuples: time to serve", f"{boot['seconds']:.2f} s"),
        (
            "  process RSS after bootstrap (sidecar before: base)",
            f"{boot['rss_mb']:.0f} MB (base {boot['base_rss_mb']:.0f} MB)",
        ),
        ("  persisting the local snapshot on shutdown", f"{boot['persist_seconds']:.2f} s"),
        (f"cold start from the persisted snapshot, NATS down: {n} tuples", f"{cold['seconds']:.2f} s"),
        ("  process RSS after cold start", f"{cold['rss_mb']:.0f} MB"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--fleet", type=int, default=10)
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="50 iterations, 100,000 tuples")
    parser.add_argument("--child", nargs=4, metavar=("MODE", "URL", "PEM", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, url, pem, state = args.child
        print(json.dumps(asyncio.run(child(url, Path(pem), Path(state), 1, mode))))
        return
    iterations, count = (50, 100_000) if args.quick else (args.iterations, args.count)
    with tempfile.TemporaryDirectory(prefix="tg-bench-prop-") as tmp:
        rows = asyncio.run(run_propagation(iterations, args.fleet, Path(tmp)))
        rows += asyncio.run(run_bootstrap(count, Path(tmp)))
    print(
        f"\n### Propagation and bootstrap ({platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, {iterations} writes, in-process sidecars with one NATS connection each)\n"
    )
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
