"""Activation: the single place that decides which verified bundle is live.

``BundleStore.activate`` verifies the archive completely, checks its order against
the active bundle, runs ``prepare`` (e.g. compile the policy), persists the archive,
and only then swaps one reference. Any failure on the way raises and leaves the active
bundle, and the file on disk, as they were. Readers take no lock: ``store.active`` is
always a complete, consistent :class:`Activation`.

Ordering rule. A bundle's order key is ``manifest.metadata["serial"]`` when present (it
must be a JSON integer; ``build_bundle`` sets it), else ``int(revision)`` when the
revision is all ASCII digits, else the bundle has no order key. Against an active
bundle, a new one is accepted only if both have a key and the new key is greater.
Identical content (same files, whatever the signature) is a no-op. A smaller key is a
rollback, an equal key with different content a conflict, and a missing key on either
side unorderable: all three raise ``BundleRollback`` unless ``force=True``. The first
bundle (nothing active) needs no key.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from tenantguard.bundle.archive import DEFAULT_LIMITS, ArchiveLimits, read_capped
from tenantguard.bundle.errors import BundlePersistError
from tenantguard.bundle.load import verify_bundle
from tenantguard.bundle.model import MANIFEST_FILE, Bundle, Manifest
from tenantguard.bundle.verify import Verifier
from tenantguard.errors import BundleMalformed, BundleRejected, BundleRollback, TenantGuardError
from tenantguard.util.fsutil import atomic_write

T = TypeVar("T")
PERSISTED_NAME = "bundle.tar.gz"
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class Activation(Generic[T]):
    """An active bundle with what ``prepare`` made of it and the archive it came from."""

    bundle: Bundle
    prepared: T | None
    archive: bytes
    order: int | None
    digest: str


def order_key(manifest: Manifest) -> int | None:
    """The bundle's place in time (see module docstring), or ``None`` if it has none."""
    serial = manifest.metadata.get("serial")
    if serial is not None:
        if isinstance(serial, bool) or not isinstance(serial, int):
            raise BundleMalformed("manifest metadata.serial must be an integer", file=MANIFEST_FILE)
        return serial
    if _DIGITS.fullmatch(manifest.revision):
        return int(manifest.revision)
    return None


class BundleStore(Generic[T]):
    """Holds the active verified bundle; optionally persists it for cold start.

    ``verifier=None`` with ``require_signature=False`` accepts unsigned bundles only
    (for development); production passes a verifier and keeps the default.
    """

    def __init__(
        self,
        verifier: Verifier | None,
        *,
        require_signature: bool = True,
        persist_dir: str | os.PathLike[str] | None = None,
        limits: ArchiveLimits = DEFAULT_LIMITS,
    ) -> None:
        self._verifier = verifier
        self._require_signature = require_signature
        self._persist_dir = Path(persist_dir) if persist_dir is not None else None
        self._limits = limits
        self._lock = threading.Lock()
        self._active: Activation[T] | None = None

    @property
    def active(self) -> Activation[T] | None:
        return self._active

    @property
    def persisted_path(self) -> Path | None:
        return self._persist_dir / PERSISTED_NAME if self._persist_dir is not None else None

    def activate(
        self,
        archive: bytes,
        *,
        force: bool = False,
        prepare: Callable[[Bundle], T] | None = None,
    ) -> Activation[T]:
        """Verify, order-check, prepare, persist, swap; return the (possibly unchanged) active."""
        return self._activate(archive, force=force, prepare=prepare, persist=True)

    def load_persisted(self, *, prepare: Callable[[Bundle], T] | None = None) -> Activation[T] | None:
        """Activate the last persisted bundle (re-verified); ``None`` if there is none.

        A corrupted or tampered file raises ``BundleRejected`` and is never activated.
        """
        path = self.persisted_path
        if path is None or not path.is_file():
            return None
        archive = read_capped(path, self._limits)
        return self._activate(archive, force=False, prepare=prepare, persist=False)

    def _activate(
        self,
        archive: bytes,
        *,
        force: bool,
        prepare: Callable[[Bundle], T] | None,
        persist: bool,
    ) -> Activation[T]:
        bundle = verify_bundle(
            archive, self._verifier, require_signature=self._require_signature, limits=self._limits
        )
        order, digest = order_key(bundle.manifest), bundle.content_digest()
        with self._lock:
            current = self._active
            if current is not None and current.digest == digest:
                return current
            if current is not None and not force:
                _check_order(current, bundle, order)
            activation = Activation(bundle, _prepare(prepare, bundle), archive, order, digest)
            if persist:
                self._persist(archive)
            self._active = activation  # the swap: one reference assignment
        return activation

    def _persist(self, archive: bytes) -> None:
        """Atomic and durable: the file is the old bundle or the new one, never half."""
        target = self.persisted_path
        if target is None:
            return
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, archive)
        except OSError as exc:
            raise BundlePersistError(f"cannot persist bundle to {target}: {exc.strerror}") from exc


def _check_order(current: Activation[T], bundle: Bundle, order: int | None) -> None:
    new, old = bundle.revision, current.bundle.revision
    if order is None or current.order is None:
        raise BundleRollback(
            f"revision {new!r} cannot be ordered against active revision {old!r} "
            "(no metadata.serial or numeric revision); use force to replace it",
            active=old,
            revision=new,
        )
    if order < current.order:
        raise BundleRollback(
            f"revision {new!r} (order {order}) is older than active {old!r} ({current.order})",
            active=old,
            revision=new,
        )
    if order == current.order:
        raise BundleRollback(
            f"revision {new!r} has the active order key {order} but different content",
            active=old,
            revision=new,
        )


def _prepare(prepare: Callable[[Bundle], T] | None, bundle: Bundle) -> T | None:
    """Run the caller's preparation; a failure rejects the bundle, typed."""
    if prepare is None:
        return None
    try:
        return prepare(bundle)
    except TenantGuardError:
        raise
    except Exception as exc:
        raise BundleRejected(f"bundle {bundle.revision!r} failed to prepare: {exc}") from exc
