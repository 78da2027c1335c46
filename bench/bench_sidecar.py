"""Sidecar decision latency and throughput, every door side by side in one run.

Run: python bench/bench_sidecar.py [--seconds 10] [--rate 1000] [--quick]

Measures, against one sidecar process (one core) with the load generator on the other:
- in-process: ``Sidecar.authenticate`` + ``Sidecar.decide`` with no socket, once asking
  the same question (verdict memo hits) and once a different resource every time
  (memo misses: every question evaluated, plus the memo's bookkeeping);
- HTTP ``POST /bench/empty`` (served by the same front as the decision doors, same
  header read, request model and response shape, no decision: the floor),
  ``POST /bench/framework`` (the same through FastAPI's routing: the stack every door
  paid for before the front), ``POST /v1/check`` and ``POST /access/v1/evaluation``;
- gRPC ``grpc.health.v1.Health/Check`` (the gRPC floor) and Envoy ``Authorization/Check``;
- then ``/v1/check`` and ``Authorization/Check`` again on a second sidecar started with
  the memo off (``--decision-memo 0``): what every door costs when no question repeats.

Latency is measured at a fixed offered rate with h2load: one client with ``--rps`` sends
one request every 1/rate seconds (several clients would fire on the same tick and
measure bursts instead), a per-request log file gives the percentiles computed here,
and the run fails if the achieved rate falls short of the offered one. Throughput is
the maximum sustained rate with 32 connections: wrk for HTTP (Debian package wrk;
lighter than h2load, so less of the shared CPU goes to the generator; h2load when wrk is
missing), h2load for gRPC. Needs ``h2load`` (Debian package nghttp2-client).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from envoy.service.auth.v3 import attribute_context_pb2 as ac
from envoy.service.auth.v3 import external_auth_pb2 as pb
from grpc_health.v1 import health_pb2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tenantguard.identity.tokens import mint  # noqa: E402

from tests.harness.sidecar_world import World  # noqa: E402  (the same world the integration tests use)

QUESTION = {
    "action": {"name": "invoices:read"},
    "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}},
}


@dataclass
class Row:
    door: str
    median_us: float
    p99_us: float
    max_rps: float
    errors: int


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


FIXED_RATE_SHORTFALL = 0.97  # below this share of the offered rate, the latency figure is not at that rate


def grpc_body(message: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", len(message)) + message


def h2load(url: str, *, body: Path | None, headers: list[str], h1: bool, seconds: float,
           rate: int | None, clients: int, log: Path) -> tuple[list[float], float, int]:
    """Run h2load; returns per-request latencies (µs), achieved req/s and failures."""
    cmd = ["h2load", "-D", str(int(seconds)), "-c", str(clients), "-t", "1", "--log-file", str(log), "--warm-up-time=1"]
    if rate is not None:
        cmd += ["--rps", str(max(1, rate // clients))]
    if h1:
        cmd.append("--h1")
    else:  # at a fixed rate one request per tick needs one stream; at full load keep 8 in flight
        cmd += ["-m", "1" if rate is not None else "8"]
    if body is not None:
        cmd += ["-d", str(body)]
    for header in headers:
        cmd += ["-H", header]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
    latencies, failures = [], 0
    for line in log.read_text().splitlines():
        _, status, micros = line.split("\t")[:3]
        if status not in ("200",):
            failures += 1
        latencies.append(float(micros))
    rps = 0.0
    for line in out.splitlines():
        if "req/s" in line and line.startswith("finished in"):
            rps = float(line.split(",")[1].split()[0])
    return latencies, rps, failures


def measure_door(name: str, url: str, body: Path | None, headers: list[str], h1: bool,
                 seconds: float, rate: int, out: Path) -> Row:
    slug = "".join(c if c.isalnum() else "-" for c in name)
    fixed, achieved, errors = h2load(url, body=body, headers=headers, h1=h1, seconds=seconds, rate=rate,
                                     clients=1, log=out / f"{slug}-fixed.log")
    if achieved < rate * FIXED_RATE_SHORTFALL:
        sys.exit(f"{name}: offered {rate}/s but only {achieved:.0f}/s were sent; the latency would not be at that rate")
    if h1 and shutil.which("wrk") is not None:
        max_rps, errors2 = wrk(url, body=body, headers=headers, seconds=seconds, connections=32, out=out)
    else:
        _, max_rps, errors2 = h2load(url, body=body, headers=headers, h1=h1, seconds=seconds, rate=None,
                                     clients=32, log=out / f"{slug}-max.log")
    return Row(name, statistics.median(fixed), percentile(fixed, 0.99), max_rps, errors + errors2)


def wrk(url: str, *, body: Path | None, headers: list[str], seconds: float, connections: int,
        out: Path) -> tuple[float, int]:
    """Max HTTP/1.1 throughput with wrk (lighter than h2load, so less of the shared CPU
    goes to the generator); returns requests/s and non-2xx responses."""
    script = out / "wrk.lua"
    lines = ['wrk.method = "POST"']
    if body is not None:
        lines.append(f"wrk.body = {json.dumps(body.read_text())}")
    for header in headers:
        name, _, value = header.partition(":")
        lines.append(f"wrk.headers[{json.dumps(name.strip())}] = {json.dumps(value.strip())}")
    script.write_text("\n".join(lines) + "\n")
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{int(seconds)}s", "-s", str(script), url]
    report = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
    rps, failures = 0.0, 0
    for line in report.splitlines():
        if line.startswith("Requests/sec:"):
            rps = float(line.split()[1])
        elif "Non-2xx or 3xx responses:" in line:
            failures += int(line.split(":")[1])
        elif line.strip().startswith("Socket errors:"):
            failures += sum(int(part.split()[1]) for part in line.split(":", 1)[1].split(","))
    return rps, failures


def assert_allowed(http: str, token: str) -> None:
    """The benchmarked questions must be allows: a 200 deny would measure the wrong path."""
    import httpx

    headers = {"authorization": f"Bearer {token}"}
    check = httpx.post(f"{http}/v1/check", json=QUESTION, headers=headers, timeout=10).json()
    evaluation = httpx.post(f"{http}/access/v1/evaluation", json=QUESTION, headers=headers, timeout=10).json()
    if check.get("allow") is not True or evaluation.get("decision") is not True:
        sys.exit(f"the benchmark question is not allowed: {check} {evaluation}")


def assert_envoy_allowed(target: str, question: pb.CheckRequest) -> None:
    import grpc
    from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc

    with grpc.insecure_channel(target) as channel:
        answer = pb_grpc.AuthorizationStub(channel).Check(question, timeout=10)
    if answer.status.code != 0 or not answer.HasField("ok_response"):
        sys.exit(f"the benchmark's Envoy question is not allowed: {answer}")


def in_process(world: World, token: str, n: int, *, distinct: bool) -> Row:
    """``authenticate`` + ``decide`` in a loop: the same question (memo hits after the first),
    or every time another member of project p1 with a token of their own (memo on, every
    lookup a miss: the verdict memo keys on what the policy reads, so a question differing
    only in a member it never reads, such as the resource id, is rightly a hit)."""
    from authz_sidecar.config import SidecarConfig
    from authz_sidecar.runtime import Sidecar

    warmup = 500
    total = n + warmup + 1
    relations_file = world.relations_file
    headers = [f"Bearer {token}"] * total
    if distinct:
        relations_file = world.relations_file.with_name("relations-distinct.json")
        wire = json.loads(world.relations_file.read_text())
        wire["relationships"] += [f"acme/project:p1#member@user:u{i}" for i in range(total)]
        relations_file.write_text(json.dumps(wire))
        headers = [f"Bearer {mint(world.edge, issuer='edge', sub=f'u{i}', tenant_id='acme', audience='billing', roles=['editor'], lifetime=3600)}"  # noqa: E501
                   for i in range(total)]
    sidecar = Sidecar.from_config(SidecarConfig(
        service="billing", bundle_file=world.bundle_file, bundle_keys=(world.plane_pub,),
        trust_file=world.trust_file, relations_file=relations_file))
    sidecar.decision_log.maxsize = 10**9
    asked = iter(headers)

    def once() -> bool:
        return sidecar.decide(QUESTION, sidecar.authenticate(next(asked)), door="bench").allow

    assert once()
    for _ in range(warmup):
        once()
    samples = []
    start = time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter_ns()
        once()
        samples.append((time.perf_counter_ns() - t0) / 1000)
    elapsed = time.perf_counter() - start
    memo = sidecar.memo.stats() if sidecar.memo is not None else {}
    if distinct and memo.get("hits"):
        sys.exit(f"distinct questions hit the memo: {memo}")
    name = "distinct subjects (memo misses)" if distinct else "repeated question (memo hits)"
    return Row(f"in-process authenticate + decide, {name}", statistics.median(samples), percentile(samples, 0.99),
               n / elapsed, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="3 s per measurement (CI smoke run)")
    ns = parser.parse_args()
    seconds = 3.0 if ns.quick else ns.seconds
    if shutil.which("h2load") is None:
        sys.exit("h2load not found: apt-get install nghttp2-client")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        world = World(out)
        token = mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="billing",
                     roles=["editor"], lifetime=3600)
        n = 20_000 if not ns.quick else 3_000
        rows = [in_process(world, token, n, distinct=False), in_process(world, token, n, distinct=True)]
        rows += measure_server(world, token, out, seconds, ns.rate, memo=True)
        rows += measure_server(world, token, out, seconds, ns.rate, memo=False)
    print(f"# sidecar doors ({seconds:.0f} s per run, latency at {ns.rate} req/s offered as one evenly spaced "
          f"stream, max throughput with 32 connections)\n")
    print("| door | median µs | p99 µs | max req/s | non-200 |\n|---|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row.door} | {row.median_us:.0f} | {row.p99_us:.0f} | {row.max_rps:.0f} | {row.errors} |")
    print()
    for check_row in (r for r in rows if r.door.startswith("HTTP POST /v1/check")):
        for floor in (r for r in rows if r.door.startswith("HTTP empty")):
            print(f"{check_row.door} / {floor.door}: throughput ratio {check_row.max_rps / floor.max_rps:.2f}")


def measure_server(world: World, token: str, out: Path, seconds: float, rate: int, *, memo: bool) -> list[Row]:
    """Every door of one sidecar process. With the memo on, the benchmark's repeated
    question is a memo hit after the first; with it off (``--decision-memo 0``) every
    question is evaluated, as distinct questions would be."""
    args = [sys.executable, str(REPO / "bench" / "sidecar_server.py"), str(out)] + ([] if memo else ["--no-memo"])
    suffix = " (repeated question: memo hit)" if memo else " (memo off: evaluated every time)"
    server = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    rows: list[Row] = []
    try:
        assert server.stdout is not None
        ports = json.loads(server.stdout.readline())
        http = f"http://127.0.0.1:{ports['http']}"
        grpc_url = f"http://127.0.0.1:{ports['grpc']}"
        check_body = out / "check.json"
        check_body.write_text(json.dumps(QUESTION))
        auth = [f"authorization: Bearer {token}", "content-type: application/json"]
        assert_allowed(http, token)
        doors = [("HTTP POST /v1/check" + suffix, "/v1/check")]
        if memo:
            doors = [("HTTP empty endpoint (floor)", "/bench/empty"),
                     ("HTTP empty endpoint through FastAPI routing", "/bench/framework"),
                     *doors, ("HTTP AuthZEN evaluation" + suffix, "/access/v1/evaluation")]
        for name, path in doors:
            rows.append(measure_door(name, http + path, check_body, auth, True, seconds, rate, out))
        http_req = ac.AttributeContext.HttpRequest(
            method="GET", path="/tenants/acme/invoices/inv-1", host="billing",
            headers={"authorization": f"Bearer {token}"})
        check = out / "check.bin"
        envoy_question = pb.CheckRequest(attributes=ac.AttributeContext(
            request=ac.AttributeContext.Request(http=http_req)))
        check.write_bytes(grpc_body(envoy_question.SerializeToString()))
        assert_envoy_allowed(f"127.0.0.1:{ports['grpc']}", envoy_question)
        grpc_headers = ["content-type: application/grpc", "te: trailers"]
        if memo:
            health = out / "health.bin"
            health.write_bytes(grpc_body(health_pb2.HealthCheckRequest(service="").SerializeToString()))
            rows.append(measure_door("gRPC health Check (floor)", grpc_url + "/grpc.health.v1.Health/Check", health,
                                     grpc_headers, False, seconds, rate, out))
        rows.append(measure_door("gRPC Envoy Authorization/Check" + suffix,
                                 grpc_url + "/envoy.service.auth.v3.Authorization/Check", check, grpc_headers,
                                 False, seconds, rate, out))
    finally:
        server.terminate()
        server.wait(timeout=10)
    return rows


if __name__ == "__main__":
    main()
