"""Shared by the decision tests: the example bundle, prepared once."""

from __future__ import annotations

from pathlib import Path

import pytest
from tenantguard.decision.core import RELATED_EXTENSION, PolicyRevision
from tenantguard.policy.engine import RegorusEngine
from tenantguard.policy.testrunner import load_bundle_dir

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def example_revision() -> PolicyRevision:
    modules, data = load_bundle_dir(REPO / "bundles" / "tenantguard")
    policy = RegorusEngine().prepare(modules, data, extensions=RELATED_EXTENSION)
    return PolicyRevision(revision="1", policy=policy)
