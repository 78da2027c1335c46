"""``BundleService``: the plane's bundle operations composed from their concerns, and ``publish``,
which runs them in order (accept, order check, impact gate, then announce or start a rollout)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tenantguard.bundle import order_key
from tenantguard.identity.keys import SigningKey

from ..publisher import Publisher
from ..state import PlaneState
from ..writer import SequencedWriter
from .checks import Unchanged, bundle_scopes, within_declared
from .impact import IMPACT_GROUPS_SHOWN, ImpactChecks, ImpactGate
from .rollback import Rollbacks
from .rollouts import Reconciled, Rollouts
from .shadows import Shadows


class BundleService(ImpactChecks, Shadows, Rollbacks, Rollouts):
    """Publish, impact, shadow, rollback and staged rollouts of the plane's policy bundles."""

    def __init__(self, state: PlaneState, publisher: Publisher, event_key: SigningKey, bundle_key: SigningKey,
                 writer_for: Any, *, rollout_writer: SequencedWriter | None = None,
                 sample: Callable[[], Iterable[Mapping[str, Any]]] = tuple, gate: ImpactGate | None = None,
                 shadow_writer_for: Any = None) -> None:
        super().__init__(state, publisher, event_key, bundle_key, writer_for)
        self._rollout_writer = rollout_writer
        self._shadow_writer_for = shadow_writer_for  # scope -> SequencedWriter on tg.shadows.<scope>
        self._sample = sample  # the decision records kept by this replica (newest last)
        self.gate = gate or ImpactGate()
        self.reconciled = Reconciled()

    async def publish(self, archive: bytes, *, admin: bool, stages: tuple[tuple[str, ...], ...] | None = None,
                      impact: str | None = None, max_undeclared: int | None = None,
                      actor: str = "admin", skip_tests: bool = False) -> dict[str, Any]:
        """Publish to the bundle's scopes, or with ``stages`` start a staged rollout (stage 0 now).

        The bundle's Rego tests run first and any failure refuses it, unless ``skip_tests``
        (the answer's ``tests_skipped``, which the API writes to the audit log). With an impact
        gate (the plane's setting, made stricter by ``impact``), the plane's decision sample is
        replayed against the candidate next (see :meth:`impact`).
        """
        bundle, archive, signed_upload, passed = await self._accept(archive, admin=admin, skip_tests=skip_tests)
        scopes = [s for stage in stages for s in stage] if stages else bundle_scopes(bundle)
        if stages:
            within_declared(bundle, scopes)
        for scope in scopes:  # refuse before anything is stored
            try:
                self._check_order(scope, archive, bundle)
            except Unchanged:
                continue
        gate = self.gate.stricter(impact, max_undeclared)
        report = await self.impact(bundle, scopes, gate) if gate.mode != "off" else None
        answer: dict[str, Any] = {"revision": bundle.revision, "serial": order_key(bundle.manifest),
                                  "signed_by": bundle.kid, "signed_by_plane": not signed_upload,
                                  "tests_passed": passed, "tests_skipped": skip_tests}
        if report is not None:
            answer["impact"] = report.to_wire(max_groups=IMPACT_GROUPS_SHOWN)
        if stages:
            rollout = await self._start_rollout(archive, bundle, stages, actor)
            answer["rollout"] = rollout.to_wire()
            answer["scopes"] = await self._announce_stage(rollout, archive, bundle)
            return answer
        answer["scopes"] = [await self._publish_scope(scope, archive, bundle, scopes) for scope in scopes]
        return answer
