"""Run one sidecar: HTTP (uvicorn) and gRPC (grpc.aio) on one event loop.

One loop means every decision runs on one thread, which is what the embedded Rego
engine wants (an engine belongs to the thread that built it) and keeps the decision
path free of locks. Sockets are bound here, before serving, so port 0 works and the
real ports can be announced.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import uvicorn
from starlette.types import ASGIApp
from tenantguard.server.serving import (
    HttpLimits,
    WireCounts,
    bind_tcp,
    bind_unix,
    event_loop_runner,
    http_protocol,
    limit_server_logs,
)

from .app import create_app, create_ops_app
from .decision_log import JetStreamSink
from .feed import Feed
from .grpc_ext_authz import GrpcDoor, start_grpc
from .runtime import Sidecar, settle_heap

log = logging.getLogger(__name__)

# Said once at start by a sidecar that has no bundle and nothing that will bring one: it serves
# (the test harness and probes rely on an empty sidecar answering 503 / no_active_bundle), but a
# newcomer who left out --bundle would otherwise see only "gRPC health: NOT_SERVING".
NOTHING_TO_SERVE = ("no policy bundle and nothing that brings one (no --bundle, no --nats, none kept in "
                    "--state-dir): this sidecar stays not ready and denies every decision (no_active_bundle). "
                    "Give it --bundle FILE --bundle-key PUB (`tenantguard bundle build DIR -o FILE --signing-key "
                    "KEY` makes FILE), or --nats URL --plane-key PUB to follow a plane; `tenantguard dev` runs "
                    "a whole local stack")


@dataclass(frozen=True)
class Listening:
    http: str
    grpc: str | None
    ops: str | None = None

    def announce(self) -> None:
        """One JSON line on stdout that supervisors (and tests) can wait for."""
        line = {"event": "listening", "http": self.http, "grpc": self.grpc}
        if self.ops is not None:
            line["ops"] = self.ops
        print(json.dumps(line), flush=True)


async def serve(sidecar: Sidecar, stop: asyncio.Event | None = None) -> None:
    """Serve until ``stop`` is set or SIGINT/SIGTERM arrives; then shut both doors down (and the feed)."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    feed = start_feed(sidecar)  # persisted state is loaded before the first request is answered
    settle_heap()  # the bundle and relations loaded so far stay out of the collector's rounds
    sidecar.settle_heap_on_reload = True
    if feed is not None:
        await feed.start()
    registrar = sidecar.exchange_keys.registrar
    if registrar is not None:  # --plane-url: register the exchange key, in the background
        await registrar.start()
    try:
        await _serve_doors(sidecar, stop, on_stop=feed.persist if feed is not None else None)
    finally:
        sidecar.search_runner.close()
        if registrar is not None:
            await registrar.stop()
        if feed is not None:
            await feed.stop()


def start_feed(sidecar: Sidecar) -> Feed | None:
    """With ``--nats``: restore the feed's persisted state and send decision records to TG_DECISIONS."""
    if sidecar.config.nats_url is None:
        return None
    feed = Feed.for_sidecar(sidecar)
    feed.load_persisted()
    sidecar.decision_log.sink = JetStreamSink(feed, sidecar.config.service)
    return feed


def uvicorn_config(app: ASGIApp, limits: HttpLimits | None = None, counts: WireCounts | None = None) -> uvicorn.Config:
    """How the sidecar's HTTP server runs.

    ``proxy_headers=False``: uvicorn would otherwise take the client address from
    ``X-Forwarded-For`` when the peer is loopback, and the loopback guard must see the
    real peer. No access log and no ``server`` header: both cost on every decision.
    ``ws="none"``: no route takes a WebSocket, and an upgraded connection would skip the
    request guard (which judges HTTP requests only). ``limits``: read and write deadlines, head
    bound, connections; ``counts``: what they cut, for the metrics.
    """
    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5,
                          proxy_headers=False, server_header=False, ws="none",
                          http=http_protocol(limits, counts),
                          limit_concurrency=(limits or HttpLimits()).max_connections)


@dataclass(frozen=True)
class _Http:
    """One running uvicorn server: stop it by setting ``server.should_exit``, then await ``task``."""

    server: uvicorn.Server
    task: asyncio.Task[None]
    address: str


async def _start_http(app: ASGIApp, sock: socket.socket, address: str, limits: HttpLimits | None = None,
                      counts: WireCounts | None = None) -> _Http:
    """Serve ``app`` on an already bound ``sock``; returns once it accepts (or raises its startup error)."""
    server = uvicorn.Server(uvicorn_config(app, limits, counts))
    server.install_signal_handlers = lambda: None  # type: ignore[attr-defined]  # we own the signals
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started and not task.done():
        await asyncio.sleep(0.01)
    if task.done():
        task.result()  # surface the startup error
    return _Http(server, task, address)


async def _serve_doors(sidecar: Sidecar, stop: asyncio.Event,
                       on_stop: Callable[[], Awaitable[None]] | None = None) -> None:
    config = sidecar.config
    sidecar.metrics.wire.log_limit = limit_server_logs()  # a flood of bad requests cannot flood the log
    sock = bind_unix(str(config.uds)) if config.uds else bind_tcp(config.host, config.port, flag="--port")
    if not config.uds:  # discovery documents name the real port (port 0 binds a free one)
        host, port = sock.getsockname()[:2]
        sidecar.bound_url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    http = await _start_http(create_app(sidecar), sock,
                             str(config.uds) if config.uds else "{}:{}".format(*sock.getsockname()[:2]),
                             config.http_limits, sidecar.metrics.wire)
    ops: _Http | None = None
    door: GrpcDoor | None = None
    try:
        if config.ops_port is not None:  # probes and metrics only, on --ops-host
            ops_sock = bind_tcp(config.ops_host, config.ops_port, flag="--ops-port")
            ops = await _start_http(create_ops_app(sidecar), ops_sock, "{}:{}".format(*ops_sock.getsockname()[:2]),
                                    config.http_limits, sidecar.metrics.wire)
        if config.grpc_port is not None:
            door = await start_grpc(sidecar, config.host, config.grpc_port,
                                   max_message_bytes=config.grpc_max_message_bytes, limits=config.grpc_limits)
    except BaseException:  # a port that is taken: stop what started, so only the typed error is printed
        await _stop_http([h for h in (http, ops) if h is not None])
        raise
    Listening(http.address, f"{config.host}:{door.port}" if door else None,
              ops.address if ops else None).announce()
    await stop.wait()
    if on_stop is not None:
        # Persist the feed's state before the drains below: a supervisor that loses patience
        # with a slow shutdown (SIGKILL) must not cost the relations a restart serves from.
        try:
            await on_stop()
        except Exception:  # the final persist after the feed stops tries again
            log.exception("persisting the feed state at stop failed")
    listeners = [h for h in (http, ops) if h is not None]
    for listener in listeners:  # all drains run at once
        listener.server.should_exit = True
    if door is not None:
        await door.stop(grace=2)
    await _stop_http(listeners)


async def _stop_http(listeners: list[_Http]) -> None:
    """Ask every listener to drain, then wait for all of them."""
    for listener in listeners:
        listener.server.should_exit = True
    for listener in listeners:
        await listener.task


def configure_logging() -> None:
    """Log lines on stderr with time, level and logger. Called before the sidecar is built too, so what
    it says while loading files (a rejected --bundle) reads as a log line, not as a bare second copy
    of the error line Python's last-resort handler would print."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def run(sidecar: Sidecar) -> None:
    """Blocking entry point for the CLI."""
    configure_logging()
    if not sidecar.core.ready and sidecar.config.nats_url is None:
        log.warning(NOTHING_TO_SERVE)
    event_loop_runner()(serve(sidecar))

