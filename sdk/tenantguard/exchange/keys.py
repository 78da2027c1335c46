"""The exchange's signing key: created once (0600 under the state dir), replaced when revoked, and
handed to whoever publishes trust (``KeyRegistrar``). Kept apart from the exchanger: storage and
registration change for deployment reasons, the minting rules do not.
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tenantguard.errors import KeyMaterialError
from tenantguard.identity.keys import DEFAULT_ALGORITHM, Algorithm, SigningKey, write_private

if TYPE_CHECKING:
    pass

log = logging.getLogger(__package__)  # "tenantguard.exchange", as before the split

KEY_FILE = Path("exchange") / "signing-key.pem"


# --------------------------------------------------------------------------- keys


def load_or_create_signing_key(state_dir: Path | None, alg: Algorithm = DEFAULT_ALGORITHM) -> SigningKey:
    """The sidecar's exchange signing key: persisted 0600 under ``state_dir`` so restarts
    keep the ``kid`` other sidecars trust; in memory only when there is no state dir."""
    if state_dir is None:
        return SigningKey.generate(alg)
    path = state_dir / KEY_FILE
    if path.exists():
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            raise KeyMaterialError(f"{path} must not be readable by others (chmod 600)")
        return SigningKey.load(path)
    key = SigningKey.generate(alg)
    write_private(path, key.private_pem())
    log.info("generated exchange signing key %s at %s", key.kid, path)
    return key


def replace_signing_key(state_dir: Path | None, alg: Algorithm = DEFAULT_ALGORITHM) -> SigningKey:
    """A new exchange signing key, replacing the persisted one (0600, atomically) when
    there is a ``state_dir``: for a key that was revoked, which must never sign again."""
    key = SigningKey.generate(alg)
    if state_dir is not None:
        write_private(state_dir / KEY_FILE, key.private_pem())
    log.warning("generated replacement exchange signing key %s", key.kid)
    return key


class KeyRegistrar(Protocol):
    """Hands the sidecar's public key to whoever publishes trust (the plane, later).

    The hook for the plane issue: the plane registers the key with the service's
    credential and publishes it in the trust set. Until then :class:`LocalTrustOnly`
    does nothing, and operators build trust files from ``GET /v1/keys``.
    """

    def register(self, service: str, jwk: Mapping[str, Any]) -> None: ...


class LocalTrustOnly:
    """No plane yet: trust travels in local trust files."""

    def register(self, service: str, jwk: Mapping[str, Any]) -> None:
        log.info("exchange key %s for %s: add it to peers' trust files (GET /v1/keys)", jwk.get("kid"), service)
