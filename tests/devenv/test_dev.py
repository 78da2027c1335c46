"""``tenantguard dev`` as a user runs it: start, wait for the ready line, ask the sidecar, Ctrl-C;
then once more on the same folder (keys, store and bundle reused) and stop it with SIGTERM."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.dev.procwatch import LineWatcher, wait_for_announcement
from tenantguard.identity.keys import SigningKey
from tenantguard.identity.tokens import mint

from tests.harness.leftovers import processes_mentioning, wait_gone

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

QUESTION = {"action": {"name": "invoices:read"},
            "resource": {"type": "invoice", "id": "inv-1", "properties": {"project": "p1"}}}


def start_dev(run_dir: Path) -> tuple[subprocess.Popen[str], dict[str, Any], LineWatcher]:
    proc = subprocess.Popen([sys.executable, "-m", "tenantguard.devenv", "dev", "--dir", str(run_dir)],
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


def run_devenv(*args: str) -> subprocess.CompletedProcess[str]:
    """``tenantguard ARGS`` as a user runs it; a run that starts instead of being refused hits the timeout."""
    return subprocess.run([str(Path(sys.executable).with_name("tenantguard")), *args], capture_output=True,
                          text=True, timeout=60, check=False)


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
        env_before = (run_dir / "dev.env").read_text()
        exported = re.findall(r"^export (\w+)=", env_before, re.M)
        banner = " ".join(re.sub("[\u2500-\u257f]", " ", watcher.text()).split())  # the panel's box drawing gone
        assert f"({', '.join(exported)})" in banner, banner  # the banner names every variable dev.env exports
        for second in (["dev"], ["demo", "--no-pg"]):  # the same folder, while this one runs
            refused = run_devenv(*second, "--dir", str(run_dir))
            assert refused.returncode == 1, refused.stdout + refused.stderr
            assert "error dev_folder_in_use: another tenantguard dev or demo is already running in " \
                f"{run_dir} (pid {proc.pid})" in refused.stderr, refused.stderr
            assert "Traceback" not in refused.stderr
        assert (run_dir / "dev.env").read_text() == env_before  # not overwritten, and not removed
        assert ask(ready["sidecar_http"], run_dir, "alice")["allow"] is True  # the first run is untouched
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


def test_a_taken_port_base_is_refused_before_anything_starts(tmp_path: Path) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    base = holder.getsockname()[1]  # the plane's port (N), the first one tried
    run_dir = tmp_path / "dev"
    try:
        done = run_devenv("dev", "--dir", str(run_dir), "--port-base", str(base))
    finally:
        holder.close()
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"error config_invalid: --port-base {base}: port {base} (plane) on 127.0.0.1 is taken" \
        in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == ["dev.lock"]  # no NATS store, no keys, no logs


@pytest.mark.parametrize("command", ["dev", "demo"])
def test_a_bundle_option_that_is_no_bundle_is_refused_before_anything_starts(tmp_path: Path, command: str) -> None:
    not_a_bundle = tmp_path / "policy"
    not_a_bundle.mkdir()
    (not_a_bundle / "p.rego").write_text("package p\n")  # Rego, but no .manifest
    run_dir = tmp_path / "run"
    for bundle, says in ((tmp_path / "missing", "no such directory"),
                         (not_a_bundle, "not a bundle source directory, it has no .manifest")):
        extra = ["--no-pg"] if command == "demo" else []
        done = run_devenv(command, "--dir", str(run_dir), "--bundle", str(bundle), *extra)
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"error config_invalid: --bundle {bundle}: {says}" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
        assert not run_dir.exists() or sorted(p.name for p in run_dir.iterdir()) == ["dev.lock"]


def test_children_of_a_killed_dev_are_named_and_no_second_stack_starts_beside_them(tmp_path: Path) -> None:
    """SIGKILL leaves dev no chance to stop its children (own sessions); the next dev must not start a
    second nats-server on their JetStream store, and must say which processes to stop."""
    run_dir = tmp_path / "dev"
    proc, ready, watcher = start_dev(run_dir)
    children = ready["pids"]
    try:
        proc.kill()
        proc.wait(timeout=10)
        watcher.join(timeout=10)
        refused = run_devenv("dev", "--dir", str(run_dir))
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"error dev_folder_in_use: processes of an earlier tenantguard dev or demo in {run_dir} are " \
            "still running (" in refused.stderr, refused.stderr
        listed = " ".join(str(pid) for pid in sorted(children.values()))
        assert f"stop them (kill {listed}) and run again" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
        assert sorted(processes_mentioning(str(run_dir))) == sorted(children.values())  # nothing new started
    finally:
        for pid in children.values():  # the test started them (through dev): stop them by PID
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
        assert wait_gone(children.values(), timeout=30) == []


def test_ctrl_c_while_the_sidecar_starts_leaves_nothing_behind(tmp_path: Path) -> None:
    """Found by hand: Ctrl-C between "example bundle" and "sidecar for service orders" printed
    "stopped every process" and left the sidecar (started in a worker thread, in its own
    session) running, holding its ports for the next ``dev``."""
    run_dir = tmp_path / "dev"
    proc = subprocess.Popen([sys.executable, "-m", "tenantguard.devenv", "dev", "--dir", str(run_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watcher = LineWatcher(proc.stdout)  # type: ignore[arg-type]
    sidecar_cmd = f"--state-dir {run_dir / 'sidecars' / 'orders'}"
    try:
        deadline = time.monotonic() + 90
        while not any(sidecar_cmd in cmd for cmd in commands_of(processes_mentioning(str(run_dir)))):
            assert proc.poll() is None and time.monotonic() < deadline, watcher.text()
            time.sleep(0.02)
        assert "is running" not in watcher.text()  # the sidecar is starting, not yet announced
    finally:
        code, out = stop_dev(proc, watcher, signal.SIGINT)
    assert code == 0 and "stopped every process" in out, (code, out)
    assert wait_gone(processes_mentioning(str(run_dir))) == [], out


def commands_of(pids: list[int]) -> list[str]:
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return found
