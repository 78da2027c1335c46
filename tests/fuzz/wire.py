"""Raw HTTP to a real server on loopback, and the properties every answer must have.

``http.client`` rather than httpx: it sends the request target byte for byte (no dot
segment or percent-encoding normalisation), so path tricks reach the server as written.
Each request has its own socket timeout: a server that does not answer in time fails the
case as a hang (the bound is generous; nothing asserts how fast an answer came).
"""

from __future__ import annotations

import http.client
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .budget import REQUEST_TIMEOUT

ERROR_CODE = re.compile(r"[a-z][a-z0-9_]*")


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    request: str = field(default="", repr=False)

    def json(self) -> Any:
        return json.loads(self.body)


def send(address: str, method: str, target: str, *, headers: dict[str, str] | None = None,
         body: bytes | None = None) -> Answer:
    """One request on a fresh connection; ``target`` is sent exactly as given."""
    host, _, port = address.rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=REQUEST_TIMEOUT)
    try:
        conn.putrequest(method, target, skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            conn.putheader(name, value.encode("latin-1", "replace"))
        framed = any(k.lower() in ("content-length", "transfer-encoding") for k in headers or {})
        if body is not None and not framed:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        data = response.read()
        answer_headers = {k.lower(): v for k, v in response.getheaders()}
        return Answer(response.status, answer_headers, data,
                      request=f"{method} {target[:200]} headers={headers!r:.300} body={(body or b'')[:300]!r}")
    finally:
        conn.close()


def check_answer(answer: Answer, *, oauth: bool = False) -> None:
    """The properties of every answer: no 5xx; a refusal is a typed 4xx with a machine-readable body.

    The project's body is ``{"error": code, "message": text[, "detail": {...}]}``
    (``tenantguard.server.asgi.failure_response``); the token endpoint speaks OAuth instead,
    ``{"error": code, "error_description": text}`` (RFC 6749 5.2).
    """
    where = f"{answer.request}\n-> {answer.status} {answer.body[:500]!r}"
    assert answer.status < 500, f"server error: {where}"
    if answer.status < 400:
        return
    assert answer.headers.get("content-type", "").startswith("application/json"), f"untyped refusal: {where}"
    body = answer.json()
    assert isinstance(body, dict), where
    assert isinstance(body.get("error"), str) and ERROR_CODE.fullmatch(body["error"]), f"no error code: {where}"
    text = body.get("error_description" if oauth else "message")
    assert isinstance(text, str), f"no description: {where}"
    if not oauth and "detail" in body:
        assert isinstance(body["detail"], dict), where
