"""Scoped feeds: what a sidecar bootstraps, holds and receives, by scope (one command, prints a table).

Run: python bench/bench_scoped.py [--tuples 1000000] [--tenants 10000] [--cells 100] [--seconds 5]
                                  [--rate 200] [--quick]

Setup: a real nats-server (JetStream, file store) and the plane's own topology
(``policy_plane.publisher.stream_configs``). A synthetic population of ``--tuples`` tuples
over ``--tenants`` tenants in ``--cells`` cells, four object types per tenant
(``project``/``document`` 40% each, ``group`` 15%, ``billing_account`` 5%), is published
the way the plane publishes it: per cell one signed snapshot (``relations/<cell>/<seq>``,
manifest on ``tg.snapshots.relations.<cell>``) with the test plane of ``tests/feed``
(the real plane's write API would take an hour to load a million tuples here; the bytes on
NATS are the same).

Each sidecar configuration runs in a child process of its own (a real ``Sidecar`` and
``Feed``, one NATS connection) and reports: tuples held, RSS growth from an empty sidecar
to bootstrapped (after a full GC), bootstrap time and bytes received from NATS, then the
events and bytes it received per second while the parent publishes a synthetic write
stream (``--rate`` batches of 10 changes per second, to random tenants over all cells, for
``--seconds``), and decision latency for an in-scope question (p50/p99 of 2,000 ``decide``
calls). Nothing is asserted. The arithmetic for 100,000,000 tuples is printed after the table.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from tenantguard.dev.natsserver import NatsServer  # noqa: E402
from tenantguard.feed import topology  # noqa: E402
from tenantguard.identity.keys import SigningKey  # noqa: E402
from tenantguard.relations import RelationIndex  # noqa: E402

TYPES = (("project", "member", 0.40), ("document", "viewer", 0.40), ("group", "member", 0.15),
         ("billing_account", "admin", 0.05))

# name, scope_cells (count of cells, None: all), scope_types
CONFIGS: list[tuple[str, int | None, tuple[str, ...]]] = [
    ("unscoped (all cells, all types)", None, ()),
    ("10 cells", 10, ()),
    ("1 cell", 1, ()),
    ("1 cell, billing types", 1, ("billing_account", "group")),
]


def per_type_ids(n: int) -> int:
    """Distinct objects per type in a tenant: about one object per 5 tuples."""
    return max(1, n // 5)


def pick_type(r: float) -> tuple[str, str]:
    """The (object type, relation) whose cumulative share first exceeds ``r``."""
    acc = 0.0
    for otype, rel, share in TYPES:
        acc += share
        if r < acc:
            return otype, rel
    return TYPES[-1][0], TYPES[-1][1]


def tenant_tuples(tenant: str, n: int, rng: random.Random) -> list[tuple[str, str, str, str]]:
    out = []
    ids = per_type_ids(n)
    for _ in range(n):
        otype, rel = pick_type(rng.random())
        out.append((tenant, f"{otype}:{otype[0]}{rng.randrange(ids)}", rel, f"user:u{rng.randrange(10**5)}"))
    return out


# ------------------------------------------------------------------------------------- child


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def child(args: dict[str, Any]) -> None:
    from authz_sidecar.config import SidecarConfig
    from authz_sidecar.feed import Feed, FeedOptions
    from authz_sidecar.runtime import Sidecar

    config = SidecarConfig(service="billing", nats_url=args["url"], plane_key=Path(args["plane_pem"]),
                           bundle_keys=(Path(args["bundle_pem"]),), grpc_port=None, cells=args["cells"],
                           scope_cells=tuple(args["scope_cells"]), scope_types=tuple(args["scope_types"]),
                           decision_memo_size=0)
    gc.collect()
    base = rss_bytes()
    sidecar = Sidecar.from_config(config)
    feed = Feed.for_sidecar(sidecar, FeedOptions(persist_interval=3600.0, fetch_timeout=120.0,
                                                 pending_bytes_limit=256 * 1024 * 1024))
    targets: dict[str, int] = args["targets"]
    started = time.perf_counter()
    await feed.start()
    while not (sidecar.core.ready and all(sidecar.relations.index(c).applied_seq >= targets[c]
                                          for c in sidecar.relations.indexes)):
        await asyncio.sleep(0.01)
    boot = time.perf_counter() - started
    nc = feed._nc
    assert nc is not None
    boot_bytes = nc.stats["in_bytes"]
    gc.collect()
    gc.freeze()  # as a serving sidecar does after a wholesale load (settle_heap)
    held = rss_bytes() - base
    boot_events = _applied(sidecar)
    print(json.dumps({"phase": "ready"}), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # the stream ran
    stream = json.loads(sys.stdin.readline())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(
            sidecar.relations.index(c).applied_seq >= stream["targets"][c] for c in sidecar.relations.indexes):
        await asyncio.sleep(0.01)
    events = _applied(sidecar) - boot_events
    stream_bytes = nc.stats["in_bytes"] - boot_bytes
    tenant = args["probe_tenant"]
    question = {"subject": {"type": "user", "id": "probe", "properties": {"tenant_id": tenant}},
                "action": {"name": "read"}, "resource": {"type": args["probe_type"], "id": "probe"}}
    times = []
    for _ in range(2000):
        t = time.perf_counter_ns()
        decision = sidecar.decide(question, None, door="bench")
        times.append(time.perf_counter_ns() - t)
    times.sort()
    await feed.stop()
    print(json.dumps({"phase": "done", "tuples": sidecar.relations.count(), "rss": held, "boot": boot,
                      "boot_bytes": boot_bytes, "events": events, "stream_bytes": stream_bytes,
                      "p50_us": times[len(times) // 2] / 1000, "p99_us": times[int(len(times) * 0.99)] / 1000,
                      "reasons": list(decision.reasons), "allow": decision.allow}), flush=True)


def _applied(sidecar: Any) -> float:
    return sum(sidecar.metrics.registry.get_sample_value("tg_events_applied_total", {"kind": k}) or 0
               for k in ["relations", *(f"relations.{c}" for c in sidecar.relations.indexes)])


# ------------------------------------------------------------------------------------- parent


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


async def parent(opts: argparse.Namespace) -> None:
    from policy_plane.publisher import stream_configs
    from tests.harness.fleet import make_bundle
    from tests.harness.stand_in_plane import TestPlane

    rng = random.Random(7)
    plane_key, bundle_key = SigningKey.generate("EdDSA"), SigningKey.generate("EdDSA")
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp) / "nats") as nats_server:
        plane_pem, bundle_pem = Path(tmp) / "plane.pem", Path(tmp) / "bundle.pem"
        plane_pem.write_bytes(plane_key.public_pem())
        bundle_pem.write_bytes(bundle_key.public_pem())
        plane = await TestPlane.connect(nats_server.url, plane_key, cells=opts.cells)
        for config in stream_configs(relations_max_age=3600, replicas=1):
            await plane.js.add_stream(config)
        from nats.js.api import StorageType
        await plane.js.create_object_store(topology.BUCKET_SNAPSHOTS, storage=StorageType.FILE)
        await plane.js.create_object_store(topology.BUCKET_BUNDLES, storage=StorageType.FILE)
        await plane.bundle(make_bundle(bundle_key, 1), "1")

        # population: per cell, one index built in one pass and snapshotted (seq 1)
        per_tenant = opts.tuples // opts.tenants
        by_cell: dict[str, list[str]] = {}
        for t in range(opts.tenants):
            name = f"tenant{t}"
            by_cell.setdefault(topology.cell_of(name, opts.cells), []).append(name)
        started = time.perf_counter()
        snap_bytes = 0
        for cell in topology.cell_names(opts.cells):
            tuples = [tp for name in by_cell.get(cell, []) for tp in tenant_tuples(name, per_tenant, rng)]
            if cell == "c0":  # the probe every sidecar is asked about (in scope for all of them)
                tuples.append((by_cell["c0"][0], "project:probe", "member", "user:probe"))
            plane.indexes[cell] = RelationIndex.from_trusted(1, tuples)
            snap_bytes += len(await _snapshot(plane, cell))
            plane.indexes[cell] = RelationIndex.from_trusted(1, ())  # keep only the seq (memory)
        seqs = {cell: 1 for cell in topology.cell_names(opts.cells)}
        print(f"population: {opts.tuples:,} tuples, {opts.tenants:,} tenants, {opts.cells} cells; snapshots "
              f"{fmt_bytes(snap_bytes)} in {time.perf_counter() - started:.1f} s", file=sys.stderr)

        rows = []
        for name, ncells, types in CONFIGS:
            scope_cells = [] if ncells is None else list(topology.cell_names(opts.cells)[:ncells])
            probe_tenant = by_cell["c0"][0]
            args = {"url": nats_server.url, "plane_pem": str(plane_pem), "bundle_pem": str(bundle_pem),
                    "cells": opts.cells, "scope_cells": scope_cells, "scope_types": list(types),
                    "targets": dict(seqs), "probe_tenant": probe_tenant,
                    "probe_type": "billing_account" if types else "project"}
            proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(args)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True, cwd=REPO)
            assert proc.stdin is not None and proc.stdout is not None
            json.loads(proc.stdout.readline())  # ready
            batches, published = await _write_stream(plane, by_cell, opts, rng)
            seqs = {c: plane.indexes[c].applied_seq for c in seqs}
            proc.stdin.write("go\n" + json.dumps({"targets": seqs}) + "\n")
            proc.stdin.flush()
            result = json.loads(proc.stdout.readline())
            proc.wait(timeout=60)
            result |= {"name": name, "batches": batches, "published": published}
            rows.append(result)
        await plane.close()

    print(f"\nbench_scoped: {opts.tuples:,} tuples / {opts.tenants:,} tenants / {opts.cells} cells; write stream "
          f"{opts.rate} batches/s x 10 changes for {opts.seconds:g} s; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores\n")
    print("| sidecar | tuples held | index memory (RSS delta) | bootstrap | bootstrap bytes | events/s received "
          "| bytes/s received | decide p50 / p99 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['name']} | {r['tuples']:,} | {fmt_bytes(r['rss'])} | {r['boot']:.2f} s "
              f"| {fmt_bytes(r['boot_bytes'])} | {r['events'] / opts.seconds:.1f} "
              f"| {fmt_bytes(r['stream_bytes'] / opts.seconds)}/s | {r['p50_us']:.1f} / {r['p99_us']:.1f} µs "
              f"({'allow' if r['allow'] else ','.join(r['reasons'])}) |")
    full = rows[0]
    print(f"\n(published: {full['batches'] / opts.seconds:.0f} batches/s, "
          f"{fmt_bytes(full['published'] / opts.seconds)}/s of signed events in total; the probe question is in "
          "every sidecar's scope; the billing sidecar asks about a billing_account the policy does not grant)")
    _extrapolate(rows, opts)


async def _snapshot(plane: Any, cell: str) -> bytes:
    from tenantguard.feed.events import sign_snapshot_manifest
    from tenantguard.relations import snapshot_bytes

    index = plane.indexes[cell]
    data = snapshot_bytes(index)
    store = await plane.js.object_store(topology.BUCKET_SNAPSHOTS)
    await store.put(topology.snapshot_object(index.applied_seq, cell), data)
    await plane.js.publish(topology.snapshot_subject(cell), sign_snapshot_manifest(plane.key, data, cell=cell))
    return data


async def _write_stream(plane: Any, by_cell: dict[str, list[str]], opts: argparse.Namespace,
                        rng: random.Random) -> tuple[int, int]:
    """``rate`` batches/s of 10 changes, each batch for one random tenant (so one cell)."""
    from tenantguard.feed.events import sign_batch
    from tenantguard.relations import ChangeBatch, RelationChange, Relationship

    tenants = [t for names in by_cell.values() for t in names]
    batches = published = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < opts.seconds:
        if batches > elapsed * opts.rate:
            await asyncio.sleep(0.002)
            continue
        tenant = rng.choice(tenants)
        cell = topology.cell_of(tenant, opts.cells)
        changes = tuple(RelationChange("write", Relationship(tenant, f"{otype}:n{rng.randrange(10**6)}", rel,
                                                             f"user:u{rng.randrange(1000)}"))
                        for otype, rel, _ in (rng.choice(TYPES) for _ in range(10)))
        index = plane.indexes[cell]
        batch = ChangeBatch(index.applied_seq + 1, changes)
        data = sign_batch(plane.key, batch, cell=cell)
        await plane.js.publish(topology.relations_subject(cell), data, stream=topology.STREAM_RELATIONS)
        index.apply(batch)
        batches, published = batches + 1, published + len(data)
    return batches, published


def _extrapolate(rows: list[dict[str, Any]], opts: argparse.Namespace) -> None:
    """The measured per-tuple and per-event costs, scaled to 100M tuples / 100k tenants / 100 cells."""
    full = rows[0]
    per_tuple_mem = full["rss"] / max(1, full["tuples"])
    per_tuple_boot = full["boot_bytes"] / max(1, full["tuples"])
    per_event = full["stream_bytes"] / max(1, full["events"])
    big, cells, rate = 100_000_000, 100, 1000
    print(f"\nExtrapolated to {big:,} tuples / 100,000 tenants / {cells} cells, {rate} batches/s system-wide "
          f"(measured: {per_tuple_mem:.0f} B of index per tuple, {per_tuple_boot:.0f} B of snapshot per tuple, "
          f"{per_event:.0f} B per 10-change batch):\n")
    print("| sidecar | holds | index memory | bootstrap bytes | batches/s received | bytes/s received |")
    print("|---|---:|---:|---:|---:|---:|")
    billing_share = TYPES[2][2] + TYPES[3][2]
    for name, share_cells, share_types in (("unscoped", 1.0, 1.0), ("10 cells", 0.1, 1.0), ("1 cell", 0.01, 1.0),
                                            ("1 cell, billing types", 0.01, billing_share)):
        held = big * share_cells * share_types
        print(f"| {name} | {held:,.0f} tuples | {fmt_bytes(held * per_tuple_mem)} "
              f"| {fmt_bytes(big * share_cells * per_tuple_boot)} | {rate * share_cells:,.0f} "
              f"| {fmt_bytes(rate * share_cells * per_event)}/s |")
    print(f"\nNATS carries each batch once per subscribed sidecar of its cell: a fleet of 200 pods each scoped "
          f"to 1 cell receives {fmt_bytes(rate * 0.01 * per_event * 200)}/s in total, unscoped "
          f"{fmt_bytes(rate * per_event * 200)}/s; stored: {fmt_bytes(big * per_tuple_boot)} of snapshots "
          f"(x3 with R3).")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        asyncio.run(child(json.loads(sys.argv[2])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=1_000_000)
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="100,000 tuples, 1,000 tenants, 2 s")
    opts = parser.parse_args()
    if opts.quick:
        opts.tuples, opts.tenants, opts.seconds = 100_000, 1_000, 2.0
    asyncio.run(parent(opts))


if __name__ == "__main__":
    main()
