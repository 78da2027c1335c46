"""Producing a bundle signature: the ``.signatures.json`` JWT (OPA v1/bundle/sign.go).

The JWT header is ``{"alg", "kid", "typ": "JWT"}`` with ``kid`` the signing key's
RFC 7638 thumbprint; the payload is ``{"files": [{"name", "hash", "algorithm"}...]}``
plus ``iat`` and, when configured, ``iss`` and ``scope``. OPA's deprecated ``keyid``
payload claim is not written (OPA reads the header ``kid`` first).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import jwt

from tenantguard.bundle.hashing import file_digest
from tenantguard.bundle.model import SIGNATURES_FILE, FileHash
from tenantguard.identity.keys import SigningKey


class Signer(Protocol):
    """Turns the list of file digests into one compact JWS; plug in a KMS/HSM here."""

    def sign(self, files: Sequence[FileHash]) -> str: ...


@dataclass(frozen=True, slots=True)
class JwtSigner:
    """The default signer: a local private key, its own algorithm (EdDSA, ES256, RS256).

    ``issued_at`` fixes ``iat`` (for byte-identical output); otherwise ``clock()`` is used.
    """

    key: SigningKey
    issuer: str | None = None
    scope: str | None = None
    issued_at: int | None = None
    clock: Callable[[], float] = field(default=time.time, repr=False)

    def sign(self, files: Sequence[FileHash]) -> str:
        claims: dict[str, Any] = {"files": [f.to_wire() for f in files]}
        claims["iat"] = self.issued_at if self.issued_at is not None else int(self.clock())
        if self.issuer is not None:
            claims["iss"] = self.issuer
        if self.scope is not None:
            claims["scope"] = self.scope
        payload = json.dumps(claims, separators=(",", ":"), ensure_ascii=False).encode()
        return jwt.PyJWS().encode(
            payload, self.key.private_key, algorithm=self.key.alg, headers={"kid": self.key.kid}
        )


def as_signer(key: SigningKey | Signer) -> Signer:
    return JwtSigner(key) if isinstance(key, SigningKey) else key


def digests(files: Mapping[str, bytes]) -> list[FileHash]:
    """SHA-256 digests of every file but ``.signatures.json``, sorted by name."""
    return [
        FileHash(name, file_digest(name, files[name]))
        for name in sorted(files)
        if name != SIGNATURES_FILE
    ]


def signatures_file(token: str) -> bytes:
    """The ``.signatures.json`` body OPA reads: ``{"signatures": [token]}``."""
    return json.dumps({"signatures": [token]}, separators=(",", ":")).encode() + b"\n"
