"""Publishing a policy bundle: verify or (compile, test, sign), order-check, store, announce.

* A signed upload must verify against the plane's bundle key (a bundle signed by
  anyone else never reaches a sidecar).
* An unsigned upload (from an admin) is compiled and its Rego tests run; any failing
  test refuses it, naming the tests. The plane then signs it with its bundle key.
* ``.manifest`` ``metadata.services`` (a list) picks the scopes the bundle is for;
  absent means ``all``. Each scope has its own :class:`BundleStore`, whose ordering
  rules refuse rollbacks (an older serial, or the same serial with other content).
* The bytes go to object ``bundles/<scope>/<revision>`` in ``tg-bundles`` first; only
  then is the signed ``bundle.announce`` published on ``tg.bundles.<scope>``, so a
  sidecar never hears of bytes that are not there yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
from typing import Any, Final

from tenantguard import topology as topo
from tenantguard.bundle import (
    SIGNATURES_FILE,
    Bundle,
    BundleStore,
    JwtSigner,
    order_key,
    read_archive,
    sign_bundle,
    verify_bundle,
)
from tenantguard.engine import RegorusEngine
from tenantguard.errors import BundleMalformed, BundleRejected, BundleRollback, PolicyError, Unavailable
from tenantguard.events import BUNDLE_ANNOUNCE, sign_event
from tenantguard.keys import SigningKey
from tenantguard.policytest import run_tests

from .config import SERVICE_RE
from .errors import PolicyTestsFailed
from .publisher import Publisher
from .state import PlaneState
from .writer import SequencedWriter

REVISION_RE: Final = re.compile(r"[A-Za-z0-9._-]{1,128}")


class _Unchanged(Exception):
    """The scope already runs exactly this content; nothing to announce."""


def bundle_scopes(bundle: Bundle) -> list[str]:
    services = bundle.manifest.metadata.get("services")
    if services is None:
        return [topo.BUNDLE_SCOPE_ALL]
    if not isinstance(services, list) or not services:
        raise BundleMalformed("manifest metadata.services must be a non-empty list of service names",
                              file=".manifest")
    for name in services:
        if not isinstance(name, str) or SERVICE_RE.fullmatch(name) is None or name == topo.BUNDLE_SCOPE_ALL:
            raise BundleMalformed(f"metadata.services entry {name!r:.60} is not a service name", file=".manifest")
    return sorted(set(services))


def compile_and_test(bundle: Bundle, *, run: bool) -> int:
    """Compile (always) and run the Rego tests (when ``run``); return how many passed."""
    try:
        RegorusEngine().prepare(bundle.modules, bundle.data)
        if not run:
            return 0
        report = run_tests(bundle.modules, bundle.data)
    except PolicyError as exc:
        raise BundleRejected(f"bundle does not compile: {exc.message}", **exc.detail) from None
    failed = [r.full_name for r in report.results if r.outcome != "pass"]
    if failed:
        raise PolicyTestsFailed(f"{len(failed)} of {len(report.results)} Rego tests failed: {', '.join(failed[:20])}",
                                failed=failed[:100])
    return report.passed


class BundleService:
    def __init__(self, state: PlaneState, publisher: Publisher, event_key: SigningKey, bundle_key: SigningKey,
                 writer_for: Any) -> None:
        self.state = state
        self.publisher = publisher
        self.event_key = event_key
        self.signer = JwtSigner(bundle_key, issuer=topo.PLANE_ISSUER)
        self._writer_for = writer_for  # scope -> SequencedWriter

    async def publish(self, archive: bytes, *, admin: bool) -> dict[str, Any]:
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
        scopes = bundle_scopes(bundle)
        passed = await asyncio.to_thread(compile_and_test, bundle, run=not signed_upload)
        if not signed_upload:
            archive = sign_bundle(archive, self.signer, limits=self.state.bundle_limits)
            bundle = verify_bundle(archive, self.state.bundle_verifier, limits=self.state.bundle_limits)
        for scope in scopes:  # refuse before anything is stored
            try:
                self._check_order(scope, archive, bundle)
            except _Unchanged:
                continue
        results = [await self._publish_scope(scope, archive, bundle, scopes) for scope in scopes]
        return {"revision": bundle.revision, "serial": order_key(bundle.manifest), "signed_by": bundle.kid,
                "signed_by_plane": not signed_upload, "tests_passed": passed, "scopes": results}

    def _check_order(self, scope: str, archive: bytes, bundle: Bundle) -> None:
        """Raise ``BundleRollback`` unless ``archive`` may follow the scope's active bundle."""
        announce = self.state.announces.get(scope)
        active = self.state.store(scope).active
        if announce is not None and not announce.loaded:
            raise Unavailable(f"scope {scope}: the active bundle could not be loaded, so order cannot be checked")
        if active is None:
            return
        if active.digest == bundle.content_digest():
            raise _Unchanged
        if active.bundle.revision == bundle.revision:
            raise BundleRollback(f"revision {bundle.revision!r} is already active in scope {scope} with other "
                                 "content; publish a new revision", active=bundle.revision)
        scratch: BundleStore[None] = BundleStore(self.state.bundle_verifier, limits=self.state.bundle_limits)
        scratch.activate(active.archive, force=True)
        scratch.activate(archive)  # BundleStore's ordering rules decide

    async def _publish_scope(self, scope: str, archive: bytes, bundle: Bundle, scopes: list[str]) -> dict[str, Any]:
        name = f"bundles/{scope}/{bundle.revision}"
        try:
            self._check_order(scope, archive, bundle)
        except _Unchanged:
            return {"scope": scope, "unchanged": True, "object": name, **self._announced(scope)}
        await self.publisher.put_object(topo.BUCKET_BUNDLES, name, archive)
        payload = {"scope": scope, "revision": bundle.revision, "sha256": hashlib.sha256(archive).hexdigest(),
                   "size": len(archive), "object": name, "services": scopes, "serial": order_key(bundle.manifest)}
        writer: SequencedWriter = self._writer_for(scope)

        def build() -> bytes:
            self._check_order(scope, archive, bundle)  # again: another replica may have published meanwhile
            current = self.state.announces.get(scope)
            return sign_event(self.event_key, BUNDLE_ANNOUNCE, payload, (current.seq if current else 0) + 1)

        with contextlib.suppress(_Unchanged):  # became identical meanwhile (another replica published it)
            await writer.commit(build)
        return {"scope": scope, "unchanged": False, "object": name, **self._announced(scope)}

    def _announced(self, scope: str) -> dict[str, Any]:
        announce = self.state.announces.get(scope)
        return {"seq": announce.seq, "sha256": announce.sha256} if announce else {}
