"""How the services serve HTTP: listening sockets bound before serving, the event loop, and
uvicorn's protocol with two changes (JSON 400s, one send per response).

Binding first lets port 0 work (the real port is announced afterwards) and lets one
place get the socket options right for every service.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from tenantguard.errors import ConfigError, InvalidInput


def bind_tcp(host: str, port: int, *, flag: str = "port", door: str = "") -> socket.socket:
    """A non-blocking listening TCP socket on ``host:port`` (0 = any free port).

    A port already taken (or a host that is not this machine's) is a :class:`ConfigError` that
    names the address (and ``door``, e.g. "gRPC ext_authz") and what to do (``flag``: the option
    that chose the port), so the CLI prints one line instead of a traceback.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose
    # proto says TCP, and without it Nagle + delayed ACK add ~40 ms to every response.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise cannot_listen(f"{host}:{port}" + (f" ({door})" if door else ""), exc, flag=flag) from None
    sock.setblocking(False)
    return sock


def bind_unix(path: str) -> socket.socket:
    """A listening unix socket (0660: the service and its group only).

    A socket file left by a process that is gone is replaced; one that a live process still
    accepts on is refused, so a second sidecar never takes the door from a running one.
    """
    if _unix_socket_answers(path):
        raise ConfigError(f"cannot listen on {path}: another process is serving on it; stop that process, "
                          "or choose another --uds path")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, 0o660)
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise cannot_listen(path, exc) from None
    sock.setblocking(False)
    return sock


def _unix_socket_answers(path: str) -> bool:
    """True when something accepts connections on the unix socket ``path`` (a stale file refuses)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except TimeoutError:  # alive, only too busy to accept now
        return True
    except OSError:  # absent, not a socket, or nobody listening: free to replace
        return False
    finally:
        probe.close()
    return True


def cannot_listen(address: str, exc: OSError, *, flag: str = "port") -> ConfigError:
    """The one-line error for a listening address the service cannot take; ``flag`` names the option
    to change (``--port``, ``--ops-port``), or is a plain word when no option chose it."""
    if exc.errno == errno.EADDRINUSE:
        return ConfigError(f"cannot listen on {address}: another process is using it; stop that process, "
                           f"or choose another {flag} (0 picks a free one)")
    return ConfigError(f"cannot listen on {address}: {exc.strerror or exc}")


def event_loop_runner() -> Any:
    """``uvloop.run`` when installed (it comes with uvicorn[standard]; less CPU per request), else ``asyncio.run``."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run


DEFAULT_READ_TIMEOUT = 30.0
DEFAULT_WRITE_TIMEOUT = 30.0
DEFAULT_MAX_HEAD_BYTES = 64 * 1024
DEFAULT_MAX_CONNECTIONS = 1000

# The --help of each HttpLimits setting, shared by the sidecar's and the plane's CLI (as natsconn.HELP is).
HTTP_HELP = {
    "read_timeout": "Seconds a client has to send a whole HTTP request, head and body, from its first byte (or "
                    "from connecting); a slower one is answered 408 and closed (1..3600)",
    "max_head_bytes": "Bound on an HTTP request's line and headers together (4 KiB..1 MiB; beyond it 431)",
    "write_timeout": "Seconds a client may leave its answers unread (the server's send buffer full and not "
                     "draining) before its connection is cut; a slow reader that keeps reading is never cut "
                     "(1..3600)",
    "max_connections": "Open HTTP connections (or requests in flight) this server takes (2..100000); past them a "
                       "request is answered 503 too_many_connections with Retry-After",
}
MAX_HEAD_FIELDS = 256


@dataclass(frozen=True)
class HttpLimits:
    """What one HTTP request may cost the server before a route sees it.

    ``read_timeout``: seconds from a connection's open (or a request's first byte) until the
    request is read whole, head and body; a client that trickles bytes (slowloris) or goes
    quiet mid-request is answered 408 and closed, instead of holding a connection forever.
    ``max_head_bytes``: the request line and headers together (uvicorn reads heads of any
    size into memory); beyond it, and beyond :data:`MAX_HEAD_FIELDS` header lines, 431.
    ``max_connections``: open connections (or requests in flight) past which a request is
    answered 503 ``too_many_connections`` (uvicorn's ``limit_concurrency``): clients that
    never read their answers, or a flood of connections, cannot take every socket and task.
    ``write_timeout``: seconds a connection's send buffer may stay full (asyncio paused the
    writer) or, once closed, keep unsent bytes, without any of them draining; then the
    connection is aborted. A client that pipelines requests and never reads its answers would
    otherwise hold the connection, its task and the buffered answers forever. Any progress
    starts the time again: a slow reader that keeps reading is never cut.
    """

    read_timeout: float = DEFAULT_READ_TIMEOUT
    write_timeout: float = DEFAULT_WRITE_TIMEOUT
    max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    def __post_init__(self) -> None:
        if not 1 <= self.read_timeout <= 3600:
            raise ConfigError("the HTTP read timeout must be within 1..3600 s")
        if not 1 <= self.write_timeout <= 3600:
            raise ConfigError("the HTTP write timeout must be within 1..3600 s")
        if not 4096 <= self.max_head_bytes <= 1024 * 1024:
            raise ConfigError("the HTTP head bound must be within 4 KiB..1 MiB")
        if not 2 <= self.max_connections <= 100_000:
            raise ConfigError("the HTTP connection bound must be within 2..100000")


DEFAULT_GRPC_MAX_STREAMS = 1000
DEFAULT_GRPC_MAX_CONNECTIONS = 1000
DEFAULT_GRPC_MAX_CONNECTION_IDLE = 300.0
DEFAULT_GRPC_MAX_CONNECTION_AGE = 1800.0
GRPC_AGE_GRACE = 30.0  # in-flight calls on a connection past its age: above Envoy's check timeout (1 s here)
GRPC_KEEPALIVE = 60.0  # the server pings a connection this often...
GRPC_KEEPALIVE_TIMEOUT = 20.0  # ...and closes it when no answer comes within this
GRPC_MIN_CLIENT_PING = 10.0  # a client (Envoy's connection_keepalive) may ping this often, even without calls

GRPC_HELP = {
    "max_connections": "Open gRPC connections this server takes (1..100000); past them a new connection is "
                       "closed at once (Envoy opens few, and retries its next check on another)",
    "max_streams": "Calls one gRPC connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS, "
                   "1..100000): grpcio and Envoy queue the calls past it",
    "max_connection_idle": "Seconds a gRPC connection may stay without calls before it is closed (GOAWAY; "
                           "Envoy reconnects at its next check); 0 never",
    "max_connection_age": f"Seconds a gRPC connection may live (+/- 10 %) before it is closed (GOAWAY; calls "
                          f"under way get {GRPC_AGE_GRACE:g} s to finish, Envoy reconnects); 0 never",
}


@dataclass(frozen=True)
class GrpcLimits:
    """What one gRPC connection may hold, and how many there may be, as gRPC server options.

    Without them a connection lives until its client ends it: an idle or half-open one (a peer
    gone without a FIN) holds its socket and buffers forever, and one connection may open as
    many streams as it likes, each able to hold a message of the door's largest size.
    ``max_streams`` bounds streams per connection (HTTP/2 ``SETTINGS_MAX_CONCURRENT_STREAMS``:
    grpcio and Envoy queue calls past it; a stream opened past it anyway is refused,
    ``REFUSED_STREAM``; the default sits far above what one Envoy has in flight, since a client
    reusing a slot the instant a call ends can meet a refusal); ``max_connection_idle``
    closes a connection without calls; ``max_connection_age`` closes any connection after a while,
    letting calls under way finish within :data:`GRPC_AGE_GRACE`. Both close with GOAWAY, which
    Envoy and gRPC clients answer by opening a new connection for their next call. Keepalive
    pings find half-open connections (``keepalive``: a peer that answers no ping within
    ``keepalive_timeout`` is gone, with whatever calls it held open); a client may ping every
    :data:`GRPC_MIN_CLIENT_PING` s, so Envoy's ``connection_keepalive`` is never taken for abuse.
    ``max_connections`` bounds open connections (``grpc.max_allowed_incoming_connections``: one
    past it is closed as soon as it is accepted), as ``--max-connections`` does for HTTP.
    """

    max_streams: int = DEFAULT_GRPC_MAX_STREAMS
    max_connections: int = DEFAULT_GRPC_MAX_CONNECTIONS
    max_connection_idle: float = DEFAULT_GRPC_MAX_CONNECTION_IDLE  # 0: never
    max_connection_age: float = DEFAULT_GRPC_MAX_CONNECTION_AGE  # 0: never
    keepalive: float = GRPC_KEEPALIVE
    keepalive_timeout: float = GRPC_KEEPALIVE_TIMEOUT

    def __post_init__(self) -> None:
        if not 1 <= self.max_streams <= 100_000:
            raise ConfigError("the gRPC stream bound must be within 1..100000")
        if not 1 <= self.max_connections <= 100_000:
            raise ConfigError("the gRPC connection bound must be within 1..100000")
        if not (1 <= self.keepalive <= 86400 and 1 <= self.keepalive_timeout <= 3600):
            raise ConfigError("the gRPC keepalive must be within 1..86400 s, its timeout within 1..3600 s")
        for name in ("max_connection_idle", "max_connection_age"):
            seconds = getattr(self, name)
            if seconds != 0 and not 1 <= seconds <= 7 * 86400:
                raise ConfigError(f"the gRPC {name.replace('_', ' ')} must be 0 (never) or within 1..604800 s")

    def options(self) -> list[tuple[str, int]]:
        """The ``grpc.aio.server(options=...)`` that enforce these limits."""
        options = [("grpc.max_concurrent_streams", self.max_streams),
                   ("grpc.max_allowed_incoming_connections", self.max_connections),
                   ("grpc.keepalive_time_ms", _ms(self.keepalive)),
                   ("grpc.keepalive_timeout_ms", _ms(self.keepalive_timeout)),
                   # gRPC >= 1.6x times a keepalive ping out by this one (default 60 s), not the above
                   ("grpc.http2.ping_timeout_ms", _ms(self.keepalive_timeout)),
                   ("grpc.keepalive_permit_without_calls", 1),
                   ("grpc.http2.min_ping_interval_without_data_ms", _ms(GRPC_MIN_CLIENT_PING))]
        if self.max_connection_idle:
            options.append(("grpc.max_connection_idle_ms", _ms(self.max_connection_idle)))
        if self.max_connection_age:
            options += [("grpc.max_connection_age_ms", _ms(self.max_connection_age)),
                        ("grpc.max_connection_age_grace_ms", _ms(GRPC_AGE_GRACE))]
        return options


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


class _Refused(Exception):
    """Raised inside a parser callback: the request is answered ``status`` with a JSON body, then closed."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


_REASONS = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


SERVER_LOGGER = "uvicorn.error"  # where uvicorn's protocol says what each connection did wrong
LOG_BURST = 20
LOG_INTERVAL = 60.0


class LogLimit(logging.Filter):
    """At most ``burst`` warnings of the HTTP server per ``interval`` seconds; the rest are counted.

    uvicorn logs a line for every request it cannot parse or refuses ("Invalid HTTP request
    received.", "Exceeded concurrency limit."): a client sending garbage writes the service's
    log at line rate, burying what matters and filling disks. Errors (an exception in a route)
    always pass, and the filter sits on uvicorn's logger only: the services' own lines are never
    dropped. When the burst is spent, one line says lines are being suppressed; the first line
    of a later interval is preceded by one saying how many were.
    """

    def __init__(self, burst: int = LOG_BURST, interval: float = LOG_INTERVAL) -> None:
        super().__init__()
        self.burst, self.interval = burst, interval
        self.suppressed = 0  # since start, for the metric
        self._lock = threading.Lock()  # handlers may log from other threads
        self._window = -interval
        self._passed = 0
        self._dropped = 0  # in the window under way

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR or getattr(record, "tg_summary", False):
            return True
        with self._lock:
            now = time.monotonic()
            reported = 0
            if now - self._window >= self.interval:
                self._window, self._passed, reported, self._dropped = now, 0, self._dropped, 0
            passes = self._passed < self.burst
            if passes:
                self._passed += 1
            else:
                self._dropped += 1
                self.suppressed += 1
            first_dropped = not passes and self._dropped == 1
        if reported:
            self._say(record, "%d warnings of the HTTP server were suppressed in the last %g s", reported,
                      self.interval)
        elif first_dropped:
            self._say(record, "more than %d warnings of the HTTP server in %g s: the rest of this interval's are "
                      "counted (tg_log_lines_suppressed), not logged", self.burst, self.interval)
        return passes

    def _say(self, like: logging.LogRecord, msg: str, *args: Any) -> None:
        """A line of our own beside ``like``'s, which this filter lets through."""
        logger = logging.getLogger(like.name)
        summary = logger.makeRecord(like.name, logging.WARNING, __file__, 0, msg, args, None)
        summary.tg_summary = True
        logger.handle(summary)


def limit_server_logs(burst: int = LOG_BURST, interval: float = LOG_INTERVAL) -> LogLimit:
    """Install a :class:`LogLimit` on the HTTP server's logger (once per process: the logger is
    the process's) and return it."""
    logger = logging.getLogger(SERVER_LOGGER)
    for existing in logger.filters:
        if isinstance(existing, LogLimit):
            return existing
    limit = LogLimit(burst, interval)
    logger.addFilter(limit)
    return limit


class WireCounts:
    """Connections the HTTP protocol cut, by reason; a Prometheus collector, read at scrape.

    One per service, shared by its listeners (the sidecar's doors and ops port count together).
    Plain integers: the protocol adds to them on the event loop, a scrape only reads them.
    """

    def __init__(self, log_limit: LogLimit | None = None) -> None:
        self.read_timeouts = 0  # requests answered 408
        self.write_timeouts = 0  # connections aborted: answers left unread past the write timeout
        self.log_limit = log_limit

    def cut_for_writing(self) -> None:
        self.write_timeouts += 1

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily

        cut = CounterMetricFamily("tg_http_connections_cut", "HTTP connections this server cut, by reason: "
                                  "read_timeout (a request not received in time, 408), write_timeout (answers "
                                  "left unread)", labels=["reason"])
        cut.add_metric(["read_timeout"], self.read_timeouts)
        cut.add_metric(["write_timeout"], self.write_timeouts)
        yield cut
        if self.log_limit is not None:
            yield CounterMetricFamily("tg_log_lines_suppressed", "Lines of the HTTP server's per-request "
                                      "warnings (unparseable requests, refusals) dropped by the log rate limit",
                                      value=self.log_limit.suppressed)


def http_protocol(limits: HttpLimits | None = None, counts: WireCounts | None = None) -> type[Any] | str:
    """The uvicorn HTTP protocol the services run: httptools, with these changes:

    * uvicorn's own 400 (a request it cannot parse: a bad request line, header or framing) is
      answered as the JSON error body every other refusal has, not as plain text;
    * trailer fields of a chunked body are dropped, never appended to the request's headers
      (httptools reports them like headers and uvicorn added them to the scope the route was
      already reading: an ``Authorization`` sent after the body authenticated the request);
    * a request target with a fragment (``#``; the parser drops it silently, so a door would
      decide on less than was sent), an absolute-form target whose authority is not the Host
      header, or any other form than ``/path`` or ``OPTIONS *``, is refused 400;
    * ``limits`` (:class:`HttpLimits`): a read deadline per request, a bound on its head, a write
      deadline while the client leaves its answers unread; ``counts`` counts what they cut.

    ``"auto"`` where httptools is not installed.
    """
    bound: HttpLimits = limits or HttpLimits()
    tally = counts or WireCounts()
    try:
        from uvicorn.protocols.http.flow_control import service_unavailable
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "auto"

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        # One timer per connection, re-armed when it fires, and a deadline per phase: a request
        # costs two clock reads, not a timer made and cancelled (measured: ~8 % of the HTTP floor).
        _read_timer: asyncio.TimerHandle | None = None
        _write_timer: asyncio.TimerHandle | None = None  # armed only while the transport paused the writer
        _deadline: float | None = None  # when the phase under way (a request being read, a wait) must end
        _in_message = False  # between a request's first byte and its end
        _head_done = False  # its headers are complete: what the parser reports now is a trailer
        _head_bytes = 0
        _head_fields = 0
        _refusal: _Refused | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            coalescing = CoalescingTransport(transport, asyncio.get_running_loop(), linger=bound.write_timeout,
                                             on_cut=tally.cut_for_writing)
            super().connection_made(cast(asyncio.Transport, coalescing))  # a Transport by delegation
            self._start_clock()  # a connection that never sends a byte is closed too

        def connection_lost(self, exc: Exception | None) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None
            super().connection_lost(exc)

        def pause_writing(self) -> None:
            """The send buffer is past its high-water mark: the client is not reading (or slowly). The
            write clock runs while the writer stays paused; a drain below the low-water mark
            (``resume_writing``) stops it."""
            HttpToolsProtocol.pause_writing(self)
            if self._write_timer is None:
                self._arm_write_clock(self.transport.get_write_buffer_size())

        def _arm_write_clock(self, unsent: int) -> None:
            self._write_timer = self.loop.call_later(bound.write_timeout, self._write_timed_out, unsent)

        def resume_writing(self) -> None:
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None
            HttpToolsProtocol.resume_writing(self)

        def _write_timed_out(self, unsent: int) -> None:
            """Still paused a write timeout later: if some of the ``unsent`` bytes left meanwhile, the
            client reads, slowly (one large answer drains in many steps): wait again. If none did,
            drop the unsent answers and the connection (a close would wait for the client to read)."""
            self._write_timer = None
            if not self.flow.write_paused:
                return
            now = self.transport.get_write_buffer_size()
            if now < unsent:
                self._arm_write_clock(now)
                return
            tally.cut_for_writing()
            self.transport.abort()

        def data_received(self, data: bytes) -> None:
            if not self._in_message and self._deadline is None:  # bytes between requests (stray CRLFs)
                self._start_clock()
            HttpToolsProtocol.data_received(self, data)

        def _start_clock(self) -> None:
            self._deadline = self.loop.time() + bound.read_timeout
            if self._read_timer is None:
                self._read_timer = self.loop.call_at(self._deadline, self._read_timed_out)

        def _read_timed_out(self) -> None:
            """The phase under way is past its deadline: 408 if a request was being read, else close
            the idle connection. While an answer is being made for a request read whole (a slow
            route, a response being sent), nothing is cut: the deadline is looked at again later."""
            self._read_timer = None
            deadline = self._deadline
            if deadline is None or self.transport.is_closing():
                return  # nothing under way: the next phase starts the clock again
            if self.loop.time() < deadline:  # a later phase moved the deadline: wait for it
                self._read_timer = self.loop.call_at(deadline, self._read_timed_out)
                return
            busy = self.cycle is not None and not self.cycle.response_complete
            if busy and (self.cycle.response_started or not self._in_message):
                self._start_clock()
            elif self._in_message:
                tally.read_timeouts += 1
                self._refuse_now(_Refused(408, "request_timeout",
                                          f"the request was not received within {bound.read_timeout:g} s"))
            else:
                self.transport.close()

        def on_message_begin(self) -> None:
            HttpToolsProtocol.on_message_begin(self)
            self._in_message, self._head_done = True, False
            self._head_bytes = self._head_fields = 0
            self._start_clock()

        def on_url(self, url: bytes) -> None:
            self._head_bytes += len(url)
            if self._head_bytes > bound.max_head_bytes:
                self._head_too_large()
            HttpToolsProtocol.on_url(self, url)

        def on_header(self, name: bytes, value: bytes) -> None:
            if self._head_done:
                return  # a trailer field: never one of the request's headers
            self._head_bytes += len(name) + len(value) + 4
            self._head_fields += 1
            if self._head_bytes > bound.max_head_bytes or self._head_fields > MAX_HEAD_FIELDS:
                self._head_too_large()
            HttpToolsProtocol.on_header(self, name, value)

        def _head_too_large(self) -> None:
            self._refuse_in_parser(_Refused(431, "request_header_fields_too_large", "the request head exceeds "
                                            f"{bound.max_head_bytes} bytes or {MAX_HEAD_FIELDS} fields"))

        def _refuse_in_parser(self, refusal: _Refused) -> None:
            """Stop parsing: httptools wraps what a callback raises in an ``HttpParserError``, which
            uvicorn answers through ``send_400_response``; the refusal waits there with its own status."""
            self._refusal = refusal
            raise refusal

        def on_headers_complete(self) -> None:
            self._head_done = True
            url = self.url
            if url[:1] != b"/" or b"#" in url:  # anything but a plain origin-form target is looked at
                try:
                    _check_target(url, self.parser.get_method(), self.headers)
                except _Refused as refusal:
                    self._refuse_in_parser(refusal)
            HttpToolsProtocol.on_headers_complete(self)
            if self.pipeline and self.pipeline[0][0] is self.cycle:
                self._deadline = None  # queued behind a request being answered: its clock starts with its turn

        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            if cycle.more_body and cycle is self.cycle and self._in_message:
                self._start_clock()  # a queued request whose body is still to come
            if app is service_unavailable:  # past max_connections: the JSON body every refusal has
                app = _too_many_connections
            HttpToolsProtocol._start_asgi_task(self, cycle, app)

        def on_message_complete(self) -> None:
            self._in_message = False
            self._deadline = None
            HttpToolsProtocol.on_message_complete(self)

        def send_400_response(self, msg: str) -> None:
            refusal, self._refusal = self._refusal, None
            self._refuse_now(refusal or _Refused(400, InvalidInput.code, msg))

        def _refuse_now(self, refusal: _Refused) -> None:
            body = json.dumps({"error": refusal.code, "message": refusal.message}).encode()
            head = [b"HTTP/1.1 %d %s\r\n" % (refusal.status, _REASONS.get(refusal.status, b"Error"))]
            head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
            head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body),
                     b"connection: close\r\n\r\n"]
            self.transport.write(b"".join(head) + body)
            self.transport.close()

    return GuardedHttpToolsProtocol


def serve_tls(config: Any, context: ssl.SSLContext) -> None:
    """Have the ``uvicorn.Config`` serve TLS with ``context`` (``tenantguard.util.httptls.ServerTls``:
    TLS 1.2+, no compression, client certificates required with a client CA), not a context
    uvicorn builds from file names (its cipher default is "TLSv1"). The config is loaded first
    and its context replaced, which every uvicorn we support honours. The guarded protocol of
    :func:`http_protocol` runs above the TLS transport, so its read deadline, head bound and
    connection bound hold as over plain TCP, counted from the end of the handshake (the handshake
    itself: :func:`bound_tls_handshakes`)."""
    if not config.loaded:
        config.load()
    config.ssl = context


def bound_tls_handshakes(loop: asyncio.AbstractEventLoop, seconds: float) -> None:
    """TLS servers this loop creates give a client ``seconds`` to finish its handshake.

    uvicorn creates its servers without ``ssl_handshake_timeout``, so asyncio's and uvloop's
    default held: 60 s. A connection still in its handshake is outside every HTTP bound (the
    protocol sees it only once the handshake is done, and ``--max-connections`` does not count
    it): a peer that connects and sends no ClientHello held a socket for a minute, so 17
    connections a second kept a thousand open. The plane gives the handshake its read timeout.
    The loop's ``create_server`` is wrapped for the process's one server loop (a loop attribute,
    not a module global: nothing else in the process changes)."""
    create_server = loop.create_server
    if getattr(create_server, "tg_handshake_bound", None) is not None:
        return

    async def create(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("ssl") is not None:
            kwargs.setdefault("ssl_handshake_timeout", seconds)
        return await create_server(*args, **kwargs)

    create.tg_handshake_bound = seconds  # type: ignore[attr-defined]
    loop.create_server = create  # type: ignore[method-assign]


async def _too_many_connections(scope: Any, receive: Any, send: Any) -> None:
    """uvicorn's answer past ``limit_concurrency``, as JSON with Retry-After (it is plain text)."""
    body = json.dumps({"error": "too_many_connections",
                       "message": "this server holds as many connections as it takes; retry"}).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                            (b"retry-after", b"1"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _check_target(url: bytes, method: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """Refuse (400) a request target that is not ``/path[?query]``, ``OPTIONS *``, or an absolute
    form naming the Host header's own authority; and any fragment (see :func:`http_protocol`)."""
    if b"#" in url:
        raise _Refused(400, InvalidInput.code, "a request target carries no fragment ('#')")
    if url.startswith(b"/") or (url == b"*" and method == b"OPTIONS"):
        return
    scheme, sep, rest = url.partition(b"://")
    authority = rest.split(b"/", 1)[0].split(b"?", 1)[0]
    hosts = [value.strip().lower() for name, value in headers if name == b"host"]
    if sep and scheme.lower() in (b"http", b"https") and authority and hosts == [authority.lower()]:
        return
    raise _Refused(400, InvalidInput.code, "send the request target as /path (origin form); an absolute form "
                   "must name the Host header's authority")


class CoalescingTransport:
    """A transport whose writes made in one event-loop step leave in one ``send``.

    uvicorn writes a response's head and its body with two ``transport.write`` calls, and
    uvloop sends each at once: two system calls per response, about a tenth of the plane's
    CPU per single-tuple write (py-spy, BENCHMARKS.md). Writes are held until the loop's next
    step, then sent joined. Once :data:`HOLD_BYTES` are held they go at once, so a body
    streamed without yielding still meets the real transport's flow control (uvicorn pauses
    the sender when its buffer is full). ``close`` sends what is held first; ``abort`` drops
    it, as the real transport's would. Everything else is the real transport's.

    ``linger``: seconds a closed transport may keep unsent bytes without any of them draining
    before it is aborted (and ``on_cut`` called); a close otherwise waits for a client that
    never reads for as long as its connection stays up.
    """

    __slots__ = ("_held", "_held_bytes", "_linger", "_loop", "_on_cut", "_transport")

    HOLD_BYTES = 64 * 1024

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop, *,
                 linger: float | None = None, on_cut: Callable[[], None] | None = None) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._linger = linger
        self._on_cut = on_cut

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self._send)
        self._held.append(bytes(data))
        self._held_bytes += len(data)
        if self._held_bytes >= self.HOLD_BYTES:
            self._send()

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def _send(self) -> None:
        if not self._held:
            return
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held.clear()
        self._held_bytes = 0
        if not self._transport.is_closing():
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._held_bytes

    def write_eof(self) -> None:
        self._send()
        self._transport.write_eof()

    def close(self) -> None:
        closing = self._transport.is_closing()
        self._send()
        self._transport.close()
        if self._linger is not None and not closing and (left := self._transport.get_write_buffer_size()):
            self._loop.call_later(self._linger, self._abort_if_stuck, left)

    def _abort_if_stuck(self, left: int) -> None:
        """Closed with ``left`` bytes unsent a linger ago: wait again if some drained, else abort."""
        now = self._transport.get_write_buffer_size()
        if not now:
            return
        if now < left:
            self._loop.call_later(self._linger or 0.0, self._abort_if_stuck, now)
            return
        self._transport.abort()
        if self._on_cut is not None:
            self._on_cut()

    def abort(self) -> None:
        self._held.clear()
        self._held_bytes = 0
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
