"""Forgery helpers for the attack tests: each builds a token by hand, byte by byte."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


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


def signed_text(private_key: Any, header_json: str, payload_json: str) -> str:
    """A token whose header and payload are exactly the JSON text given (duplicates, NaN,
    anything), signed for real with ``private_key`` (Ed25519, RSA or P-256) via cryptography."""
    signing_input = f"{b64(header_json.encode())}.{b64(payload_json.encode())}"
    data = signing_input.encode()
    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        signature = private_key.sign(data)
    elif isinstance(private_key, rsa.RSAPrivateKey):
        signature = private_key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    else:
        r, s = decode_dss_signature(private_key.sign(data, ec.ECDSA(hashes.SHA256())))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{signing_input}.{b64(signature)}"


def claims_text(**claims: Any) -> str:
    """Claims as compact JSON text, members in the order given; splice more text in by hand."""
    return json.dumps(claims, separators=(",", ":"))
