"""Shadow evaluation: a candidate announced as ``bundle.shadow``, which sidecars evaluate beside
the active bundle and never activate."""

from __future__ import annotations

import hashlib
from typing import Any

from tenantguard.bundle import order_key
from tenantguard.errors import BundleMalformed, ShadowNotFound, Unavailable
from tenantguard.feed import topology as topo
from tenantguard.feed.events import sign_event
from tenantguard.rollout.shadow import ShadowSettings

from .checks import bundle_scopes
from .core import BundleCore


class Shadows(BundleCore):
    """Shadows per scope (a mixin of :class:`~policy_plane.bundles.service.BundleService`)."""

    _shadow_writer_for: Any  # scope -> SequencedWriter on tg.shadows.<scope>

    async def publish_shadow(self, archive: bytes, *, admin: bool, sample_rate: float = 1.0,
                             max_per_second: int = 50, skip_tests: bool = False) -> dict[str, Any]:
        """Announce a candidate as a shadow for its scopes: signed as ``bundle.shadow``, a type no
        reader activates, with its bytes under ``shadows/<scope>/<revision>``. Sidecars evaluate it
        beside the active bundle and report agreements and disagreements."""
        if self._shadow_writer_for is None:
            raise Unavailable("shadow evaluation is not available on this replica")
        if not 0.0 < sample_rate <= 1.0 or not 0 < max_per_second <= 1000:
            raise BundleMalformed("sample_rate must be in (0, 1] and max_per_second in (0, 1000]")
        bundle, archive, signed_upload, passed = await self._accept(archive, admin=admin, skip_tests=skip_tests)
        scopes = bundle_scopes(bundle)
        digest = hashlib.sha256(archive).hexdigest()
        results = []
        for scope in scopes:
            name = f"shadows/{scope}/{bundle.revision}"
            await self.publisher.put_object(topo.BUCKET_BUNDLES, name, archive)
            payload = {"scope": scope, "revision": bundle.revision, "sha256": digest, "size": len(archive),
                       "object": name, "serial": order_key(bundle.manifest),
                       **ShadowSettings(sample_rate, max_per_second).to_wire()}
            results.append(await self._commit_shadow(scope, payload))
        return {"revision": bundle.revision, "shadow": True, "signed_by_plane": not signed_upload,
                "tests_passed": passed, "tests_skipped": skip_tests, "scopes": results}

    async def stop_shadow(self, scope: str) -> dict[str, Any]:
        current = self.state.shadows.get(scope)
        if current is None or current.get("stop"):
            raise ShadowNotFound(f"scope {scope} has no shadow running; `tenantguard bundle rollout status` lists "
                                 "running shadows under fleet.shadow")
        return await self._commit_shadow(scope, {"scope": scope, "stop": True})

    async def _commit_shadow(self, scope: str, payload: dict[str, Any]) -> dict[str, Any]:
        if self._shadow_writer_for is None:
            raise Unavailable("shadow evaluation is not available on this replica")
        chosen: list[int] = []

        def build() -> bytes:
            current = self.state.shadows.get(scope)
            chosen.append((current["seq"] if current else 0) + 1)
            return sign_event(self.event_key, topo.BUNDLE_SHADOW, payload, chosen[-1])

        await self._shadow_writer_for(scope).commit(build)
        return {"scope": scope, "seq": chosen[-1], **{k: v for k, v in payload.items() if k != "scope"}}
