"""Loopback TCP proxies a test controls, to cut, blackhole or slow one network path on demand.

Why: partitions cannot be made on one machine with the kernel alone (no root, no netns in CI),
yet a partition is what separates "a node died" from "a node is alive but unreachable": the
process keeps its sockets, nothing sends a FIN or an RST, and only the peers' own timers notice.
So every path a test wants to cut (a client to its NATS node, one NATS route) goes through its
own :class:`NetProxy`, and the test sets, per direction:

- ``pass``: bytes flow (the default, and what :meth:`NetProxy.heal` restores);
- ``blackhole``: bytes are read and thrown away; connections stay open and new ones are accepted
  (and never dialled upstream while both directions are blackholed), no FIN, no RST: a pulled
  cable as the peers see it until their keepalives give up;
- ``delay``: bytes flow ``seconds`` late, in order;
- :meth:`NetProxy.drop`: every connection is closed and new ones are closed as soon as accepted
  (a crashed middlebox, a firewall sending resets), until healed.

``direction`` is ``up`` (client to server), ``down`` (server to client) or ``both``, so one-way
faults (the server hears the client, the client hears nothing) are one call.

A connection that lost bytes to a blackhole is closed when the path heals: its byte stream has a
hole in it (a real network would have retransmitted; a proxy cannot), and both ends have given up
on it by then anyway. One :class:`Network` runs all the proxies of a test on one event-loop thread
(the machine has few cores); every method of a proxy may be called from any thread and returns once
the proxy acts on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from enum import StrEnum
from types import TracebackType
from typing import Any, Final, Self, TypeVar

_T = TypeVar("_T")
CHUNK: Final = 64 * 1024
QUEUE_CHUNKS: Final = 256  # per direction of a connection: a delayed path holds at most this many reads
CALL_TIMEOUT: Final = 10.0  # seconds a control call from the test thread may take


class Direction(StrEnum):
    UP = "up"  # client -> server
    DOWN = "down"  # server -> client
    BOTH = "both"


class Mode(StrEnum):
    PASS = "pass"
    BLACKHOLE = "blackhole"
    DELAY = "delay"


@dataclass(slots=True)
class PathState:
    """How one direction of a proxy treats bytes now."""

    mode: Mode = Mode.PASS
    delay: float = 0.0


@dataclass(slots=True)
class Counters:
    """What went through a proxy, for assertions and for telling a quiet path from a cut one."""

    accepted: int = 0
    closed_by_drop: int = 0
    forwarded: dict[str, int] = field(default_factory=lambda: {"up": 0, "down": 0})
    swallowed: dict[str, int] = field(default_factory=lambda: {"up": 0, "down": 0})


class Network:
    """One event-loop thread hosting any number of :class:`NetProxy`; close it to stop them all."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="netproxy", daemon=True)
        self._thread.start()
        self.proxies: list[NetProxy] = []

    def call(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coro`` on the network's loop and wait for its result (bounded)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(CALL_TIMEOUT)

    def proxy(self, target_host: str, target_port: int, *, host: str = "127.0.0.1", port: int = 0,
              name: str = "") -> NetProxy:
        """A proxy listening on ``host:port`` (0: a free port, bound now) that forwards to the target."""
        proxy = NetProxy(self, target_host, target_port, name=name or f"proxy-{len(self.proxies)}")
        self.call(proxy._listen(host, port))
        self.proxies.append(proxy)
        return proxy

    def heal_all(self) -> None:
        for proxy in self.proxies:
            proxy.heal()

    def close(self) -> None:
        for proxy in self.proxies:
            with contextlib.suppress(Exception):
                self.call(proxy._close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(CALL_TIMEOUT)
        if not self._thread.is_alive():
            self.loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class _Link:
    """One proxied connection: the client's stream, the server's (None while blackholed at accept)."""

    def __init__(self, client: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        self.client_reader, self.client_writer = client
        self.server_reader: asyncio.StreamReader | None = None
        self.server_writer: asyncio.StreamWriter | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.tainted = False  # lost bytes to a blackhole: closed at the next heal

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for writer in (self.client_writer, self.server_writer):
            if writer is not None:
                writer.transport.abort()


class NetProxy:
    """A TCP proxy from a loopback port to one target; see the module docstring."""

    def __init__(self, network: Network, target_host: str, target_port: int, *, name: str) -> None:
        self.network = network
        self.name = name
        self.target = (target_host, target_port)
        self.paths = {Direction.UP: PathState(), Direction.DOWN: PathState()}
        self.dropping = False
        self.counters = Counters()
        self.host = ""
        self.port = 0
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()

    @property
    def url(self) -> str:
        """``nats://host:port``: what a NATS client is given instead of the node's own URL."""
        return f"nats://{self.host}:{self.port}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # ------------------------------------------------------------------ control (any thread)

    def blackhole(self, direction: Direction | str = Direction.BOTH) -> None:
        self._set(Direction(direction), PathState(Mode.BLACKHOLE))

    def delay(self, seconds: float, direction: Direction | str = Direction.BOTH) -> None:
        if seconds < 0:
            raise ValueError("a delay is not negative")
        self._set(Direction(direction), PathState(Mode.DELAY, seconds))

    def drop(self) -> None:
        """Close every connection now and every new one as soon as it is accepted, until :meth:`heal`."""
        self.network.call(self._drop())

    def heal(self) -> None:
        """Back to pass both ways; connections that lost bytes to a blackhole are closed."""
        self.network.call(self._heal())

    def mode(self, direction: Direction | str) -> Mode:
        return self.paths[Direction(direction)].mode

    @property
    def cut(self) -> bool:
        """True while nothing gets through (dropping, or blackholed both ways)."""
        return self.dropping or all(p.mode is Mode.BLACKHOLE for p in self.paths.values())

    def _set(self, direction: Direction, state: PathState) -> None:
        async def apply() -> None:
            for d in (Direction.UP, Direction.DOWN) if direction is Direction.BOTH else (direction,):
                self.paths[d] = PathState(state.mode, state.delay)

        self.network.call(apply())

    # ------------------------------------------------------------------ the loop's side

    async def _listen(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._accept, host, port)
        sock = self._server.sockets[0].getsockname()
        self.host, self.port = sock[0], sock[1]

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for link in list(self._links):
            link.close()
        self._links.clear()

    async def _drop(self) -> None:
        self.dropping = True
        for link in list(self._links):
            link.close()
            self.counters.closed_by_drop += 1
        self._links.clear()

    async def _heal(self) -> None:
        self.dropping = False
        self.paths = {Direction.UP: PathState(), Direction.DOWN: PathState()}
        for link in list(self._links):
            if link.tainted:
                link.close()
                self._links.discard(link)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.counters.accepted += 1
        if self.dropping:
            writer.transport.abort()
            return
        link = _Link((reader, writer))
        self._links.add(link)
        try:
            # blackholed both ways: the client's SYN is answered (by the listening socket) and its
            # bytes swallowed; the server never hears of it, as across a real partition
            first = b""
            while self.cut and not self.dropping:
                try:
                    data = await asyncio.wait_for(reader.read(CHUNK), 0.05)
                except TimeoutError:
                    continue
                if not data:
                    return
                if self.cut:
                    link.tainted = True
                    self.counters.swallowed["up"] += len(data)
                else:  # healed while this read waited: the bytes are the link's first
                    first = data
            if self.dropping:
                return
            try:
                server_reader, server_writer = await asyncio.wait_for(
                    asyncio.open_connection(*self.target), CALL_TIMEOUT)
            except (OSError, TimeoutError):  # the target is down: the client sees a closed connection
                return
            link.server_reader, link.server_writer = server_reader, server_writer
            if first:
                server_writer.write(first)
                self.counters.forwarded["up"] += len(first)
            link.tasks = [asyncio.create_task(self._pump(link, reader, server_writer, Direction.UP)),
                          asyncio.create_task(self._pump(link, server_reader, writer, Direction.DOWN))]
            await asyncio.gather(*link.tasks, return_exceptions=True)
        finally:
            link.close()
            self._links.discard(link)

    async def _pump(self, link: _Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    direction: Direction) -> None:
        """One direction: read, then pass, swallow or hold each chunk as the path says at read time.
        Every chunk goes through one bounded queue, so a delay never reorders bytes."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(QUEUE_CHUNKS)
        sender = asyncio.create_task(self._send(queue, writer, direction))
        try:
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    break
                path = self.paths[direction]
                if path.mode is Mode.BLACKHOLE:
                    link.tainted = True
                    self.counters.swallowed[direction.value] += len(data)
                    continue
                due = time.monotonic() + (path.delay if path.mode is Mode.DELAY else 0.0)
                await queue.put((due, data))
            await queue.join()
        finally:
            sender.cancel()
            with contextlib.suppress(Exception):
                if reader.at_eof():  # a half-close passes on as one
                    writer.write_eof()
                else:
                    writer.transport.abort()

    async def _send(self, queue: asyncio.Queue[tuple[float, bytes]], writer: asyncio.StreamWriter,
                    direction: Direction) -> None:
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self.counters.forwarded[direction.value] += len(data)
            writer.write(data)
            await writer.drain()
            queue.task_done()

    def __repr__(self) -> str:
        return (f"NetProxy({self.name}: {self.address} -> {self.target[0]}:{self.target[1]}, "
                f"up={self.paths[Direction.UP].mode}, down={self.paths[Direction.DOWN].mode}, "
                f"dropping={self.dropping})")
