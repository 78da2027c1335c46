"""A real HTTP server on loopback whose next answers are scripted: fail on demand, no mocks."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ALLOW = {"allow": True, "reasons": [], "decision_id": "d-1", "bundle_revision": "1", "relations_seq": 3}
DENY = {"allow": False, "reasons": ["policy_denied"], "decision_id": "d-2", "bundle_revision": "1",
        "relations_seq": 3}


class FlakyServer:
    """Each request pops the next step: ``(status, body)``, ``"drop"`` (close without an
    answer: a transport error), ``("hang", seconds)``, ``("redirect", url)``, ``("chunked", body)``
    (a 200 sent in chunks, without Content-Length) or ``("dribble", seconds)`` (a 200 whose
    body gets one byte every ``seconds``, never ending); an empty script answers ``default``."""

    def __init__(self, default: tuple[int, Any] = (200, ALLOW)) -> None:
        self.script: deque[Any] = deque()
        self.default = default
        self.closed = threading.Event()
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                with server._lock:
                    server.requests.append((self.command, self.path, dict(self.headers), body))
                    step = server.script.popleft() if server.script else server.default
                if step == "drop":
                    self.close_connection = True
                    return
                if isinstance(step, tuple) and step[0] == "hang":
                    time.sleep(step[1])
                    self.close_connection = True
                    return
                if isinstance(step, tuple) and step[0] == "chunked":  # a body without Content-Length
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for at in range(0, len(step[1]), 65536):
                        piece = step[1][at:at + 65536]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.write(b"0\r\n\r\n")
                    return
                if isinstance(step, tuple) and step[0] == "dribble":  # a 200 whose body never ends
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    try:
                        self.wfile.write(b"1\r\n{\r\n")
                        while not server.closed.is_set():
                            self.wfile.write(b"1\r\n \r\n")  # one space at a time, each inside the read timeout
                            self.wfile.flush()
                            server.closed.wait(step[1])
                    except OSError:  # the client gave up
                        pass
                    self.close_connection = True
                    return
                if isinstance(step, tuple) and step[0] == "redirect":
                    self.send_response(302)
                    self.send_header("Location", step[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status, payload = step
                data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def then(self, *steps: Any) -> FlakyServer:
        with self._lock:
            self.script.extend(steps)
        return self

    def __enter__(self) -> FlakyServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed.set()
        self.httpd.shutdown()
        self.httpd.server_close()
