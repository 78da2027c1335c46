"""The plane's fleet view: who runs which revision, bounded, and never believing the body's service."""

from __future__ import annotations

import json

from tenantguard.rollout import FleetView, SidecarStatus


def report(instance: str, revision: str | None = "1", **extra: object) -> bytes:
    return json.dumps({"service": "billing", "instance": instance, "bundle_revision": revision,
                       "bundle_serial": 5, "bundle_sha256": "a" * 64, "relations_seq": 3, "ready": True,
                       "sent_at": 1.0, **extra}).encode()


def test_the_service_comes_from_the_subject_not_the_body() -> None:
    fleet = FleetView()
    status = fleet.receive("orders", report("i1"))
    assert isinstance(status, SidecarStatus) and status.service == "orders"
    assert fleet.summary(now=2.0)["by_service"] == {"orders": {"1": 1}}


def test_reports_are_bounded_validated_and_expire() -> None:
    fleet = FleetView(max_instances=2, silent_after=8.0, forget_after=10.0)
    assert fleet.receive("orders", report("i1"), now=0.0) and fleet.receive("orders", report("i2"), now=0.0)
    assert fleet.receive("orders", report("i3"), now=5.0) is None and fleet.dropped == 1
    assert fleet.receive("orders", report("i1", revision="2"), now=5.0) is not None  # a known instance updates
    assert fleet.receive("orders", report("i3"), now=11.0) is not None  # i2 expired, making room
    assert [s["instance"] for s in fleet.sidecars(now=11.0)] == ["i1", "i3"]
    for bad in (b"not json", report("i4", bundle_serial="5"), report("x" * 200), report("i5", pad="x" * 20_000),
                report("i6", relations_seq=-1), report("i7", bundle_sha256="short")):
        assert fleet.receive("orders", bad, now=11.0) is None
    assert fleet.malformed == 6
    assert fleet.summary(now=11.0)["by_revision"] == {"1": 1, "2": 1}


def test_console_fields_are_validated_and_the_rate_derived() -> None:
    """Staleness, trust and revocation sequences and the decision count (the console's fleet page)."""
    fleet = FleetView()
    old = fleet.receive("orders", report("legacy"), now=0.0)  # a sidecar from before these fields
    assert old is not None and old.staleness_seconds is None and old.decisions is None
    assert fleet.receive("orders", report("i1", staleness_seconds=0.4, trust_seq=2, revocations_seq=1,
                                          decisions=100), now=0.0)
    assert fleet.receive("orders", report("i1", staleness_seconds=0.2, trust_seq=2, revocations_seq=1,
                                          decisions=150), now=5.0)
    rows = {s["instance"]: s for s in fleet.sidecars(now=5.0)}
    assert rows["i1"]["decision_rate"] == 10.0 and rows["i1"]["trust_seq"] == 2
    assert rows["legacy"]["decision_rate"] is None
    assert fleet.receive("orders", report("i1", decisions=3), now=10.0)  # restarted: no negative rate
    assert {s["instance"]: s for s in fleet.sidecars(now=10.0)}["i1"]["decision_rate"] == 10.0
    for bad in (report("b1", staleness_seconds=-1), report("b2", staleness_seconds=True), report("b3", trust_seq=1.5),
                report("b4", decisions=-3), report("b5", revocations_seq="7"), report("b6", decisions=2**64)):
        assert fleet.receive("orders", bad, now=10.0) is None
    assert fleet.malformed == 6


def test_a_silent_instance_stays_listed_but_stops_counting_then_is_forgotten() -> None:
    """A sidecar cut off from NATS is the one an operator must see: it is listed as silent, not dropped."""
    fleet = FleetView(silent_after=11.0, forget_after=900.0)
    fleet.receive("orders", report("quiet"), now=0.0)
    fleet.receive("orders", report("chatty", revision="2"), now=0.0)
    fleet.receive("orders", report("chatty", revision="2"), now=60.0)
    rows = {s["instance"]: s for s in fleet.sidecars(now=61.0)}
    assert rows["quiet"]["silent"] is True and rows["chatty"]["silent"] is False
    summary = fleet.summary(now=61.0)
    assert summary["by_revision"] == {"2": 1} and summary["instances"] == 1 and summary["silent"] == 1
    assert [s["instance"] for s in fleet.sidecars(now=901.0)] == ["chatty"]
