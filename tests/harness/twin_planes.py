"""Two plane replicas that differ only in ``--no-fast-writes``, each on its own nats-server (so both
see the same history and hand out the same sequences), and what of their answers must match."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from tenantguard.dev.natsserver import NatsServer

from .plane_process import PlaneProcess
from .plane_world import ADMIN_TOKEN, World

MAX_BODY = 128 * 1024  # a batch of 1,001 changes fits: change_batch_too_large, not the body bound
CELLS = 4
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
ISSUED = 1_767_225_600


def as_json(value: Any) -> bytes:
    return json.dumps(value).encode()


def send(client: httpx.Client, path: str, headers: list[tuple[str, str]], body: Any) -> httpx.Response:
    return client.post(path, headers=headers, content=body)


def answer(response: httpx.Response) -> dict[str, Any]:
    """What must match: all but the date, and the replica's own address (in a redirect)."""
    here = f"{response.request.url.host}:{response.request.url.port}"
    headers = sorted((k, v.replace(here, "HERE")) for k, v in response.headers.multi_items() if k != "date")
    return {"status": response.status_code, "headers": headers, "body": response.content}


def twin_planes(tmp_path: Path) -> Iterator[tuple[PlaneProcess, PlaneProcess, NatsServer, NatsServer]]:
    """The fast replica and the framework one (``--no-fast-writes``), stopped when the iterator closes."""
    args = ("--cells", str(CELLS), "--max-body-bytes", str(MAX_BODY))
    with NatsServer(tmp_path / "nats-fast") as fast_nats, NatsServer(tmp_path / "nats-framework") as slow_nats:
        (tmp_path / "fast").mkdir()
        (tmp_path / "framework").mkdir()
        worlds = World(tmp_path / "fast", fast_nats), World(tmp_path / "framework", slow_nats)
        try:
            yield worlds[0].start(*args), worlds[1].start(*args, "--no-fast-writes"), fast_nats, slow_nats
        finally:
            for world in worlds:
                for plane in world.planes:
                    plane.stop()
