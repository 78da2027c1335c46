"""The pieces of dev/demo that need no running system: CLI wiring, revisions, the trust switch."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from policy_plane.devenv.cli import app
from policy_plane.devenv.dev import _ports
from policy_plane.devenv.stack import bundle_revision, default_bundle_dir
from policy_plane.devenv.trust import KeyRegistration


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
    source = tmp_path / "b"
    source.mkdir()
    (source / ".manifest").write_text('{"revision": "1"}')
    (source / "p.rego").write_text("package p\n")
    first = bundle_revision(source)
    assert first == bundle_revision(source) and first.startswith("dev-")
    (source / "p.rego").write_text("package p\n\nx := 1\n")
    assert bundle_revision(source) != first
    assert (default_bundle_dir() / ".manifest").is_file()


def test_key_registration_switch() -> None:
    itself = KeyRegistration(self_registering=True)
    assert itself.sidecar_args("http://plane", Path("/s")) == ["--plane-url", "http://plane",
                                                               "--join-secret-file", "/s"]
    on_behalf = KeyRegistration(self_registering=False)
    assert on_behalf.sidecar_args("http://plane", Path("/s")) == []


def test_port_base_gives_plane_sidecar_and_grpc_ports() -> None:
    assert _ports(None) == (0, 0, 0)
    assert _ports(18000) == (18000, 18001, 18002)
