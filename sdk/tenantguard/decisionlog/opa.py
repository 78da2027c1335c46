"""A decision record as an OPA decision-log event, so tools built for OPA logs read an export.

Field map (OPA's event on the left, ours on the right; see docs/operations.md):

``decision_id`` = decision_id; ``path`` = path without ``data.``, ``/``-separated;
``input`` = input (``input.token`` holds jti/iss/kid/scope only, ``input.relations``
is not recorded); ``result`` = ``{"allow", "reasons", "high_risk"}``;
``bundles`` = ``{"tenantguard": {"revision": bundle_revision}}``; ``labels`` =
``{"id": sidecar, "service", "door", "tenant"}``; ``timestamp`` = time (RFC 3339, UTC);
``metrics.timer_rego_query_eval_ns`` = latency (the whole core: built-in checks,
relations, policy); ``erased`` = erased; ``requested_by`` = door. Not in OPA: the
relations sequence, act-as and the token reference go under ``tenantguard``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

BUNDLE_NAME = "tenantguard"


def _opa_path(path: str | None) -> str:
    if not path:
        return ""
    return path.removeprefix("data.").replace(".", "/")


def to_opa_event(record: dict[str, Any]) -> dict[str, Any]:
    """The OPA decision-log event for one record (as the plane serves it)."""
    when = datetime.fromtimestamp(float(record.get("time") or 0), UTC)
    event: dict[str, Any] = {
        "decision_id": record.get("decision_id"),
        "path": _opa_path(record.get("path")),
        "input": record.get("input"),
        "result": {"allow": record.get("allow"), "reasons": record.get("reasons") or [],
                   "high_risk": bool(record.get("high_risk"))},
        "bundles": {BUNDLE_NAME: {"revision": record.get("bundle_revision") or ""}},
        "labels": {k: v for k, v in (("id", record.get("sidecar")), ("service", record.get("service")),
                                     ("door", record.get("door")), ("tenant", record.get("tenant"))) if v},
        "timestamp": when.isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "metrics": {"timer_rego_query_eval_ns": int(record.get("latency_us") or 0) * 1000},
        "requested_by": record.get("door") or "",
        "tenantguard": {"relations_seq": record.get("relations_seq"), "act_as": bool(record.get("act_as")),
                        "actor_chain": record.get("actor_chain") or [], "token": record.get("token"),
                        "subject": record.get("subject"), "action": record.get("action"),
                        "resource": record.get("resource")},
    }
    if record.get("erased"):
        event["erased"] = list(record["erased"])
    return event
