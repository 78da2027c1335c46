"""What a bundle must be before the plane stores it: a revision of the allowed form, the scopes
its manifest declares, a policy that compiles and whose own tests pass.

Pure functions of the bundle, shared by every path that publishes (publish, shadow, rollback,
a rollout's stages), so no path checks less than another.
"""

from __future__ import annotations

import re
from typing import Final

from tenantguard.bundle import Bundle
from tenantguard.decision.core import RELATED_EXTENSION
from tenantguard.errors import BundleMalformed, BundleRejected, InvalidInput, PolicyError
from tenantguard.feed import topology as topo
from tenantguard.policy.engine import RegorusEngine
from tenantguard.policy.testrunner import run_tests

from ..config import SERVICE_RE
from ..errors import PolicyTestsFailed

REVISION_RE: Final = re.compile(r"[A-Za-z0-9._-]{1,128}")


class Unchanged(Exception):
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


def within_declared(bundle: Bundle, scopes: list[str]) -> None:
    """A staged rollout reaches only scopes the bundle declares (``metadata.services``): stages
    name where and when, never a service the bundle was not written and reviewed for. A bundle
    that declares none is for every scope, ``all`` included."""
    declared = bundle_scopes(bundle)
    if declared == [topo.BUNDLE_SCOPE_ALL]:
        return
    outside = sorted(set(scopes) - set(declared))
    if outside:
        raise InvalidInput(f"stages name {', '.join(outside)}, which the bundle's metadata.services "
                           f"({', '.join(declared)}) does not declare; a staged rollout reaches only declared "
                           "services", field="stages", declared=declared, undeclared=outside)


def compile_and_test(bundle: Bundle, *, run: bool) -> int:
    """Compile (always) and run the Rego tests (when ``run``); return how many passed."""
    try:
        RegorusEngine().prepare(bundle.modules, bundle.data, extensions=RELATED_EXTENSION)
        if not run:
            return 0
        report = run_tests(bundle.modules, bundle.data, extensions=RELATED_EXTENSION)
    except PolicyError as exc:
        raise BundleRejected(f"bundle does not compile: {exc.message}", **exc.detail) from None
    failed = [r.full_name for r in report.results if r.outcome != "pass"]
    if failed:
        raise PolicyTestsFailed(f"{len(failed)} of {len(report.results)} Rego tests failed: {', '.join(failed[:20])}",
                                failed=failed[:100])
    return report.passed
