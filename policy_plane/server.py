"""Run one plane replica: start the state (NATS), then serve HTTP on a pre-bound socket.

The socket is bound before serving so that port 0 works and the real address can be
announced as one JSON line on stdout, the same convention as the sidecar. SIGINT and
SIGTERM stop HTTP first, then the NATS side.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import sys

import uvicorn
from tenantguard.server.serving import (
    bind_tcp,
    bound_tls_handshakes,
    event_loop_runner,
    http_protocol,
    limit_server_logs,
    serve_tls,
)
from tenantguard.util.urls import is_loopback_host

from .app import create_server_app
from .runtime import Plane

log = logging.getLogger(__name__)


def announce(http: str, *, tls: bool = False) -> None:
    print(json.dumps({"event": "listening", "http": http, **({"tls": True} if tls else {})}), flush=True)


async def serve(plane: Plane, stop: asyncio.Event | None = None) -> None:
    """Serve until ``stop`` is set or SIGINT/SIGTERM arrives."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    config = plane.config
    plane.metrics.wire.log_limit = limit_server_logs()  # a flood of bad requests cannot flood the log
    sock = bind_tcp(config.host, config.port, flag="--port")
    if config.tls is None and not is_loopback_host(config.host):
        log.warning("serving plain HTTP on %s: the admin token and the join secrets sent here cross the network "
                    "readable; serve HTTPS with --tls-cert/--tls-key (docs/operations.md, TLS for the plane API)",
                    config.host)
    start = loop.create_task(plane.start())
    waiter = loop.create_task(stop.wait())
    await asyncio.wait({start, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if not start.done():  # stopped while still bootstrapping
        start.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await start
        await plane.stop()
        sock.close()
        return
    waiter.cancel()
    try:
        start.result()
    except BaseException:
        await plane.stop()
        sock.close()
        raise
    # ws="none": no route takes a WebSocket, and an upgrade would skip the HTTP guards.
    uv = uvicorn.Server(uvicorn.Config(create_server_app(plane), log_level="warning", access_log=False,
                                       lifespan="off", timeout_graceful_shutdown=5, ws="none", server_header=False,
                                       http=http_protocol(plane.config.http_limits, plane.metrics.wire),
                                       limit_concurrency=plane.config.http_limits.max_connections))
    if plane.config.tls is not None:
        serve_tls(uv.config, plane.config.tls.ssl_context())
        bound_tls_handshakes(loop, plane.config.http_limits.read_timeout)
    uv.install_signal_handlers = lambda: None  # type: ignore[attr-defined]  # we own the signals
    http_task = loop.create_task(uv.serve(sockets=[sock]))
    while not uv.started and not http_task.done():
        await asyncio.sleep(0.01)
    if http_task.done():
        await plane.stop()
        http_task.result()
    announce("{}:{}".format(*sock.getsockname()[:2]), tls=config.tls is not None)
    await stop.wait()
    uv.should_exit = True
    await http_task
    await plane.stop()


def run(plane: Plane) -> None:
    """Blocking entry point for the CLI."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    event_loop_runner()(serve(plane))

