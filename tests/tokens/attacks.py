"""Forgery helpers for the attack tests: each builds a token by hand, byte by byte."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def segment(obj: Any) -> str:
    return b64(json.dumps(obj, separators=(",", ":")).encode())


def split(token: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    h, p, s = token.split(".")
    pad = lambda x: x + "=" * (-len(x) % 4)  # noqa: E731
    return json.loads(base64.urlsafe_b64decode(pad(h))), json.loads(base64.urlsafe_b64decode(pad(p))), s


def hmac_signed(header: dict[str, Any], payload: dict[str, Any], secret: bytes, alg: str = "HS256") -> str:
    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
    signing_input = f"{segment(header)}.{segment(payload)}"
    return f"{signing_input}.{b64(hmac.new(secret, signing_input.encode(), digest).digest())}"


def with_payload(token: str, payload: dict[str, Any]) -> str:
    """Keep the original header and signature, swap the payload (a tampering attempt)."""
    h, _, s = token.split(".")
    return f"{h}.{segment(payload)}.{s}"
