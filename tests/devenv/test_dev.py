"""``tenantguard dev`` as a user runs it: start, wait for the ready line, ask the sidecar, Ctrl-C;
then once more on the same folder (keys, store and bundle reused) and stop it with SIGTERM; then
with ``--reset`` (state gone, keys kept)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.bundle import content_revision
from tenantguard.client.plane import PlaneClient
from tenantguard.dev.procwatch import LineWatcher, wait_for_announcement
from tenantguard.devenv.stack import bundle_revision, default_bundle_dir
from tenantguard.identity.keys import SigningKey
from tenantguard.identity.tokens import mint
from tenantguard.relations import RelationChange, Relationship

from tests.harness.leftovers import processes_mentioning, wait_gone

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

QUESTION = {"action": {"name": "invoices:read"},
            "resource": {"type": "invoice", "id": "inv-1", "properties": {"project": "p1"}}}


def start_dev(run_dir: Path, *args: str) -> tuple[subprocess.Popen[str], dict[str, Any], LineWatcher]:
    proc = subprocess.Popen([sys.executable, "-m", "tenantguard.devenv", "dev", "--dir", str(run_dir), *args],
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


def plane_admin(ready: dict[str, Any]) -> PlaneClient:
    return PlaneClient(ready["plane"], token=Path(ready["admin_token_file"]).read_text().strip())


def until(probe: Any, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_dev_runs_until_ctrl_c_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """One folder, three runs: the first ends with a staged rollout (scope orders on another revision than
    all, as docs/operations.md does it) and a relationship written, the second (a plain restart) comes up
    on both, the third (``--reset``) on neither."""
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
        revision = content_revision(default_bundle_dir())  # as `bundle publish bundles/tenantguard` names it
        assert re.fullmatch(r"1-[0-9a-f]{12}", revision)
        assert f"revision {revision}" in " ".join(watcher.text().split())
        assert httpx.get(f"{ready['sidecar_http']}/v1/status", timeout=5).json()["bundle_revision"] == revision
        env_before = (run_dir / "dev.env").read_text()
        exported = re.findall(r"^export (\w+)=", env_before, re.M)
        banner = " ".join(re.sub("[\u2500-\u257f]", " ", watcher.text()).split())  # the panel's box drawing gone
        assert f"({', '.join(exported)})" in banner, banner  # the banner names every variable dev.env exports
        for second in (["dev"], ["demo", "--no-pg"], ["dev", "--reset"]):  # the same folder, while this one runs
            refused = run_devenv(*second, "--dir", str(run_dir))
            assert refused.returncode == 1, refused.stdout + refused.stderr
            assert "error dev_folder_in_use: another tenantguard dev or demo is already running in " \
                f"{run_dir} (pid {proc.pid})" in refused.stderr, refused.stderr
            assert "Traceback" not in refused.stderr
        assert (run_dir / "dev.env").read_text() == env_before  # not overwritten, and not removed
        assert ask(ready["sidecar_http"], run_dir, "alice")["allow"] is True  # the first run is untouched

        # docs/operations.md's staged rollout of an edited bundle: scope orders gets its revision, all keeps dev's
        edited = tmp_path / "edited"
        shutil.copytree(default_bundle_dir(), edited)
        (edited / "lib.rego").write_text((edited / "lib.rego").read_text() + "\n# edited for a staged rollout\n")
        staged = run_devenv("bundle", "publish", str(edited), "--stages", "orders;all",
                            "--plane", ready["plane"], "--token-file", ready["admin_token_file"])
        assert staged.returncode == 0, staged.stdout + staged.stderr
        staged_revision = json.loads(staged.stdout)["revision"]
        with plane_admin(ready) as plane:
            plane.write([RelationChange("write", Relationship.parse("acme/project:p1#member@user:bob"))])
            scopes = plane.status()["bundles"]
        assert scopes["orders"]["revision"] == staged_revision != scopes["all"]["revision"], scopes
        until(lambda: ask(ready["sidecar_http"], run_dir, "bob").get("allow") is True, "bob's membership")
        assert ask(ready["sidecar_http"], run_dir, "alice")["bundle_revision"] == staged_revision
    finally:
        code, out = stop_dev(proc, watcher, signal.SIGINT)
    assert code == 0, out
    assert "stopped every process" in out
    assert wait_gone(ready["pids"].values()) == []
    assert processes_mentioning(str(run_dir)) == []

    # Second run on the same folder: same keys, all's bundle already active, the sidecar on scope orders'
    # newer one (it used to wait for all's, in vain), bob still a member; SIGTERM stops it.
    proc, again, watcher = start_dev(run_dir)
    try:
        shown = " ".join(watcher.text().split())
        assert f"revision {content_revision(default_bundle_dir())} (already active)" in shown, shown
        assert f"sidecar orders runs revision {staged_revision}: scope orders announces a newer one" in shown, shown
        answer = ask(again["sidecar_http"], run_dir, "alice")
        assert answer["allow"] is True and answer["bundle_revision"] == staged_revision
        assert ask(again["sidecar_http"], run_dir, "bob")["allow"] is True
    finally:
        code, out = stop_dev(proc, watcher, signal.SIGTERM)
    assert code == 0, out
    assert wait_gone(again["pids"].values()) == []
    assert processes_mentioning(str(run_dir)) == []

    # Third run, --reset: the store, sidecar state and logs are gone (no rollout, no bob, the example bundle
    # published afresh), the keys and admin token are the same files.
    kept = {name: (run_dir / name).read_bytes() for name in ("plane/admin.token", "plane/event.pem", "dev-issuer.pem")}
    proc, fresh, watcher = start_dev(run_dir, "--reset")
    try:
        assert "removed nats, sidecars, logs, pids.json; kept keys and admin token" in watcher.text()
        assert "already active" not in watcher.text()
        example = bundle_revision(default_bundle_dir())
        with plane_admin(fresh) as plane:
            status = plane.status()
        assert {scope: a["revision"] for scope, a in status["bundles"].items()} == {"all": example}
        assert status["rollout"] is None and status["relations"]["count"] == 2  # dev's two example ones
        answer = ask(fresh["sidecar_http"], run_dir, "alice")
        assert answer["allow"] is True and answer["bundle_revision"] == example
        denied = ask(fresh["sidecar_http"], run_dir, "bob")
        assert denied["allow"] is False and denied["reasons"] == ["not_project_member"]
        assert {name: (run_dir / name).read_bytes() for name in kept} == kept
        assert (run_dir / "logs" / "plane.log").read_text().count('"event": "listening"') == 1  # this run's only
    finally:
        code, out = stop_dev(proc, watcher, signal.SIGINT)
    assert code == 0, out
    assert wait_gone(fresh["pids"].values()) == []
    assert processes_mentioning(str(run_dir)) == []


def test_reset_refuses_a_folder_that_is_no_dev_folder(tmp_path: Path) -> None:
    """``--reset --dir`` pointed at a project folder by mistake: refused, every file survives, no dev.lock."""
    project = tmp_path / "project"
    (project / "logs").mkdir(parents=True)  # names dev would remove in a dev folder
    (project / "logs" / "app.log").write_text("kept\n")
    (project / "pids.json").write_text("{}\n")
    (project / "README.md").write_text("mine\n")
    before = {p.relative_to(project): p.read_bytes() for p in project.rglob("*") if p.is_file()}
    done = run_devenv("dev", "--reset", "--dir", str(project))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"error config_invalid: --reset --dir {project}: not a dev folder (it has no dev.lock" in done.stderr, \
        done.stderr
    assert "nothing was removed" in done.stderr and "Traceback" not in done.stderr
    assert {p.relative_to(project): p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


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
    unnamed = tmp_path / "unnamed"
    unnamed.mkdir()
    (unnamed / ".manifest").write_text('{"roots": ["p"]}')  # nothing to name the bundle's revision after
    run_dir = tmp_path / "run"
    for bundle, says in ((tmp_path / "missing", "no such directory"),
                         (not_a_bundle, "not a bundle source directory, it has no .manifest"),
                         (unnamed, ".manifest names no revision to name the bundle after")):
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
