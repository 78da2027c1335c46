"""Accepting an upload and announcing it to one scope: the steps every publishing path shares.

:class:`BundleCore` holds the plane's state and keys; the concerns (impact, shadows, rollback,
rollouts) are mixins on it and :class:`~policy_plane.bundles.service.BundleService` composes
them. The ordering check (:meth:`BundleCore._check_order`) runs before anything is stored and
again inside the commit, so no path (a publish, a rollback, the reconciler) moves a scope back.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from tenantguard.bundle import (
    SIGNATURES_FILE,
    Bundle,
    BundleStore,
    JwtSigner,
    order_key,
    read_archive,
    revision_digest,
    sign_bundle,
    verify_bundle,
)
from tenantguard.errors import BundleMalformed, BundleRejected, BundleRollback, Unavailable
from tenantguard.feed import topology as topo
from tenantguard.feed.events import BUNDLE_ANNOUNCE, sign_event
from tenantguard.identity.keys import SigningKey

from ..publisher import Publisher
from ..state import PlaneState
from ..writer import SequencedWriter
from .checks import REVISION_RE, Unchanged, bundle_scopes, compile_and_test


class BundleCore:
    """The plane's bundle state and keys, with accept (verify, test, sign) and announce-to-a-scope."""

    def __init__(self, state: PlaneState, publisher: Publisher, event_key: SigningKey, bundle_key: SigningKey,
                 writer_for: Any) -> None:
        self.state = state
        self.publisher = publisher
        self.event_key = event_key
        self.signer = JwtSigner(bundle_key, issuer=topo.PLANE_ISSUER)
        self._writer_for = writer_for  # scope -> SequencedWriter

    async def _accept(self, archive: bytes, *, admin: bool,
                      skip_tests: bool = False) -> tuple[Bundle, bytes, bool, int]:
        """Verify (signed), compile, run the tests (unless ``skip_tests``) and sign (unsigned): the
        bundle, its archive as announced, whether it came signed, and how many tests passed."""
        files = read_archive(archive, self.state.bundle_limits)
        signed_upload = SIGNATURES_FILE in files
        if signed_upload:
            bundle = verify_bundle(archive, self.state.bundle_verifier, limits=self.state.bundle_limits)
        else:
            if not admin:
                raise BundleRejected("only an admin may upload an unsigned bundle for the plane to sign")
            bundle = verify_bundle(archive, None, require_signature=False, limits=self.state.bundle_limits)
        if REVISION_RE.fullmatch(bundle.revision) is None:
            raise BundleMalformed("manifest revision must be 1-128 characters of A-Z a-z 0-9 . _ -",
                                  file=".manifest")
        bundle_scopes(bundle)  # a malformed metadata.services is refused even for a staged rollout
        passed = await asyncio.to_thread(compile_and_test, bundle, run=not skip_tests)
        if not signed_upload:
            archive = sign_bundle(archive, self.signer, limits=self.state.bundle_limits)
            bundle = verify_bundle(archive, self.state.bundle_verifier, limits=self.state.bundle_limits)
        return bundle, archive, signed_upload, passed


    def _check_order(self, scope: str, archive: bytes, bundle: Bundle) -> None:
        """Raise ``BundleRollback`` unless ``archive`` may follow the scope's active bundle; ``Unchanged``
        when it holds the active content, also rebuilt under the same revision with a newer serial (a
        content revision names the same sources alike, and the serial only orders; an older serial is
        still a rollback)."""
        announce = self.state.announces.get(scope)
        active = self.state.store(scope).active
        if announce is not None and not announce.loaded:
            raise Unavailable(f"scope {scope}: the active bundle could not be loaded, so order cannot be checked")
        if active is None:
            return
        if active.digest == bundle.content_digest():
            raise Unchanged
        if active.bundle.revision == bundle.revision:
            if revision_digest(active.bundle.files) != revision_digest(bundle.files):
                raise BundleRollback(f"revision {bundle.revision!r} is already active in scope {scope} with other "
                                     "content; publish a new revision", active=bundle.revision)
            order = order_key(bundle.manifest)
            if order is not None and active.order is not None and order > active.order:
                raise Unchanged  # the same sources built again: only a newer serial differs
        scratch: BundleStore[None] = BundleStore(self.state.bundle_verifier, limits=self.state.bundle_limits)
        scratch.activate(active.archive, force=True)
        scratch.activate(archive)  # BundleStore's ordering rules decide

    async def _publish_scope(self, scope: str, archive: bytes, bundle: Bundle, scopes: list[str]) -> dict[str, Any]:
        name = f"bundles/{scope}/{bundle.revision}"
        try:
            self._check_order(scope, archive, bundle)
        except Unchanged:
            return {"scope": scope, "unchanged": True, "object": name, **self._announced(scope)}
        await self.publisher.put_object(topo.BUCKET_BUNDLES, name, archive)
        payload = {"scope": scope, "revision": bundle.revision, "sha256": hashlib.sha256(archive).hexdigest(),
                   "size": len(archive), "object": name, "services": scopes, "serial": order_key(bundle.manifest)}
        writer: SequencedWriter = self._writer_for(scope)

        def build() -> bytes:
            self._check_order(scope, archive, bundle)  # again: another replica may have published meanwhile
            current = self.state.announces.get(scope)
            previous = {"previous": current.pointer()} if current is not None else {}
            return sign_event(self.event_key, BUNDLE_ANNOUNCE, {**payload, **previous},
                              (current.seq if current else 0) + 1)

        try:
            await writer.commit(build)
        except Unchanged:  # became identical meanwhile (another replica published it)
            return {"scope": scope, "unchanged": True, "object": name, **self._announced(scope)}
        return {"scope": scope, "unchanged": False, "object": name, **self._announced(scope)}

    def _announced(self, scope: str) -> dict[str, Any]:
        announce = self.state.announces.get(scope)
        return {"seq": announce.seq, "sha256": announce.sha256} if announce else {}
