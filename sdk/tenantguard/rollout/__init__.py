"""Safe policy rollout: impact analysis, staged rollouts, rollbacks, fleet status.

The library half of rollouts; the plane, the sidecar and the CLI only do I/O around it.

* :mod:`.records`: the recorded-decision JSONL format (a superset of the decision log)
  and its reader, adapter and relations-file loader;
* :mod:`.impact`: replay against a candidate (and a baseline), flips grouped by
  tenant/service/action/reason, declared expectations, the report;
* :mod:`.plan`: the staged-rollout state machine and rollback archives;
* :mod:`.shadow`: a candidate judged beside the active revision, off the decision path;
* :mod:`.fleet`: what a sidecar reports on ``tg.status.<service>`` and the plane's view.
"""

from tenantguard.errors import (
    ImpactUndeclared,
    ReplayRecordInvalid,
    RollbackTargetMissing,
    RolloutConflict,
    RolloutNotFound,
)
from tenantguard.rollout.fleet import FleetView, SidecarStatus
from tenantguard.rollout.impact import (
    ALLOW_TO_DENY,
    DENY_TO_ALLOW,
    ExpectedFlip,
    ImpactAnalyzer,
    ImpactReport,
    analyze,
    load_bundle,
    manifest_expectations,
    parse_expectations,
    prepare_revision,
)
from tenantguard.rollout.plan import (
    ROLLOUT_STATE,
    RolloutState,
    next_serial,
    parse_stages,
    restored_archive,
    rollback_revision,
)
from tenantguard.rollout.records import (
    ReplayRecord,
    from_decision_log,
    load_relations,
    read_records,
    read_records_file,
    write_records,
)
from tenantguard.rollout.shadow import ShadowEvaluator, ShadowSettings

__all__ = [
    "ALLOW_TO_DENY",
    "DENY_TO_ALLOW",
    "ROLLOUT_STATE",
    "ExpectedFlip",
    "FleetView",
    "ImpactAnalyzer",
    "ImpactReport",
    "ImpactUndeclared",
    "ReplayRecord",
    "ReplayRecordInvalid",
    "RollbackTargetMissing",
    "RolloutConflict",
    "RolloutNotFound",
    "RolloutState",
    "ShadowEvaluator",
    "ShadowSettings",
    "SidecarStatus",
    "analyze",
    "from_decision_log",
    "load_bundle",
    "load_relations",
    "manifest_expectations",
    "next_serial",
    "parse_expectations",
    "parse_stages",
    "prepare_revision",
    "read_records",
    "read_records_file",
    "restored_archive",
    "rollback_revision",
    "write_records",
]
