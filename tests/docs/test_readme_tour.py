"""README.md's five-minute tour, run as written, the way a new user runs it.

The tour's fenced ``bash`` blocks are read from README.md and each command is run verbatim in
``bash``, in a folder laid out like a fresh clone (``bundles/`` and ``.venv`` linked to this
checkout's), with every ``tenantguard`` removed from ``PATH`` and no ``TG_*`` variable set: so
the README's own activation step is what makes ``tenantguard`` found. Nothing is substituted.
The block that runs ``tenantguard dev`` runs in its own shell ("until Ctrl-C"); the blocks
after it run in another shell while it does (the README's "second shell"), and then the first
one gets a Ctrl-C (SIGINT to its process group, as a terminal sends it).

Each command must exit 0 and print what the README says it prints (``EXPECTED``); a command
added to the tour without an expectation here fails the test, so the two stay together.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from tenantguard.bundle import content_revision
from tenantguard.client.plane import Call, NotAPlane, PlaneClient
from tenantguard.dev.procwatch import wait_for_announcement
from tenantguard.errors import TenantGuardError

from tests.harness.leftovers import processes_mentioning
from tests.harness.user_shell import clone_like, dev_env, fresh_shell_env

pytestmark = [pytest.mark.nats, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TOUR_HEADING = "## A five-minute tour"
MARK = "@@tour-command"


@dataclass(frozen=True)
class Command:
    block: int
    text: str  # verbatim, continuation lines included

    @property
    def long_running(self) -> bool:
        return self.text.split("#")[0].split() == ["tenantguard", "dev"]


def tour_blocks() -> list[list[Command]]:
    """The tour section's ```bash blocks, each split into commands (comments and blanks dropped)."""
    text = README.read_text(encoding="utf-8")
    section = text.split(TOUR_HEADING, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```bash\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    found: list[list[Command]] = []
    for number, block in enumerate(blocks):
        commands: list[Command] = []
        pending: list[str] = []
        for line in block.splitlines():
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            pending.append(line)
            if not line.endswith("\\"):
                commands.append(Command(number, "\n".join(pending)))
                pending = []
        assert not pending, f"block {number} ends inside a continued line"
        found.append(commands)
    return found


# ----------------------------------------------------------------------------- what the README promises


def _json(out: str) -> dict[str, object]:
    body = json.loads(out)
    assert isinstance(body, dict), out
    return body


def _consistency_token(out: str) -> None:
    assert isinstance(_json(out)["consistency_token"], int), out


def _allowed(out: str) -> None:
    body = _json(out)
    assert body["allow"] is True, out
    assert {"reasons", "bundle_revision", "relations_seq"} <= set(body), out
    assert body["bundle_revision"] == EXAMPLE_REVISION, out


def _status(out: str) -> None:
    body = _json(out)
    assert {"bundle_revision", "relations_seq", "staleness_seconds", "feed"} <= set(body), out
    assert body["bundle_revision"] == EXAMPLE_REVISION and body["feed"] == "live", out
    assert re.fullmatch(r"1-[0-9a-f]{12}", body["bundle_revision"]), out


# "The revision, e.g. 1-3f2a9c0d1e4b, is the .manifest revision of bundles/tenantguard and 12 hex
# digits of a digest of its content"
EXAMPLE_REVISION = content_revision(ROOT / "bundles" / "tenantguard")


# command prefix -> check of its output (exit 0 is checked for every command)
EXPECTED: dict[str, Callable[[str], None]] = {
    "source .venv/bin/activate": lambda out: None,
    "tenantguard demo": lambda out: (
        re.search(r"RESULT: all \d+ steps behaved as expected", out) or pytest.fail(out[-4000:])),
    "tenantguard bundle test bundles/tenantguard": lambda out: (
        re.search(r"^\d+ passed, 0 failed$", out, re.MULTILINE) or pytest.fail(out[-3000:])),
    "tenantguard token demo": lambda out: (
        re.search(r"all \d+ steps behaved as expected", out) or pytest.fail(out[-3000:])),
    "tenantguard dev": lambda out: (
        ("tenantguard dev is running" in out and "stopped every process" in out) or pytest.fail(out[-4000:])),
    "source .tenantguard/dev.env": lambda out: None,
    "tenantguard relation write": _consistency_token,
    "TOKEN=$(tenantguard token mint": lambda out: None,
    'curl -s "$TG_SIDECAR_URL/v1/check"': _allowed,
    'curl -s "$TG_SIDECAR_URL/v1/status"': _status,
}


def expectation(command: Command) -> Callable[[str], None]:
    """The check of the longest matching prefix."""
    found = [prefix for prefix in EXPECTED if command.text.startswith(prefix)]
    assert found, f"README tour command without an expectation in this test: {command.text!r}"
    return EXPECTED[max(found, key=len)]


# ----------------------------------------------------------------------------- running it


def script(commands: list[Command]) -> str:
    """The commands verbatim, each followed by a marker line carrying its exit status."""
    lines = ["exec 2>&1"]
    for index, command in enumerate(commands):
        # the status marker starts on a line of its own even after output with no final newline (curl's)
        lines += [f"echo '{MARK} {index} start@@'", command.text,
                  f"__tour_rc=$?; printf '\\n{MARK} {index} rc=%s@@\\n' \"$__tour_rc\""]
    return "\n".join(lines) + "\n"


def results(commands: list[Command], output: str) -> list[tuple[Command, int | None, str]]:
    """Per command: its exit status (None: never finished) and what it printed."""
    found = []
    for index, command in enumerate(commands):
        match = re.search(rf"^{MARK} {index} start@@\n(.*?)\n{MARK} {index} rc=(\d+)@@$", output,
                          flags=re.MULTILINE | re.DOTALL)
        found.append((command, int(match.group(2)), match.group(1)) if match else (command, None, output))
    return found


def assert_as_documented(commands: list[Command], output: str) -> None:
    for command, status, printed in results(commands, output):
        assert status == 0, f"README command failed (exit {status}): {command.text}\n{printed[-4000:]}"
        expectation(command)(printed)


def test_the_readme_tour_runs_as_written(tmp_path: Path) -> None:
    blocks = tour_blocks()
    assert len(blocks) >= 3 and all(blocks), blocks
    long_running = [c for block in blocks for c in block if c.long_running]
    assert len(long_running) == 1 and blocks[long_running[0].block][-1] == long_running[0], \
        "the tour runs `tenantguard dev` once, as the last command of its block"
    dev_block = long_running[0].block
    for block in blocks:
        for command in block:
            expectation(command)  # every command has a documented expectation before anything runs

    folder = clone_like(tmp_path / "clone")
    env = fresh_shell_env()
    before = blocks[:dev_block]
    for commands in before:
        done = subprocess.run(["bash", "-c", script(commands)], cwd=folder, env=env, capture_output=True,
                              text=True, timeout=400, check=False)
        assert_as_documented(commands, done.stdout)

    dev_commands = blocks[dev_block]
    printed: list[str] = []
    shell = subprocess.Popen(["bash", "-c", script(dev_commands)], cwd=folder, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        ready, watcher = wait_for_announcement(shell, "ready", 120, sink=printed.append)
        assert ready is not None, "".join(printed)[-6000:]
        env_file = folder / ".tenantguard" / "dev.env"
        assert env_file.is_file()
        for commands in blocks[dev_block + 1:]:
            done = subprocess.run(["bash", "-c", script(commands)], cwd=folder, env=env, capture_output=True,
                                  text=True, timeout=120, check=False)
            assert_as_documented(commands, done.stdout)
        plane_answers_for_itself(dev_env(folder)["TG_PLANE_URL"])
    finally:
        os.killpg(shell.pid, signal.SIGINT)  # Ctrl-C, as a terminal sends it to the foreground group
        try:
            shell.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(shell.pid, signal.SIGTERM)
            shell.wait(timeout=30)
    watcher.join(timeout=10)
    assert_as_documented(dev_commands, "".join(printed))
    assert not env_file.exists(), "dev.env outlived the dev it describes"
    assert processes_mentioning(str(folder / ".tenantguard")) == []


def plane_answers_for_itself(plane_url: str) -> None:
    """A route the real plane does not have: its own not_found passes through, never NotAPlane."""
    with PlaneClient(plane_url) as plane, pytest.raises(TenantGuardError) as info:
        plane.send(Call("GET", "/v1/no-such-route"))
    assert not isinstance(info.value, NotAPlane) and info.value.code == "not_found", info.value


def test_the_tour_parser_sees_every_command() -> None:
    """Not vacuous: the blocks hold the commands the README shows, continuation lines kept whole."""
    texts = [c.text for block in tour_blocks() for c in block]
    assert texts[0].split("#")[0].strip() == "source .venv/bin/activate"
    assert any(t.startswith("tenantguard demo") for t in texts)
    check = next(t for t in texts if "/v1/check" in t)
    assert check.count("\n") == 1 and check.endswith("}}'")
