"""SDK overhead per request: a bare route vs ``require(...)`` deciding in process vs through the sidecar.

Run: python bench/bench_sdk.py [--seconds 5] [--connections 32]

One real uvicorn app (a child process, one worker, uvloop when installed) serves
three routes that differ only in their guard:

- ``GET /bare/{id}``: no tenantguard at all (the floor of the HTTP stack);
- ``GET /embedded/{id}``: ``TenantGuard`` middleware (local token verification, cached)
  + ``require("invoices:read", resource=...)`` with an ``async def`` resource callable,
  decided by an ``EmbeddedAuthorizer``;
- ``GET /embedded_sync/{id}``: the same with a plain ``def`` resource callable, which
  FastAPI runs in its worker-thread pool (what that hop costs);
- ``GET /sidecar/{id}``: the same as ``embedded``, decided by ``AsyncAuthzClient`` over
  loopback HTTP against a real sidecar process.

Each route is measured twice with wrk on loopback: one connection (``-c1``: latency of a
request with nothing queued in front of it, median and p99 from wrk's latency
distribution) and ``--connections`` connections (throughput, req/s). The rows print
as a markdown table. Machine notes matter: app, sidecar and wrk share this host's cores.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
RELATIONSHIPS = ["acme/project:p1#member@user:alice"]
ROUTES = ("bare", "embedded", "embedded_sync", "sidecar")


def serve(port: int, sidecar_url: str, workdir: Path) -> None:
    """The benchmarked app (child process)."""
    import uvicorn
    from fastapi import Depends, FastAPI
    from tenantguard.client import AsyncAuthzClient
    from tenantguard.client.embedded import EmbeddedAuthorizer
    from tenantguard.fastapi import TenantGuard
    from tenantguard.identity.keys import TrustSet
    from tenantguard.identity.tokens import TokenVerifier, VerifyOptions
    from tenantguard.relations import RelationIndex, Relationship

    trust = TrustSet.load(workdir / "trust.json")
    verifier = TokenVerifier(trust, VerifyOptions(audience="orders"))
    rel = [Relationship.parse(r) for r in RELATIONSHIPS]
    index = RelationIndex.from_trusted(1, [(r.tenant, r.object, r.relation, r.subject) for r in rel])
    embedded = EmbeddedAuthorizer("orders", bundle=workdir / "bundle.tar.gz", bundle_key=workdir / "plane.pem.pub",
                                  verifier=verifier, relations=index)
    embedded_guard = TenantGuard(embedded, verifier=verifier)
    sidecar_guard = TenantGuard(AsyncAuthzClient(sidecar_url), verifier=verifier)

    async def resource(invoice_id: str) -> dict[str, object]:
        return {"type": "invoice", "id": invoice_id, "properties": {"project": "p1"}}

    def sync_resource(invoice_id: str) -> dict[str, object]:  # FastAPI runs sync dependencies in a thread
        return {"type": "invoice", "id": invoice_id, "properties": {"project": "p1"}}

    app = FastAPI()
    embedded_guard.install(app)

    @app.get("/bare/{invoice_id}")
    async def bare(invoice_id: str) -> dict[str, str]:
        return {"id": invoice_id}

    @app.get("/embedded/{invoice_id}",
             dependencies=[Depends(embedded_guard.require("invoices:read", resource=resource))])
    async def in_process(invoice_id: str) -> dict[str, str]:
        return {"id": invoice_id}

    @app.get("/embedded_sync/{invoice_id}",
             dependencies=[Depends(embedded_guard.require("invoices:read", resource=sync_resource))])
    async def in_process_sync(invoice_id: str) -> dict[str, str]:
        return {"id": invoice_id}

    @app.get("/sidecar/{invoice_id}", dependencies=[Depends(sidecar_guard.require("invoices:read", resource=resource))])
    async def via_sidecar(invoice_id: str) -> dict[str, str]:
        return {"id": invoice_id}

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, token: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not become ready")


_UNITS = {"us": 1.0, "ms": 1000.0, "s": 1_000_000.0, "m": 60_000_000.0}


def _micros(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if match is None:
        raise ValueError(text)
    return float(match.group(1)) * _UNITS[match.group(2)]


def wrk(url: str, token: str, *, connections: int, seconds: float) -> dict[str, float]:
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{max(1, int(seconds))}s", "--latency", "-H",
                          f"Authorization: Bearer {token}", url], capture_output=True, text=True, check=True).stdout
    dist = dict(re.findall(r"^\s+(50|99)(?:\.0+)?%\s+(\S+)\s*$", out, re.M))
    if "50" not in dist or "99" not in dist:
        raise RuntimeError(f"cannot read wrk's latency distribution:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return {"p50": _micros(dist["50"]), "p99": _micros(dist["99"]), "rps": rps,
            "errors": float(non2xx.group(1)) if non2xx else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--serve", nargs=3, metavar=("PORT", "SIDECAR_URL", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1], Path(args.serve[2]))
        return
    if shutil.which("wrk") is None:
        sys.exit("wrk not found (apt-get install wrk)")
    from tenantguard.testing import LocalSidecar, TestIssuer

    issuer = TestIssuer("edge")
    token = issuer.mint(audience="orders", lifetime=3600)
    with LocalSidecar("orders", REPO / "bundles" / "tenantguard", issuer=issuer, relationships=RELATIONSHIPS) as sc:
        port = free_port()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        app = subprocess.Popen([sys.executable, __file__, "--serve", str(port), sc.base_url, str(sc.workdir)], env=env)
        try:
            for route in ROUTES:
                wait_ready(f"http://127.0.0.1:{port}/{route}/inv-1", token)
            rows = []
            for route in ROUTES:
                url = f"http://127.0.0.1:{port}/{route}/inv-1"
                wrk(url, token, connections=1, seconds=1)  # warm-up
                single = wrk(url, token, connections=1, seconds=args.seconds)
                loaded = wrk(url, token, connections=args.connections, seconds=args.seconds)
                rows.append((route, single, loaded))
        finally:
            app.terminate()
            app.wait(timeout=10)
    base = rows[0][1]["p50"]
    print(f"\nSDK overhead per request (wrk, loopback, {os.cpu_count()} CPUs shared by app, sidecar and wrk)\n")
    print(f"| route | median (c=1) | p99 (c=1) | added median | req/s (c={args.connections}) | non-2xx |")
    print("|---|---:|---:|---:|---:|---:|")
    for route, single, loaded in rows:
        print(f"| {route} | {single['p50']:.0f} µs | {single['p99']:.0f} µs | {single['p50'] - base:+.0f} µs "
              f"| {loaded['rps']:.0f} | {int(single['errors'] + loaded['errors'])} |")


if __name__ == "__main__":
    main()
