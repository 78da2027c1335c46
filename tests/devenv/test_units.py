"""The pieces of dev/demo that need no running system: CLI wiring, revisions, the trust switch, what a
sidecar must report to be in step, what ``--reset`` removes."""

from __future__ import annotations

import io
import os
import re
import signal
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.status import Status
from tenantguard.bundle import content_revision
from tenantguard.devenv.cli import app
from tenantguard.devenv.dev import _behind_hint, _ports
from tenantguard.devenv.procs import ChildFailed, Children, start_child
from tenantguard.devenv.reset import check_resettable, reset_folder
from tenantguard.devenv.stack import (
    SidecarBehind,
    Stack,
    SyncTarget,
    bundle_revision,
    check_bundle_dir,
    default_bundle_dir,
)
from tenantguard.devenv.trust import KeyRegistration
from tenantguard.devenv.ui import Steps
from tenantguard.errors import ConfigError
from typer.testing import CliRunner


def test_cli_offers_dev_and_demo_with_their_flags() -> None:
    runner = CliRunner()
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert top.exit_code == 0 and "dev" in top.output and "demo" in top.output
    dev = runner.invoke(app, ["dev", "--help"], env={"COLUMNS": "200"})
    assert dev.exit_code == 0
    assert all(flag in dev.output for flag in ("--nats", "--dir", "--port-base", "--bundle", "--reset"))
    demo = runner.invoke(app, ["demo", "--help"], env={"COLUMNS": "200"})
    assert demo.exit_code == 0
    assert all(flag in demo.output for flag in ("--dir", "--keep", "--pg-dsn", "--no-pg", "--bundle"))


def test_bundle_revision_follows_content_only(tmp_path: Path) -> None:
    """dev and demo name the bundle as `bundle publish DIR` does (issue 30: they used dev-<hash of every
    file in the folder>, the CLI the bare .manifest revision): <.manifest revision>-<12 hex of what the
    bundle holds>, so a file the bundle leaves out changes nothing."""
    source = tmp_path / "b"
    source.mkdir()
    (source / ".manifest").write_text('{"revision": "1"}')
    (source / "p.rego").write_text("package p\n")
    first = bundle_revision(source)
    assert first == bundle_revision(source) == content_revision(source) and re.fullmatch(r"1-[0-9a-f]{12}", first)
    (source / "NOTES.md").write_text("not in the bundle\n")
    assert bundle_revision(source) == first
    (source / "p.rego").write_text("package p\n\nx := 1\n")
    assert bundle_revision(source) != first and bundle_revision(source) == content_revision(source)
    assert (default_bundle_dir() / ".manifest").is_file()
    assert re.fullmatch(r"1-[0-9a-f]{12}", bundle_revision(default_bundle_dir()))
    (source / ".manifest").write_text('{"roots": ["p"]}')
    with pytest.raises(ConfigError, match=r"\.manifest names no revision"):
        check_bundle_dir(source)


def test_key_registration_switch() -> None:
    itself = KeyRegistration(self_registering=True)
    assert itself.sidecar_args("http://plane", Path("/s")) == ["--plane-url", "http://plane",
                                                               "--join-secret-file", "/s"]
    on_behalf = KeyRegistration(self_registering=False)
    assert on_behalf.sidecar_args("http://plane", Path("/s")) == []


def test_port_base_gives_plane_sidecar_and_grpc_ports() -> None:
    assert _ports(None) == (0, 0, 0)
    assert _ports(18000) == (18000, 18001, 18002)


def test_a_child_starting_in_a_worker_thread_is_stopped_with_the_run(tmp_path: Path) -> None:
    """Ctrl-C while the sidecars start (in a worker thread) left the sidecar running in its own
    session: the run's cleanup stopped "every process" before the thread handed the child back.
    A child is now tracked from the moment it runs, so the cleanup reaches it."""
    go = tmp_path / "go"
    script = ("import json, pathlib, time\n"
              f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.01)\n"
              "print(json.dumps({'event': 'listening', 'http': '127.0.0.1:1'}), flush=True)\n"
              "time.sleep(600)\n")
    children = Children()
    outcome: list[object] = []

    def start() -> None:
        try:
            outcome.append(start_child("slow", [sys.executable, "-c", script], tmp_path / "slow.log", timeout=60,
                                       track=children))
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=start)
    worker.start()
    deadline = time.monotonic() + 30
    while "slow" not in children.pids():  # the child runs, not yet announced
        assert time.monotonic() < deadline, "the starting child was never tracked"
        time.sleep(0.01)
    pid = children.pids()["slow"]
    assert children.stop_all() == {"slow": -signal.SIGTERM}  # what dev's cleanup runs on Ctrl-C
    go.touch()
    worker.join(timeout=30)
    assert not worker.is_alive() and len(outcome) == 1
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert children.pids() == {}


def test_a_child_that_fails_to_start_is_not_tracked(tmp_path: Path) -> None:
    children = Children()
    with pytest.raises(ChildFailed, match="did not start"):
        start_child("dies", [sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "dies.log", track=children)
    assert children.pids() == {}


class _CtrlCWhileTheSpinnerStarts(Console):
    """A real terminal console whose spinner is interrupted while it starts: where a Ctrl-C lands when
    it arrives between two steps of ``dev`` or ``demo``. ``at`` is the moment: ``"drawing"`` right
    after its thread started, ``"registering"`` inside Rich's start, after the Live marked itself
    started and before the console knew it."""

    def __init__(self, at: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.at = at

    def set_live(self, live: Any) -> bool:
        if self.at == "registering":
            raise KeyboardInterrupt
        return super().set_live(live)

    def status(self, *args: Any, **kwargs: Any) -> Status:
        at = self.at

        class Interrupted(Status):
            def start(self) -> None:
                super().start()
                if at == "drawing":
                    raise KeyboardInterrupt

        return Interrupted(*args, console=self, **kwargs)


@pytest.mark.parametrize("at", ["drawing", "registering"])
def test_a_ctrl_c_while_a_step_starts_leaves_no_spinner_drawing(at: str) -> None:
    """The spinner's thread used to keep drawing the step over "stopping…" and "stopped every process";
    and a stop after an interrupted start must not turn the Ctrl-C into an IndexError (``demo`` then
    reported "demo failed (IndexError: pop from empty list)" instead of "interrupted")."""
    console = _CtrlCWhileTheSpinnerStarts(at, file=io.StringIO(), force_terminal=True, width=80)
    with pytest.raises(KeyboardInterrupt), Steps(console).step("policy plane keys"):
        pass
    assert console._live_stack == [], "a spinner is still live"
    for drawing in [t for t in threading.enumerate() if type(t).__name__ == "_RefreshThread"]:
        drawing.join(timeout=10)  # told to stop; it ends at its next tick
        assert not drawing.is_alive(), "the spinner's thread is still drawing"
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", console.file.getvalue())  # type: ignore[attr-defined]
    assert "✗ policy plane keys" in shown, shown


def _announce(revision: str, serial: int | None, *services: str) -> dict[str, Any]:
    return {"revision": revision, "serial": serial, "services": list(services)}


def _plane(**bundles: dict[str, Any]) -> dict[str, Any]:
    return {"relations": {"seq": 3}, "trust": {"seq": 2}, "bundles": bundles}


def _sidecar(revision: str | None, relations: int = 3, trust: int = 2) -> dict[str, Any]:
    return {"relations_seq": relations, "feed_detail": {"trust": {"applied_seq": trust}}, "bundle_revision": revision}


@pytest.mark.parametrize(("bundles", "expected"), [
    ({"all": _announce("dev-a", 10, "all")}, ("dev-a",)),
    # a staged rollout announced to orders (and billing) first: the sidecar keeps the newer serial
    ({"all": _announce("dev-a", 10, "all"), "orders": _announce("1", 20, "orders"),
      "billing": _announce("b", 30, "billing")}, ("1",)),
    # then all moved past it (a later publish or a rollback of all): all's, though orders still names "1"
    ({"all": _announce("dev-b", 40, "all"), "orders": _announce("1", 20, "orders")}, ("dev-b",)),
    ({"all": _announce("1", 20, "all"), "orders": _announce("1", 20, "orders")}, ("1",)),  # the rollout completed
    # serials that cannot order: the sidecar keeps whichever it activated first, so either
    ({"all": _announce("dev-a", 10, "all"), "orders": _announce("x", 10, "orders")}, ("dev-a", "x")),
    ({"all": _announce("dev-a", None, "all"), "orders": _announce("x", 20, "orders")}, ("dev-a", "x")),
    ({"all": _announce("dev-a", 10, "billing")}, (None,)),  # announced for other services only: not followed
    ({}, (None,)),
])
def test_a_sidecar_is_expected_on_the_newest_announce_of_all_and_its_own_scope(
        bundles: dict[str, Any], expected: tuple[str | None, ...]) -> None:
    target = SyncTarget.of(_plane(**bundles), "orders")
    assert target.revisions == expected
    for revision in expected:
        assert target.reached_by(_sidecar(revision))
    assert not target.reached_by(_sidecar("other"))
    assert not target.reached_by(_sidecar(expected[0], relations=2)) and not target.reached_by(_sidecar(expected[0],
                                                                                                          trust=1))
    assert not target.reached_by({})


def test_a_sidecar_that_never_catches_up_is_reported_with_what_was_wanted_and_its_log(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    log = tmp_path / "logs" / "sidecar-orders.log"
    stack.sidecars["orders"] = types.SimpleNamespace(url="http://127.0.0.1:1", log_path=log)  # type: ignore[assignment]
    target = SyncTarget.of(_plane(all=_announce("dev-a", 10, "all"), orders=_announce("1", 20, "orders")), "orders")
    with pytest.raises(SidecarBehind) as raised:
        stack._wait_caught_up("orders", target, timeout=0.05)
    message = str(raised.value)
    assert "waiting for sidecar orders to catch up with the plane: wanted relations seq >= 3, trust seq >= 2 and " \
        "bundle revision '1' (the newer by serial of scopes all 'dev-a' serial 10 and orders '1' serial 20); " \
        f"it reports nothing (no answer on /v1/status); its log: {log}" in message, message
    hint = _behind_hint(tmp_path / "dev", raised.value)
    assert f"tenantguard dev --reset --dir {tmp_path / 'dev'}" in hint and str(log) in hint


def _dev_folder(root: Path) -> Path:
    for name in ("nats/jetstream", "sidecars/orders/feed", "logs", "plane/join-secrets", "nats-auth"):
        (root / name).mkdir(parents=True)
    for name in ("dev.lock", "pids.json", "dev.env", "plane/admin.token", "dev-issuer.pem", "logs/plane.log",
                 "notes.txt"):
        (root / name).write_text("12\n" if name == "dev.lock" else name)
    return root


def test_reset_removes_the_state_and_keeps_the_keys_and_foreign_files(tmp_path: Path) -> None:
    root = _dev_folder(tmp_path / "dev")
    outside = tmp_path / "elsewhere"
    (outside / "keep").mkdir(parents=True)
    (root / "sidecars").rename(tmp_path / "sidecars-real")
    (root / "sidecars").symlink_to(outside)  # a link among the state entries: unlinked, never followed
    check_resettable(root, external_nats=False)
    assert reset_folder(root) == ["nats", "sidecars", "logs", "pids.json", "dev.env"]
    assert sorted(p.name for p in root.iterdir()) == ["dev-issuer.pem", "dev.lock", "nats-auth", "notes.txt", "plane"]
    assert (root / "plane" / "admin.token").read_text() == "plane/admin.token"
    assert (outside / "keep").is_dir()
    assert reset_folder(root) == []


def test_reset_refuses_what_is_no_dev_folder_and_accepts_an_empty_or_absent_one(tmp_path: Path) -> None:
    check_resettable(tmp_path / "absent", external_nats=False)
    (tmp_path / "empty").mkdir()
    check_resettable(tmp_path / "empty", external_nats=False)
    project = tmp_path / "project"
    (project / "logs").mkdir(parents=True)
    (project / "dev.lock").write_text("not ours\n")  # a lock of some other tool
    with pytest.raises(ConfigError, match=r"not a dev folder \(it has no dev.lock.*it holds dev.lock, logs\)"):
        check_resettable(project, external_nats=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a folder"):
        check_resettable(tmp_path / "file", external_nats=False)
    with pytest.raises(ConfigError, match="--reset with --nats"):
        check_resettable(_dev_folder(tmp_path / "dev"), external_nats=True)
