"""The sidecar benchmark's server starts and answers both doors, on machines without h2load too
(the benchmark itself needs h2load, so the CI smoke run skips it where h2load is missing; its
server had broken unseen: it imported a helper that had moved)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
from envoy.service.auth.v3 import attribute_context_pb2 as ac
from envoy.service.auth.v3 import external_auth_pb2 as pb

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import bench_sidecar  # noqa: E402  (bench/bench_sidecar.py)


def test_the_benchmark_server_answers_http_and_grpc(tmp_path: Path) -> None:
    world = bench_sidecar.World(tmp_path)
    token = bench_sidecar.mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="billing",
                               roles=["editor"], lifetime=3600)
    server = subprocess.Popen([sys.executable, str(BENCH / "sidecar_server.py"), str(tmp_path), "--no-memo"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        ports = json.loads(server.stdout.readline())
        http = f"http://127.0.0.1:{ports['http']}"
        bench_sidecar.assert_allowed(http, token)
        for floor in ("/bench/empty", "/bench/framework"):  # the floor rows the benchmark compares against
            answer = httpx.post(http + floor, json=bench_sidecar.QUESTION, timeout=10,
                                headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == 200 and answer.json()["allow"] is True, (floor, answer.text)
        request = ac.AttributeContext.HttpRequest(method="GET", path="/tenants/acme/invoices/inv-1", host="billing",
                                                  headers={"authorization": f"Bearer {token}"})
        bench_sidecar.assert_envoy_allowed(f"127.0.0.1:{ports['grpc']}", pb.CheckRequest(
            attributes=ac.AttributeContext(request=ac.AttributeContext.Request(http=request))))
    finally:
        server.terminate()
        assert server.wait(timeout=10) is not None
