"""Policy plane write throughput through the real HTTP API: the write paths side by side.

Run: python bench/bench_plane.py [--quick] [--seconds S] [--replicas N] [--sizes 1,100,1000] [--clients 1,8]
                                 [--modes off,framework,fast]
Starts one nats-server (free port, temporary JetStream store) per mode, and on each N
plane replicas (``tenantguard plane serve``, real uvicorn). The modes:

* ``off``: ``TG_PLANE_GROUP_COMMIT=0 TG_PLANE_FAST_WRITES=0``: one signed batch per request,
  every request through FastAPI;
* ``framework``: ``TG_PLANE_FAST_WRITES=0``: group commit (concurrent requests in a replica
  share a batch), every request through FastAPI (the path before the hot write doors);
* ``fast``: the defaults: group commit, and ``POST /v1/relations`` answered by the hot
  write door below the framework (``policy_plane/api/hot.py``).

For each scenario (batches of 1, 100 and 1,000 writes; 1 client on 1 replica, then 8
clients spread over the replicas) it runs every mode in turn, for a fixed time each, so
the rows of one scenario are measured minutes apart at most, and prints writes/s and
latency. Every request carries its own ``Idempotency-Key``, as the SDK's client sends.

The load generator is this process: asyncio, aiohttp, one keep-alive connection per
client. Its own ceiling is measured first against a trivial HTTP server (a fixed answer
written by a bare asyncio protocol in a child process) and printed, with the load
average, so a reader can tell the plane's limit from the generator's. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import aiohttp
from tenantguard.dev.natsserver import NatsServer
from tenantguard.identity.keys import SigningKey, write_private

TENANTGUARD = str(Path(sys.executable).with_name("tenantguard"))
TOKEN = "bench-admin-token-" + "0" * 32
_ids = count()
TRIVIAL_SERVER = r"""
import asyncio, sys
ANSWER = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 24\r\n\r\n{"consistency_token": 1}'
class Answer(asyncio.Protocol):
    def connection_made(self, transport): self.t, self.buf = transport, b""
    def data_received(self, data):
        self.buf += data
        while True:  # one answer per complete request (headers + content-length body)
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if not sep: return
            length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n")
                           if l.lower().startswith(b"content-length")), 0)
            if len(rest) < length: return
            self.buf = rest[length:]
            self.t.write(ANSWER)
async def main():
    server = await asyncio.get_running_loop().create_server(Answer, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


def start_plane(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([TENANTGUARD, "plane", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **env})
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


def body(size: int) -> bytes:
    """One request body: ``size`` writes of fresh tuples (never a no-op)."""
    n = next(_ids)
    return json.dumps({"changes": [{"op": "write", "rel": {"tenant": f"t{n % 100}", "object": f"doc:b{n}-{i}",
                                                            "relation": "viewer", "subject": f"user:u{i}"}}
                                   for i in range(size)]}).encode()


class _Http(asyncio.Protocol):
    """A bare HTTP/1.1 keep-alive client connection: one request at a time, answers with content-length.
    About a tenth of aiohttp's CPU per request, so the generator stays out of the plane's way."""

    def __init__(self) -> None:
        self.buf = b""
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        head, sep, rest = self.buf.partition(b"\r\n\r\n")
        if not sep:
            return
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        if len(rest) < length or self.waiter is None:
            return
        self.buf = rest[length:]
        self.waiter.set_result((int(head[9:12]), rest[:length]))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("connection closed"))

    async def post(self, path: str, data: bytes, headers: str) -> tuple[int, bytes]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        head = f"POST {path} HTTP/1.1\r\nHost: bench\r\n{headers}Content-Length: {len(data)}\r\n\r\n"
        self.transport.write(head.encode() + data)
        return await self.waiter


async def _raw_client(url: str, size: int, until: float, latencies: list[float]) -> None:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    _, conn = await asyncio.get_running_loop().create_connection(_Http, host, int(port))
    headers = f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
    try:
        while time.perf_counter() < until:
            data = body(size)
            started = time.perf_counter()
            key = f"Idempotency-Key: bench-{next(_ids)}\r\n"
            status, answer = await conn.post("/v1/relations", data, headers + key)
            latencies.append(time.perf_counter() - started)
            if status != 200:
                raise SystemExit(f"write failed: {status} {answer[:300]!r}")
    finally:
        if conn.transport is not None:
            conn.transport.close()


async def _aiohttp_client(session: aiohttp.ClientSession, url: str, size: int, until: float,
                          latencies: list[float]) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    while time.perf_counter() < until:
        data = body(size)
        headers["Idempotency-Key"] = f"bench-{next(_ids)}"
        started = time.perf_counter()
        async with session.post(url + "/v1/relations", data=data, headers=headers) as response:
            await response.read()
            if response.status != 200:
                raise SystemExit(f"write failed: {response.status} {await response.text()}")
        latencies.append(time.perf_counter() - started)


async def _load(urls: list[str], size: int, clients: int, seconds: float, client: str) -> dict[str, float]:
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=clients, limit_per_host=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        for url in set(urls):  # warm: scrypt for the admin token once per replica
            async with session.post(url + "/v1/relations", data=body(1),
                                    headers={"Authorization": f"Bearer {TOKEN}",
                                             "Content-Type": "application/json"}) as response:
                await response.read()
                response.raise_for_status()
        cpu, started = time.process_time(), time.perf_counter()
        until = started + seconds
        if client == "raw":
            await asyncio.gather(*(_raw_client(urls[i % len(urls)], size, until, latencies) for i in range(clients)))
        else:
            await asyncio.gather(*(_aiohttp_client(session, urls[i % len(urls)], size, until, latencies)
                                   for i in range(clients)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    latencies.sort()
    return {"requests": len(latencies), "requests_s": len(latencies) / elapsed,
            "tuples_s": len(latencies) * size / elapsed, "p50_ms": statistics.median(latencies) * 1000,
            "p99_ms": latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000,
            "client_us": cpu / len(latencies) * 1e6, "elapsed": elapsed}


def run(urls: list[str], size: int, clients: int, seconds: float, client: str = "raw",
        pids: tuple[int, ...] = ()) -> dict[str, float]:
    """One scenario; with ``pids`` (planes, then the nats-server), their CPU per request too, and
    from the planes' status the batches committed and the expected-sequence conflicts between them."""
    before, counts = [_cpu_seconds(pid) for pid in pids], _batches_and_conflicts(urls) if pids else (0, 0, 0)
    result = asyncio.run(_load(urls, size, clients, seconds, client))
    spent = [_cpu_seconds(pid) - b for pid, b in zip(pids, before, strict=True)]
    if spent:
        result["plane_us"] = sum(spent[:-1]) / result["requests"] * 1e6
        result["nats_us"] = spent[-1] / result["requests"] * 1e6
        after = _batches_and_conflicts(urls)
        result["per_batch"] = result["requests"] / max(1, after[0] - counts[0])
        result["conflicts"] = after[1] - counts[1]
        result["streak"] = after[2]
    return result


def _batches_and_conflicts(urls: list[str]) -> tuple[int, int, int]:
    """Relation batches committed and sequence conflicts met, summed over the replicas, and the most
    races one write lost in a row in any of them (/v1/status)."""
    batches = conflicts = streak = 0
    for url in urls:
        status = json.loads(urllib.request.urlopen(url + "/v1/status", timeout=30).read())  # noqa: S310 (local)
        batches += status["group_commit"]["batches"]
        conflicts += status["conflicts"]["relations"]
        streak = max(streak, status["longest_conflict_streak"])
    return batches, conflicts, streak


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def trivial_server() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-c", TRIVIAL_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}"
    finally:
        proc.kill()
        proc.wait(timeout=10)


MODES: dict[str, tuple[str, dict[str, str]]] = {
    # name: (what the table calls it, environment of its planes)
    "off": ("framework, no group commit", {"TG_PLANE_GROUP_COMMIT": "0", "TG_PLANE_FAST_WRITES": "0"}),
    "framework": ("framework", {"TG_PLANE_GROUP_COMMIT": "1", "TG_PLANE_FAST_WRITES": "0"}),
    "fast": ("fast door", {"TG_PLANE_GROUP_COMMIT": "1", "TG_PLANE_FAST_WRITES": "1"}),
}


@contextlib.contextmanager
def plane_set(root: Path, name: str, replicas: int, env: dict[str, str]
              ) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """A nats-server and ``replicas`` planes on it, configured through ``env`` (see MODES)."""
    with NatsServer(root / f"nats-{name}") as server:
        args = ["--nats", server.url, "--event-key", str(root / "event.pem"), "--bundle-key",
                str(root / "bundle.pem"), "--admin-token-file", str(root / "admin.token"), "--port", "0",
                "--snapshot-every", "100000", "--snapshot-seconds", "3600"]
        planes = [start_plane(args, env) for _ in range(max(1, replicas))]
        try:
            assert server.pid is not None
            yield [url for _, url in planes], (*(proc.pid for proc, _ in planes), server.pid)
        finally:
            for proc, _ in planes:
                proc.send_signal(signal.SIGTERM)
            for proc, _ in planes:
                proc.wait(timeout=20)


def _free_cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per scenario and mode (default 5)")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--sizes", default="1,100,1000", help="writes per request, comma-separated")
    parser.add_argument("--clients", default="1,8", help="concurrent clients, comma-separated (1: on one replica)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"write paths compared, in this order ({', '.join(MODES)})")
    options = parser.parse_args()
    modes = [m for m in options.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown or not modes:
        parser.error(f"--modes takes {', '.join(MODES)}")
    seconds = options.seconds or (2.0 if options.quick else 5.0)
    socket.setdefaulttimeout(60)
    load_before = os.getloadavg()
    with trivial_server() as url:
        generator = {client: run([url], 1, 8, min(seconds, 3.0), client) for client in ("aiohttp", "raw")}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        SigningKey.generate().save(root / "event.pem")
        SigningKey.generate().save(root / "bundle.pem")
        write_private(root / "admin.token", TOKEN.encode())
        replicas = options.replicas
        with contextlib.ExitStack() as stack:
            sets = {mode: stack.enter_context(plane_set(root, mode, replicas, MODES[mode][1])) for mode in modes}
            for size in (int(x) for x in options.sizes.split(",")):
                for clients in (int(x) for x in options.clients.split(",")):
                    for mode, (urls, pids) in sets.items():
                        n = 1 if clients == 1 else len(urls)
                        result = run(urls[:n], size, clients, seconds, pids=(*pids[:n], pids[-1]))
                        rows.append((size, clients, n, mode, result))
    load_after = os.getloadavg()
    flags = ((" --quick" if options.quick else "") + (f" --seconds {options.seconds:g}" if options.seconds else "")
             + (f" --sizes {options.sizes}" if options.sizes != "1,100,1000" else "")
             + (f" --clients {options.clients}" if options.clients != "1,8" else "")
             + (f" --replicas {options.replicas}" if options.replicas != 2 else "")
             + (f" --modes {options.modes}" if options.modes != ",".join(MODES) else ""))
    print(f"Command: `python bench/bench_plane.py{flags}` ({platform.python_implementation()} "
          f"{platform.python_version()}, {_free_cpu_count()} CPUs, {seconds:g} s per row; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after)\n")
    for client, g in generator.items():
        print(f"Load generator alone ({client}, 8 connections, a trivial server): {g['requests_s']:.0f} "
              f"requests/s, {g['client_us']:.0f} us CPU per request")
    print("\n| writes per request | clients | replicas | write path | requests/s | tuples/s | p50 ms | p99 ms "
          "| requests per batch | conflicts (longest run) | CPU us/request: planes | nats | client |")
    print("|---:|---:|---:|:--|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, clients, n, mode, r in rows:
        print(f"| {size} | {clients} | {n} | {MODES[mode][0]} | {r['requests_s']:.0f} | {r['tuples_s']:.0f} "
              f"| {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['per_batch']:.1f} "
              f"| {r['conflicts']:.0f} ({r['streak']:.0f}) "
              f"| {r['plane_us']:.0f} | {r['nats_us']:.0f} | {r['client_us']:.0f} |")


if __name__ == "__main__":
    main()
