"""A sidecar for benchmarking: the real app plus one bench-only door as the floor.

``POST /bench/empty`` is served by the same front as the decision doors, reads the
``Authorization`` header and parses the same request model the same way as
``/v1/check``, and answers a constant body of the same shape: ``/v1/check`` minus
``/bench/empty`` is what deciding costs on top of the HTTP stack. ``POST /bench/framework``
does the same through FastAPI's routing (what every door cost before the front).
``--constant-grpc`` makes the gRPC door answer a constant allow without deciding (the
transport's cost inside the real process, for ``bench/bench_grpc_cost.py``). Run by
``bench/bench_sidecar.py`` (``--no-memo`` turns the verdict memo off); not part of the product.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import uvicorn
from fastapi import Request, Response
from starlette.types import Scope
from tenantguard.decision.verdicts import DEFAULT_MEMO_SIZE
from tenantguard.server.asgi import header
from tenantguard.server.serving import bind_tcp, event_loop_runner

from authz_sidecar.app import SidecarApp
from authz_sidecar.config import SidecarConfig
from authz_sidecar.grpc_ext_authz import start_grpc
from authz_sidecar.http.models import CheckRequest
from authz_sidecar.http.wire import Reply, as_route, json_reply, parse_json
from authz_sidecar.runtime import Sidecar
from authz_sidecar.server import uvicorn_config

EMPTY = {"allow": True, "reasons": [], "decision_id": "0" * 32, "bundle_revision": "1", "relations_seq": 0,
         "high_risk": False}


async def empty_door(sidecar: Sidecar, scope: Scope, body: bytes) -> Reply:
    """Same header read, parsing and rendering as the decision doors; no decision."""
    header(scope, b"authorization")
    parse_json(scope, body, CheckRequest, limit=sidecar.config.max_body_bytes).model_dump(exclude_none=True)
    return json_reply(EMPTY)


def answer_constantly() -> None:
    """Every gRPC Check answers OK without deciding (the door's servicer keeps its transport)."""
    from envoy.service.auth.v3 import external_auth_pb2 as pb
    from google.rpc import code_pb2, status_pb2

    from authz_sidecar.grpc_ext_authz import ExtAuthzServicer

    answer = pb.CheckResponse(status=status_pb2.Status(code=code_pb2.OK))
    ExtAuthzServicer.check = lambda self, request: answer  # type: ignore[method-assign]


async def main(world_dir: Path, memo: bool) -> None:
    config = SidecarConfig(
        service="billing",
        bundle_file=world_dir / "bundle.tar.gz",
        bundle_keys=(world_dir / "plane.pem.pub",),
        trust_file=world_dir / "trust.json",
        relations_file=world_dir / "relations.json",
        port=0,
        grpc_port=0,
        decision_memo_size=DEFAULT_MEMO_SIZE if memo else 0,
    )
    sidecar = Sidecar.from_config(config)
    app = SidecarApp(sidecar, extra_doors={"/bench/empty": empty_door})

    @app.api.post("/bench/framework")  # type: ignore[untyped-decorator]
    async def framework(request: Request) -> Response:
        return await as_route(empty_door, request)

    sock = bind_tcp("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn_config(app))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    door = await start_grpc(sidecar, "127.0.0.1", 0)
    while not server.started:
        await asyncio.sleep(0.01)
    print(json.dumps({"http": sock.getsockname()[1], "grpc": door.port}), flush=True)
    await task


if __name__ == "__main__":
    if "--constant-grpc" in sys.argv[2:]:
        answer_constantly()
    event_loop_runner()(main(Path(sys.argv[1]), memo="--no-memo" not in sys.argv[2:]))
