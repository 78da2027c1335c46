"""What the security hardening costs, each next to the thing it guards, in one run.

Run: python bench/bench_hardening.py [--iterations N]

- rollback protection on the plane's write path: a JetStream publish, and the compaction
  (subject purge) that follows each trust, bundle or snapshot commit (relations writes do
  not compact), on a real local nats-server;
- freeze protection on the sidecar: verifying a signed heartbeat, and that plus the
  expiry/shape check of :class:`tenantguard.feed.freshness.Heartbeat`;
- strict JSON at the doors: a typical ``/v1/check`` body through ``json.loads`` and through
  :func:`tenantguard.util.jsonlimits.loads` (depth bound, unique keys, safe numbers).
Medians and p99s in microseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time

import nats
from nats.js.api import DiscardPolicy, StreamConfig
from stats import measure  # bench/stats.py, beside this script
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed.events import TRUST_UPDATE, sign_event, verify_event
from tenantguard.feed.freshness import Heartbeat
from tenantguard.feed.topology import PLANE_HEARTBEAT
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.util import jsonlimits

CHECK_BODY = json.dumps({
    "subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme"}},
    "action": {"name": "invoices:read"},
    "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}},
    "context": {"ip": "10.0.0.1"},
}).encode()


def _quantiles(samples_s: list[float]) -> tuple[float, float]:
    ordered = sorted(samples_s)
    return statistics.median(ordered) * 1e6, ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1e6


async def _write_path(iterations: int) -> list[tuple[str, float, float]]:
    key = SigningKey.generate()
    with NatsServer(tempfile.mkdtemp(prefix="tg-bench-")) as server:
        nc = await nats.connect(server.url)
        js = nc.jetstream(timeout=5)
        await js.add_stream(StreamConfig(name="BENCH_TRUST", subjects=["bench.trust"], discard=DiscardPolicy.NEW,
                                         max_msgs_per_subject=-1, max_msgs=100_000))
        publish, purge = [], []
        for seq in range(1, iterations + 1):
            data = sign_event(key, TRUST_UPDATE, {"jwks": {"keys": []}}, seq)
            start = time.perf_counter()
            ack = await js.publish("bench.trust", data)
            publish.append(time.perf_counter() - start)
            start = time.perf_counter()
            await js.purge_stream("BENCH_TRUST", seq=ack.seq, subject="bench.trust")
            purge.append(time.perf_counter() - start)
        await nc.close()
    return [("JetStream publish of a trust event", *_quantiles(publish)),
            ("compaction after it (purge before)", *_quantiles(purge))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=2000)
    ns = parser.parse_args()
    rows = asyncio.run(_write_path(max(50, ns.iterations // 4)))
    key = SigningKey.generate()
    trust = TrustSet()
    trust.add_public_key(key.public_key, "plane")
    now = time.time()
    beat = Heartbeat(42, 8, 3, {"all": 5, "billing": 2}, now, now + 3600, "plane-1").sign(key)
    rows.append(("heartbeat: verify the signed event",
                 *measure(lambda: verify_event(beat, trust, expected_type=PLANE_HEARTBEAT), ns.iterations)))
    rows.append(("heartbeat: verify + expiry and shape check", *measure(
        lambda: Heartbeat.from_event(verify_event(beat, trust, expected_type=PLANE_HEARTBEAT)), ns.iterations)))
    rows.append(("/v1/check body: json.loads", *measure(lambda: json.loads(CHECK_BODY), ns.iterations * 10)))
    rows.append(("/v1/check body: jsonlimits.loads (I-JSON, depth)",
                 *measure(lambda: jsonlimits.loads(CHECK_BODY), ns.iterations * 10)))
    print("| what | median µs | p99 µs |\n|---|---|---|")
    for name, median, p99 in rows:
        print(f"| {name} | {median:.1f} | {p99:.1f} |")


if __name__ == "__main__":
    main()
