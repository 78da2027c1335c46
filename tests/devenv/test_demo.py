"""``tenantguard demo`` end to end, as the README runs it: a subprocess, its exit status, its summary,
and no process left behind (by the PIDs it recorded and by anything naming its run folder)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tenantguard.bundle import content_revision
from tenantguard.devenv.stack import default_bundle_dir

from tests.harness.leftovers import processes_mentioning, wait_gone

from .conftest import broken_bundle

pytestmark = [pytest.mark.nats, pytest.mark.timeout(180)]

STEPS = ("acme user: edge → orders → billing", "billing reads under RLS (acme)", "globex user, colliding ids",
         "billing reads under RLS (globex)", "revocation reaches every sidecar", "next call after revocation",
         "spoofed X-Tenant-Id: globex", "replayed orders token at billing")


def run_demo(run_dir: Path, *extra: str, timeout: float = 150) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tenantguard.devenv", "demo", "--dir", str(run_dir), *extra],
                          capture_output=True, text=True, timeout=timeout, check=False)
    return done, time.monotonic() - start


def assert_nothing_left(run_dir: Path) -> None:
    pids = json.loads((run_dir / "pids.json").read_text())
    assert wait_gone(pids.values()) == [], f"still running: {pids}"
    assert processes_mentioning(str(run_dir)) == []


def test_demo_plays_every_step_as_expected_and_stops_everything(tmp_path: Path) -> None:
    run_dir = tmp_path / "demo"
    done, elapsed = run_demo(run_dir)
    out = done.stdout
    assert done.returncode == 0, out[-6000:] + done.stderr[-3000:]
    assert "RESULT: all" in out and "steps behaved as expected" in out
    rows = {line.split("│")[1].strip(): line.split("│")[4].strip() for line in out.splitlines()
            if line.startswith("│") and line.count("│") == 5}
    assert set(STEPS) <= set(rows), rows
    assert all(rows[step] == "✓" or (rows[step] == "-" and "RLS" in step) for step in STEPS), rows
    assert "✗" not in out
    revision = content_revision(default_bundle_dir())  # as `bundle publish bundles/tenantguard` names it
    assert f"bundle revision {revision}" in " ".join(out.split()), out[-6000:]
    assert elapsed < 60, f"demo took {elapsed:.1f} s"
    assert set(json.loads((run_dir / "pids.json").read_text())) == {
        "nats-server", "plane", "sidecar-edge", "sidecar-orders", "sidecar-billing",
        "service-edge", "service-orders", "service-billing"}
    assert_nothing_left(run_dir)


def test_a_failing_start_still_stops_everything(tmp_path: Path) -> None:
    """A bundle the plane refuses (it does not compile): the demo fails after NATS and the plane
    started, and stops both."""
    run_dir = tmp_path / "demo"
    done, _ = run_demo(run_dir, "--bundle", str(broken_bundle(tmp_path)), "--no-pg")
    assert done.returncode == 1, done.stdout[-4000:]
    assert "RESULT: demo failed" in done.stdout and "bundle does not compile" in done.stdout
    assert processes_mentioning(str(run_dir)) == []
