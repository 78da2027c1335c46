"""PEP keys: bearer secrets that bind a calling PEP (gateway, AuthZEN client) to one tenant.

Why: AuthZEN PEPs and most gateways send no context token and name no tenant, and a
tenant stated in a header or body must never be believed. A PEP key is a credential the
operator issued to one PEP for one tenant; the tenant comes from the key, never from the
request. The file holds only SHA-256 digests of the secrets (a leaked file leaks no
secret); every presented secret is compared with every digest in constant time, with no
early exit, so neither the result nor the position of a match shows in the timing.

File format (``--pep-keys``)::

    {"keys": [{"name": "todo-gateway", "tenant": "acme", "secret_sha256": "<64 hex>"}]}
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from pathlib import Path

from tenantguard.errors import ConfigError

MAX_FILE_BYTES = 1024 * 1024
MIN_NAME, MAX_NAME = 1, 128


@dataclass(frozen=True, slots=True)
class PepKey:
    """One PEP's credential: its name (for logs), its tenant and its secret's SHA-256."""

    name: str
    tenant: str
    digest: bytes


class PepKeys:
    """The configured PEP keys; :meth:`match` is the only way to use them."""

    def __init__(self, keys: list[PepKey]) -> None:
        if not keys:
            raise ConfigError("the PEP keys file lists no keys")
        digests = [k.digest for k in keys]
        if len(set(digests)) != len(digests):
            raise ConfigError("two PEP keys share one secret: a secret must name one tenant")
        self.keys = tuple(keys)

    @classmethod
    def load(cls, path: Path) -> PepKeys:
        """Read and check the file; any defect is a :class:`ConfigError` (the sidecar does not start)."""
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise ConfigError(f"PEP keys file {path} exceeds {MAX_FILE_BYTES} bytes")
            doc = json.loads(path.read_bytes())
        except OSError as exc:
            raise ConfigError(f"cannot read PEP keys file {path}: {exc.strerror}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"PEP keys file {path} is not JSON: {exc}") from None
        entries = doc.get("keys") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            raise ConfigError('PEP keys file must be {"keys": [{"name", "tenant", "secret_sha256"}, ...]}')
        return cls([_entry(i, item) for i, item in enumerate(entries)])

    def match(self, presented: str) -> PepKey | None:
        """The key whose secret is ``presented``, else None; constant time over all keys."""
        digest = hashlib.sha256(presented.encode("utf-8", "surrogateescape")).digest()
        found: PepKey | None = None
        for key in self.keys:
            if hmac.compare_digest(digest, key.digest):
                found = key
        return found

    def tenants(self) -> frozenset[str]:
        return frozenset(k.tenant for k in self.keys)


def secret_digest(secret: str) -> str:
    """The ``secret_sha256`` value to put in the file for ``secret``."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _entry(index: int, item: object) -> PepKey:
    if not isinstance(item, dict):
        raise ConfigError(f"PEP key {index} must be an object")
    name, tenant, digest = item.get("name"), item.get("tenant"), item.get("secret_sha256")
    for label, value in (("name", name), ("tenant", tenant)):
        if not isinstance(value, str) or not MIN_NAME <= len(value) <= MAX_NAME:
            raise ConfigError(f"PEP key {index}: {label} must be a string of 1..{MAX_NAME} characters")
    if not isinstance(digest, str) or len(digest) != 64:
        raise ConfigError(f"PEP key {index}: secret_sha256 must be 64 hex digits (the secret itself is never stored)")
    try:
        raw = bytes.fromhex(digest)
    except ValueError:
        raise ConfigError(f"PEP key {index}: secret_sha256 must be 64 hex digits") from None
    assert isinstance(name, str) and isinstance(tenant, str)
    return PepKey(name=name, tenant=tenant, digest=raw)
