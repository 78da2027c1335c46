"""The publish gate's setting: a request may ask the plane for more checking, never for less."""

from __future__ import annotations

import pytest
from tenantguard.errors import BundleMalformed

from policy_plane.bundles import ImpactGate


def test_a_request_cannot_switch_off_or_loosen_an_enforcing_gate() -> None:
    plane = ImpactGate("enforce", max_undeclared=2)
    assert plane.stricter("off", None) == ImpactGate("enforce", 2)
    assert plane.stricter("report", 100) == ImpactGate("enforce", 2)  # the attempt to raise the bound fails
    assert plane.stricter(None, 0) == ImpactGate("enforce", 0)  # tightening is allowed


def test_a_request_may_turn_checking_on_where_the_plane_has_it_off() -> None:
    plane = ImpactGate()
    assert plane.stricter(None, None).mode == "off"
    assert plane.stricter("report", None) == ImpactGate("report", 0)
    assert plane.stricter("enforce", 5) == ImpactGate("enforce", 5)
    assert ImpactGate("report").stricter("off", None).mode == "report"
    with pytest.raises(BundleMalformed):
        plane.stricter("lenient", None)
