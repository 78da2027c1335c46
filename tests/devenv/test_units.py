"""The pieces of dev/demo that need no running system: CLI wiring, revisions, the trust switch."""

from __future__ import annotations

import io
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.status import Status
from tenantguard.bundle import content_revision
from tenantguard.devenv.cli import app
from tenantguard.devenv.dev import _ports
from tenantguard.devenv.procs import ChildFailed, Children, start_child
from tenantguard.devenv.stack import bundle_revision, check_bundle_dir, default_bundle_dir
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
    assert all(flag in dev.output for flag in ("--nats", "--dir", "--port-base", "--bundle"))
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
