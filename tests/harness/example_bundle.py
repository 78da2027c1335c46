"""The example bundle (bundles/tenantguard) as a sidecar activates it, for in-process tests.

Its project membership is asked of its relationship schema through ``tg.related``, so a
revision of it needs the builtin registered and the schema prepared beside the policy:
without either, every question about a project is denied (or fails to evaluate).
"""

from __future__ import annotations

from pathlib import Path

from tenantguard.decision.core import RELATED_EXTENSION, PolicyRevision
from tenantguard.decision.permissions import schema_engine
from tenantguard.policy.engine import RegorusEngine
from tenantguard.policy.testrunner import load_bundle_dir
from tenantguard.schema import load
from tenantguard.schema.engine import SchemaEngine

from tests.harness.paths import BUNDLE_DIR


def example_schema(bundle: Path = BUNDLE_DIR) -> SchemaEngine | None:
    """The bundle directory's schema.fga, prepared (None when it has none)."""
    path = bundle / "schema.fga"
    return schema_engine(load(path.read_text(), path.name)) if path.is_file() else None


def example_revision(revision: str = "1", *, include_tests: bool = True, bundle: Path = BUNDLE_DIR) -> PolicyRevision:
    """The bundle's policy, with ``tg.related`` and its schema, as one activated revision."""
    modules, data = load_bundle_dir(bundle, include_tests=include_tests)
    policy = RegorusEngine().prepare(modules, data, extensions=RELATED_EXTENSION)
    return PolicyRevision(revision, policy, schema=example_schema(bundle))
