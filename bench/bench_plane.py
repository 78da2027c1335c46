"""Policy plane write throughput: batches/s and tuples/s through the real HTTP API.

Run: python bench/bench_plane.py [--quick] [--replicas N]
Starts its own nats-server (free port, temporary JetStream store) and N plane replicas
(``tenantguard plane serve``, real uvicorn), then POSTs ``/v1/relations`` batches of 1,
100 and 1,000 writes, from one client (latency-bound: each write waits until it is
stored in JetStream and applied back by the replica) and from 8 concurrent clients
spread over the replicas. Prints a Markdown table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import count
from pathlib import Path

import httpx
from tenantguard.keys import SigningKey, write_private
from tenantguard.natsserver import NatsServer

TENANTGUARD = str(Path(sys.executable).with_name("tenantguard"))
TOKEN = "bench-admin-token-" + "0" * 32
_ids = count()


def start_plane(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([TENANTGUARD, "plane", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if selector.select(timeout=0.5):
            line = proc.stdout.readline()
            if line.startswith("{") and json.loads(line).get("event") == "listening":
                return proc, "http://" + json.loads(line)["http"]
        if proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("plane did not start")


def batch(size: int) -> dict[str, object]:
    n = next(_ids)
    return {"changes": [{"op": "write", "rel": {"tenant": f"t{n % 100}", "object": f"doc:b{n}-{i}",
                                                 "relation": "viewer", "subject": f"user:u{i}"}}
                        for i in range(size)]}


def run(urls: list[str], size: int, batches: int, clients: int) -> dict[str, float]:
    bodies = [batch(size) for _ in range(batches)]
    per_client = [bodies[i::clients] for i in range(clients)]

    def work(index: int) -> list[float]:
        latencies = []
        with httpx.Client(base_url=urls[index % len(urls)], timeout=60,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            http.get("/health")
            for body in per_client[index]:
                started = time.perf_counter()
                response = http.post("/v1/relations", json=body)
                latencies.append(time.perf_counter() - started)
                response.raise_for_status()
        return latencies

    with ThreadPoolExecutor(clients) as pool:
        for url in urls:  # warm: pay scrypt for the admin token once per replica
            httpx.post(f"{url}/v1/relations", json=batch(1), headers={"Authorization": f"Bearer {TOKEN}"},
                       timeout=60).raise_for_status()
        started = time.perf_counter()
        latencies = [x for chunk in pool.map(work, range(clients)) for x in chunk]
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {"batches_s": batches / elapsed, "tuples_s": batches * size / elapsed,
            "p50_ms": statistics.median(latencies) * 1000, "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer batches")
    parser.add_argument("--replicas", type=int, default=2)
    options = parser.parse_args()
    scale = 0.2 if options.quick else 1.0
    plan = [(1, int(400 * scale)), (100, int(200 * scale)), (1000, int(50 * scale))]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        SigningKey.generate().save(root / "event.pem")
        SigningKey.generate().save(root / "bundle.pem")
        write_private(root / "admin.token", TOKEN.encode())
        with NatsServer(root / "nats") as server:
            args = ["--nats", server.url, "--event-key", str(root / "event.pem"), "--bundle-key",
                    str(root / "bundle.pem"), "--admin-token-file", str(root / "admin.token"), "--port", "0",
                    "--snapshot-every", "100000", "--snapshot-seconds", "3600"]
            planes = [start_plane(args) for _ in range(max(1, options.replicas))]
            urls = [url for _, url in planes]
            try:
                rows = []
                for size, batches in plan:
                    for clients, targets in ((1, urls[:1]), (8, urls)):
                        result = run(targets, size, batches, clients)
                        rows.append((size, clients, len(targets), batches, result))
            finally:
                for proc, _ in planes:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(timeout=20)
    print(f"Command: `python bench/bench_plane.py{' --quick' if options.quick else ''}` "
          f"({platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs)\n")
    print("| batch size | clients | replicas | batches | batches/s | tuples/s | p50 ms | p99 ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, clients, replicas, batches, r in rows:
        print(f"| {size} | {clients} | {replicas} | {batches} | {r['batches_s']:.0f} | {r['tuples_s']:.0f} "
              f"| {r['p50_ms']:.2f} | {r['p99_ms']:.2f} |")


if __name__ == "__main__":
    main()
