"""Rollback: the old content of a scope announced again as a NEW revision with a newer serial,
so readers' ordering rules stay whole."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from tenantguard.bundle import verify_bundle
from tenantguard.errors import BundleMalformed, Unavailable
from tenantguard.feed import topology as topo
from tenantguard.rollout import RollbackTargetMissing, next_serial, restored_archive

from .checks import REVISION_RE, compile_and_test
from .core import BundleCore


class Rollbacks(BundleCore):
    """One-step rollback of a scope (a mixin of :class:`~policy_plane.bundles.service.BundleService`)."""

    async def rollback(self, scope: str, to: str | None = None) -> dict[str, Any]:
        """Announce the old content of ``scope`` again, as a NEW revision with a newer serial.

        ``to`` names the revision to return to (its archive ``bundles/<scope>/<to>``); by
        default the one the active announce replaced (``previous``). The archive must verify
        against the plane's bundle key; only ``.manifest`` changes (new revision, serial,
        ``rollback_of``), and the plane signs it again. Readers' ordering rules stay whole:
        the rollback is the newest announce with the highest serial.
        """
        announce = self.state.announces.get(scope)
        if announce is None:
            raise RollbackTargetMissing(f"scope {scope} has no bundle to roll back")
        if to is None:
            if announce.previous is None:
                raise RollbackTargetMissing(f"scope {scope}: the active revision {announce.revision} replaced "
                                            "nothing; name one with --to")
            name, digest = str(announce.previous.get("object")), announce.previous.get("sha256")
        else:
            if REVISION_RE.fullmatch(to) is None:
                raise BundleMalformed("revision must be 1-128 characters of A-Z a-z 0-9 . _ -")
            name, digest = f"bundles/{scope}/{to}", None
        try:
            old_archive = await self.publisher.get_object(topo.BUCKET_BUNDLES, name,
                                                          max_bytes=self.state.max_bundle_bytes)
        except Unavailable as exc:
            if self.publisher.connected:
                raise RollbackTargetMissing(f"scope {scope}: archive {name} is not stored", object=name) from exc
            raise
        if digest is not None and hashlib.sha256(old_archive).hexdigest() != digest:
            raise RollbackTargetMissing(f"archive {name} was replaced since it was announced", object=name)
        old = verify_bundle(old_archive, self.state.bundle_verifier, limits=self.state.bundle_limits)
        if to is not None and old.revision != to:
            raise RollbackTargetMissing(f"archive {name} holds revision {old.revision!r}", object=name)
        active = self.state.store(scope).active
        serial = next_serial(announce.serial, active.order if active else None)
        archive = restored_archive(old, serial=serial, rolled_back_from=announce.revision, signer=self.signer)
        bundle = verify_bundle(archive, self.state.bundle_verifier, limits=self.state.bundle_limits)
        await asyncio.to_thread(compile_and_test, bundle, run=False)
        self._check_order(scope, archive, bundle)
        result = await self._publish_scope(scope, archive, bundle, [scope])
        return {"scope": scope, "restored": old.revision, "rolled_back_from": announce.revision,
                "revision": bundle.revision, "serial": serial, **{k: v for k, v in result.items() if k != "scope"}}
