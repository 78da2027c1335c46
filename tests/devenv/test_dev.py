"""``tenantguard dev`` as a user runs it: start, wait for the ready line, ask the sidecar, Ctrl-C;
then once more on the same folder (keys, store and bundle reused) and stop it with SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.keys import SigningKey
from tenantguard.procwatch import LineWatcher, wait_for_announcement
from tenantguard.tokens import mint

from .conftest import processes_mentioning, wait_gone

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

QUESTION = {"action": {"name": "invoices:read"},
            "resource": {"type": "invoice", "id": "inv-1", "properties": {"project": "p1"}}}


def start_dev(run_dir: Path) -> tuple[subprocess.Popen[str], dict[str, Any], LineWatcher]:
    proc = subprocess.Popen([sys.executable, "-m", "policy_plane.devenv", "dev", "--dir", str(run_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ready, watcher = wait_for_announcement(proc, "ready", 60)
    if ready is None:
        proc.terminate()  # SIGTERM lets dev stop its children; SIGKILL would orphan them
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise AssertionError("dev did not become ready:\n" + watcher.text())
    return proc, ready, watcher


def stop_dev(proc: subprocess.Popen[str], watcher: LineWatcher, sig: signal.Signals) -> tuple[int, str]:
    proc.send_signal(sig)
    proc.wait(timeout=30)
    watcher.join(timeout=10)
    return proc.returncode, watcher.text()


def ask(sidecar: str, run_dir: Path, sub: str) -> dict[str, Any]:
    token = mint(SigningKey.load(run_dir / "dev-issuer.pem"), issuer="dev", sub=sub, tenant_id="acme",
                 audience="orders", roles=["editor"])
    return httpx.post(f"{sidecar}/v1/check", json=QUESTION, headers={"Authorization": f"Bearer {token}"},
                      timeout=5).json()


def test_dev_runs_until_ctrl_c_and_leaves_nothing_behind(tmp_path: Path) -> None:
    run_dir = tmp_path / "dev"
    proc, ready, watcher = start_dev(run_dir)
    try:
        assert set(ready["pids"]) == {"nats-server", "plane", "sidecar-orders"}
        assert ready["nats"].startswith("nats://127.0.0.1:") and not ready["nats"].endswith(":4222")
        assert (Path(ready["admin_token_file"]).stat().st_mode & 0o777) == 0o600
        assert httpx.get(f"{ready['sidecar_http']}/ready", timeout=5).status_code == 200
        assert ask(ready["sidecar_http"], run_dir, "alice")["allow"] is True
        denied = ask(ready["sidecar_http"], run_dir, "bob")
        assert denied["allow"] is False and denied["reasons"] == ["not_project_member"]
        assert httpx.get(f"{ready['plane']}/ready", timeout=5).status_code == 200
        assert "tenantguard token mint" in watcher.text()
    finally:
        code, out = stop_dev(proc, watcher, signal.SIGINT)
    assert code == 0, out
    assert "stopped every process" in out
    assert wait_gone(ready["pids"].values()) == []
    assert processes_mentioning(str(run_dir)) == []

    # Second run on the same folder: same keys, the bundle already active, same answers; SIGTERM stops it.
    proc, again, watcher = start_dev(run_dir)
    try:
        assert "already active" in watcher.text()
        assert ask(again["sidecar_http"], run_dir, "alice")["allow"] is True
    finally:
        code, out = stop_dev(proc, watcher, signal.SIGTERM)
    assert code == 0, out
    assert wait_gone(again["pids"].values()) == []
    assert processes_mentioning(str(run_dir)) == []
