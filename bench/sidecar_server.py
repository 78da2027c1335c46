"""A sidecar for benchmarking: the real app plus one bench-only route as the floor.

``POST /bench/empty`` parses the same request model the same way as ``/v1/check`` and
answers a constant body, so ``/v1/check`` minus ``/bench/empty`` is what deciding costs on top
of the HTTP stack. Run by ``bench/bench_sidecar.py``; not part of the product.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import uvicorn
from fastapi import Request, Response
from tenantguard.serving import bind_tcp

from authz_sidecar.app import create_app
from authz_sidecar.config import SidecarConfig
from authz_sidecar.grpc_ext_authz import start_grpc
from authz_sidecar.http.models import CheckRequest
from authz_sidecar.http.wire import json_response, parse_body
from authz_sidecar.runtime import Sidecar


async def main(world_dir: Path) -> None:
    config = SidecarConfig(
        service="billing",
        bundle_file=world_dir / "bundle.tar.gz",
        bundle_keys=(world_dir / "plane.pem.pub",),
        trust_file=world_dir / "trust.json",
        relations_file=world_dir / "relations.json",
        port=0,
        grpc_port=0,
    )
    sidecar = Sidecar.from_config(config)
    app = create_app(sidecar)

    @app.post("/bench/empty")  # type: ignore[untyped-decorator]
    async def empty(request: Request) -> Response:
        """Same parsing and rendering as the decision doors, no decision."""
        request.headers.get("authorization")
        await parse_body(request, CheckRequest)
        return json_response({"allow": True, "reasons": [], "decision_id": "0" * 32, "bundle_revision": "1",
                              "relations_seq": 0, "high_risk": False})

    sock = bind_tcp("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    door = await start_grpc(sidecar, "127.0.0.1", 0)
    while not server.started:
        await asyncio.sleep(0.01)
    print(json.dumps({"http": sock.getsockname()[1], "grpc": door.port}), flush=True)
    await task


if __name__ == "__main__":
    from authz_sidecar.server import _event_loop_runner

    _event_loop_runner()(main(Path(sys.argv[1])))
