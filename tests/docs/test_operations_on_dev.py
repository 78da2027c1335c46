"""docs/operations.md's day-one flows, run as written against ``tenantguard dev``.

The page says that, with dev running, its "Trying them on `tenantguard dev`" block makes the
examples run as written. This test holds it to that: in a folder laid out like a fresh clone, with
``tenantguard dev`` running, it runs that block and then, verbatim, the page's blocks for trusting
an edge issuer (First start, step 3), retiring its key (Rotating keys) and the kill switch
(Revoking), plus policy-authoring.md's "publish to the dev plane" sentences (on an edited copy of
bundles/); between them it asks dev's sidecar what a newcomer would ask, to see each step change
the decision.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import httpx
import pytest
from tenantguard.bundle import content_revision
from tenantguard.dev.procwatch import wait_for_announcement

from tests.harness.leftovers import processes_mentioning
from tests.harness.user_shell import clone_like, dev_env, fresh_shell_env

pytestmark = [pytest.mark.nats, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "operations.md"
CHECK = {"action": {"name": "invoices:read"}, "resource": {"type": "invoice", "id": "inv-1",
                                                            "properties": {"project": "p1"}}}


def block(containing: str, fence: str = "sh") -> str:
    """The one fenced block of the page holding ``containing``, dedented (list items indent theirs)."""
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(rf"^( *)```{fence}\n(.*?)^\1```$", text, flags=re.MULTILINE | re.DOTALL)
    found = [textwrap.dedent(body) for _, body in blocks if containing in body]
    assert len(found) == 1, (containing, found)
    return found[0]


def run_block(folder: Path, env: dict[str, str], body: str) -> str:
    """``body`` after the page's dev block, in a new ``bash -e`` (a second shell, as the page says)."""
    setup = block("ln -sfn .tenantguard/plane secrets", fence="bash")
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", setup + body], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{body}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    return done.stdout


def json_values(text: str) -> list[object]:
    """Every JSON value printed, in order (curl's answers end without a newline, so two share a line)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while (start := text.find("{", at)) >= 0:
        value, at = decoder.raw_decode(text, start)
        values.append(value)
    return values


def sidecar_says(sidecar: str, token: str) -> httpx.Response:
    return httpx.post(f"{sidecar}/v1/check", json=CHECK, headers={"Authorization": f"Bearer {token}"}, timeout=10)


def wait_for_trust(sidecar: str, seq: int) -> None:
    """Until the sidecar applied trust sequence ``seq`` (it arrives over NATS after the plane answers)."""
    deadline = time.monotonic() + 30
    while httpx.get(f"{sidecar}/v1/status", timeout=10).json()["feed_detail"]["trust"]["applied_seq"] < seq:
        assert time.monotonic() < deadline, "the sidecar never applied the trust change"
        time.sleep(0.1)


def mint(folder: Path, env: dict[str, str], key: str, issuer: str, sub: str = "alice") -> str:
    return run_block(folder, env, f"tenantguard token mint --key {key} --issuer {issuer} --sub {sub} --tenant acme "
                                  "--aud orders --role editor\n").strip()


def test_operations_day_one_runs_as_written_on_dev(tmp_path: Path) -> None:
    folder = clone_like(tmp_path / "clone")
    env = fresh_shell_env()
    env["PATH"] = f"{folder / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"  # the README's activation, for dev itself
    printed: list[str] = []
    dev = subprocess.Popen(["tenantguard", "dev"], cwd=folder, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        ready, watcher = wait_for_announcement(dev, "ready", 120, sink=printed.append)
        assert ready is not None, "".join(printed)[-6000:]
        sidecar = dev_env(folder)["TG_SIDECAR_URL"]

        # First start, step 3: trust the edge's issuer; its tokens are then accepted
        trusted = run_block(folder, env, block("keys jwks edge.pem.pub --issuer edge"))
        answer = json_values(trusted)[-1]
        assert isinstance(answer, dict)
        assert answer["issuer"] == "edge" and answer["changed"] is True, trusted
        wait_for_trust(sidecar, answer["trust_seq"])
        edge_token = mint(folder, env, "edge.pem", "edge")
        assert sidecar_says(sidecar, edge_token).json()["allow"] is True

        # Rotating keys: the old key given a not_after, then removed; its tokens are refused
        retired = run_block(folder, env, block("trust/keys/$KID"))
        extended, removed = json_values(retired)
        assert isinstance(extended, dict) and isinstance(removed, dict)
        assert extended["changed"] is True and removed["removed"] is True, retired
        wait_for_trust(sidecar, removed["trust_seq"])
        refused = sidecar_says(sidecar, edge_token)
        assert refused.status_code == 401 and refused.json()["error"] == "unknown_kid", refused.text

        # Revoking: kill switch, a subject, the switch lifted, the list read back
        revoked = run_block(folder, env, block("revoke tenant acme"))
        listed = json_values(revoked)[-1]
        assert isinstance(listed, dict)
        assert [r["kind"] for r in listed["revocations"]] == ["tenant", "subject", "lift_tenant"], listed

        # policy-authoring.md: after a change, publishing to the dev plane changes what its sidecar runs;
        # dev published bundles/tenantguard as `bundle publish` names it, so the change is a new revision
        started_on = httpx.get(f"{sidecar}/v1/status", timeout=10).json()["bundle_revision"]
        assert started_on == content_revision(folder / "bundles" / "tenantguard")
        (folder / "bundles").unlink()  # the clone's own files, to edit (not this checkout's)
        shutil.copytree(ROOT / "bundles", folder / "bundles")
        (folder / "bundles" / "tenantguard" / "note.rego").write_text(
            'package tenantguard.note\n\nimport rego.v1\n\nnote := "an edit"\n')
        published = run_block(folder, env, "tenantguard bundle publish bundles/tenantguard\n")
        revision = json.loads(published)["revision"]
        assert revision == content_revision(folder / "bundles" / "tenantguard") != started_on
        assert re.fullmatch(r"1-[0-9a-f]{12}", revision), revision
        deadline = time.monotonic() + 30
        while httpx.get(f"{sidecar}/v1/status", timeout=10).json()["bundle_revision"] != revision:
            assert time.monotonic() < deadline, "the sidecar never ran the published revision"
            time.sleep(0.1)
        carol = mint(folder, env, ".tenantguard/dev-issuer.pem", "dev", sub="carol")  # alice's tokens were cut off
        assert sidecar_says(sidecar, carol).json()["bundle_revision"] == revision
        again = json.loads(run_block(folder, env, "tenantguard bundle publish bundles/tenantguard\n"))
        assert again["revision"] == revision and [s["unchanged"] for s in again["scopes"]] == [True], again
    finally:
        os.killpg(dev.pid, signal.SIGINT)
        try:
            dev.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(dev.pid, signal.SIGTERM)
            dev.wait(timeout=30)
    watcher.join(timeout=10)
    assert processes_mentioning(str(folder / ".tenantguard")) == []
