"""Where a gRPC Check's CPU goes: server CPU-µs per request for grpcio's server modes, from
an empty handler up to the sidecar's real Envoy door, and Cerbos's gRPC door beside them.

Run: python bench/bench_grpc_cost.py [--requests 20000] [--clients 8] [--streams 8]

Each server runs in a process of its own; h2load sends a fixed number of the same request
and the server's own CPU time (utime + stime from /proc, every thread) is read before and
after, so the figure is CPU per request, which a busy host changes far less than
throughput. Rows:

- ``aio raw``: ``grpc.aio`` server, a generic handler that returns constant bytes: grpcio's
  asyncio floor (no protobuf);
- ``aio proto``: the same, parsing the ``CheckRequest`` and serialising a constant
  ``CheckResponse`` (what the door's servicer does around its decision);
- ``uvloop raw``: ``aio raw`` on uvloop's event loop (the sidecar runs on uvloop when installed);
- ``uvloop limits raw``: the same with the door's gRPC options (``GrpcLimits``);
- ``sync raw`` / ``sync proto``: the same on grpcio's thread-pool server (one worker);
- ``door core``: the door's decision (``ExtAuthzServicer.check``: headers, path, token,
  built-in checks, policy, decision record) called in a loop in-process, no transport;
- ``sidecar door, constant``: the sidecar process (``bench/sidecar_server.py``) with its gRPC
  door answering a constant (``--constant-grpc``): the transport inside the real process;
- ``sidecar door``: the sidecar's real gRPC door (memo off);
- ``Cerbos``: Cerbos's ``CheckResources`` (after ``bash bench/install_peers.sh``), the peer
  issue 32 compares with.

Wall throughput is printed too (one h2load run; on a loaded host read it as indicative).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import (
    CERBOS_QUESTION,
    SERVER_CORE,
    Server,
    World,
    envoy_question,
    free_port,
    grpc_frame,
    missing_cerbos,
    pinned,
    start_cerbos,
    wait_port,
)

ENVOY_PATH = "/envoy.service.auth.v3.Authorization/Check"
CERBOS_PATH = "/cerbos.svc.v1.CerbosService/CheckResources"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid`` (the process's own counters)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


# --------------------------------------------------------------------------- the floor servers


def _constant_response() -> bytes:
    from envoy.service.auth.v3 import external_auth_pb2 as pb
    from google.rpc import code_pb2, status_pb2

    return pb.CheckResponse(status=status_pb2.Status(code=code_pb2.OK)).SerializeToString()


def _handlers(proto: bool, asynchronous: bool) -> Any:
    import grpc
    from envoy.service.auth.v3 import external_auth_pb2 as pb

    answer = _constant_response()

    def respond(request: bytes) -> bytes:
        if proto:
            pb.CheckRequest.FromString(request)
        return answer

    async def respond_async(request: bytes, context: Any) -> bytes:
        return respond(request)

    handler = grpc.unary_unary_rpc_method_handler(
        respond_async if asynchronous else (lambda request, context: respond(request)))
    return grpc.method_handlers_generic_handler("envoy.service.auth.v3.Authorization", {"Check": handler})


def serve_floor(mode: str, port: int) -> None:
    """Run one floor server until killed (a child process of this script)."""
    import asyncio
    from concurrent import futures

    import grpc

    proto = mode.endswith("proto")
    if mode.startswith("sync"):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=1), options=[("grpc.so_reuseport", 0)])
        server.add_generic_rpc_handlers((_handlers(proto, asynchronous=False),))
        server.add_insecure_port(f"127.0.0.1:{port}")
        server.start()
        print("ready", flush=True)
        server.wait_for_termination()
        return

    async def main() -> None:
        options: list[tuple[str, int]] = [("grpc.so_reuseport", 0)]
        if "limits" in mode:  # the sidecar door's connection and stream bounds
            from tenantguard.server.serving import GrpcLimits

            options += GrpcLimits().options()
        server = grpc.aio.server(options=options)
        server.add_generic_rpc_handlers((_handlers(proto, asynchronous=True),))
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        print("ready", flush=True)
        await server.wait_for_termination()

    if mode.startswith("uvloop"):
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


# --------------------------------------------------------------------------- measuring


def h2load(port: int, path: str, body: Path, requests: int, clients: int, streams: int) -> float:
    """Send ``requests`` and return the achieved req/s; every request must succeed."""
    cmd = ["h2load", "-n", str(requests), "-c", str(clients), "-m", str(streams), "-t", "1", "-d", str(body),
           "-H", "content-type: application/grpc", "-H", "te: trailers", f"http://127.0.0.1:{port}{path}"]
    out = subprocess.run(pinned("1", cmd), capture_output=True, text=True, timeout=600, check=True).stdout
    rps, ok = 0.0, False
    for line in out.splitlines():
        if line.startswith("finished in") and "req/s" in line:
            rps = float(line.split(",")[1].split()[0])
        if line.startswith("status codes:"):
            ok = line.split()[2] == str(requests)
    if not ok:
        raise RuntimeError(f"h2load: not every request got 200:\n{out}")
    return rps


def measured(pid: int, port: int, path: str, body: Path, args: argparse.Namespace) -> tuple[float, float]:
    """(server CPU-µs per request, req/s) over ``args.requests`` after a warm-up."""
    h2load(port, path, body, min(2000, args.requests), args.clients, args.streams)
    before = cpu_seconds(pid)
    rps = h2load(port, path, body, args.requests, args.clients, args.streams)
    return (cpu_seconds(pid) - before) * 1e6 / args.requests, rps


def floor_row(mode: str, body: Path, args: argparse.Namespace) -> tuple[float, float]:
    port = free_port()
    cmd = pinned(SERVER_CORE, [sys.executable, __file__, "--serve", mode, "--port", str(port)])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        wait_port(port)
        return measured(proc.pid, port, ENVOY_PATH, body, args)
    finally:
        proc.kill()
        proc.wait(timeout=10)


def start_bench_sidecar(world_dir: Path, extra: list[str]) -> Server:
    cmd = [sys.executable, str(Path(__file__).parent / "sidecar_server.py"), str(world_dir), "--no-memo", *extra]
    proc = subprocess.Popen(pinned(SERVER_CORE, cmd), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return Server(proc, json.loads(proc.stdout.readline()))


def core_row(world: World, request: Any, count: int) -> float:
    """CPU-µs of the door's decision alone, in this process (no transport)."""
    from authz_sidecar.config import SidecarConfig
    from authz_sidecar.grpc_ext_authz import ExtAuthzServicer
    from authz_sidecar.runtime import Sidecar

    root = world.root
    config = SidecarConfig(service="billing", bundle_file=root / "bundle.tar.gz", bundle_keys=(root / "plane.pem.pub",),
                           trust_file=root / "trust.json", relations_file=root / "relations.json", port=0,
                           decision_memo_size=0)

    door = ExtAuthzServicer(Sidecar.from_config(config))
    answer = door.check(request)
    if answer.status.code != 0:
        raise RuntimeError(f"the door denied the benchmark's question: {answer}")
    start = time.process_time()
    for _ in range(count):
        door.check(request)
    return (time.process_time() - start) * 1e6 / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_floor(args.serve, args.port)
        return
    if shutil.which("h2load") is None:
        print("skipped: h2load not installed (apt-get install nghttp2-client)")
        return
    rows: list[tuple[str, float, float | None]] = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        world = World(out)
        request = envoy_question(world.token)
        body = out / "envoy.bin"
        body.write_bytes(grpc_frame(request.SerializeToString()))
        for mode in ("aio raw", "aio proto", "uvloop raw", "uvloop limits raw", "sync raw", "sync proto"):
            rows.append((f"grpcio {mode}", *floor_row(mode.replace(" ", "-"), body, args)))
        rows.append(("door core (in-process, no transport)", core_row(world, request, args.requests // 4), None))
        for name, extra in (("sidecar gRPC door, constant answer", ["--constant-grpc"]),
                            ("sidecar gRPC door (memo off)", [])):
            sidecar = start_bench_sidecar(out, extra)
            try:
                rows.append((name, *measured(sidecar.proc.pid, sidecar.info["grpc"], ENVOY_PATH, body, args)))
            finally:
                sidecar.stop()
        if missing_cerbos() is None:
            from cerbos.request.v1 import request_pb2
            from google.protobuf import json_format

            cerbos_body = out / "cerbos.bin"
            cerbos_body.write_bytes(grpc_frame(json_format.ParseDict(
                CERBOS_QUESTION, request_pb2.CheckResourcesRequest()).SerializeToString()))
            cerbos = start_cerbos()
            try:
                rows.append(("Cerbos gRPC CheckResources",
                             *measured(cerbos.proc.pid, cerbos.info["grpc"], CERBOS_PATH, cerbos_body, args)))
            finally:
                cerbos.stop()
    print(f"{args.requests} requests per row, h2load -c {args.clients} -m {args.streams}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| server | CPU µs / request | req/s (wall) |\n|---|---:|---:|")
    for name, cpu, rps in rows:
        print(f"| {name} | {cpu:.0f} | {'-' if rps is None else f'{rps:.0f}'} |")


if __name__ == "__main__":
    main()
