"""docs/policy-authoring.md's ``bundle eval`` block, run verbatim as a new user runs it.

The block once read ``--input @input.json`` from a file the page never made; it now writes
the file itself, and this test runs every line of it in ``bash -e`` in an empty folder (with
``bundles/`` linked to this checkout's) and checks the answers the comments promise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "policy-authoring.md"
BIN = Path(sys.executable).parent


def eval_block() -> str:
    blocks = re.findall(r"^```sh\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    found = [block for block in blocks if "bundle eval" in block]
    assert len(found) == 1, found
    return found[0]


def test_the_bundle_eval_block_runs_as_written(tmp_path: Path) -> None:
    block = eval_block()
    assert "cat > input.json" in block  # the file --input @input.json reads is made on the page
    (tmp_path / "bundles").symlink_to(ROOT / "bundles")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TG_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(["bash", "-e", "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    after_build = done.stdout.split("\nwrote /tmp/b.tar.gz: ", 1)[1].split("\n", 1)[1]
    decision, end = json.JSONDecoder().raw_decode(after_build)
    assert decision == {"allow": True, "high_risk": False, "reasons": []}, done.stdout
    assert after_build[end:].strip() == '"exchange"', done.stdout
    # the sentence under the block: in project p1, a deny with not_project_member whatever relations say
    document = json.loads((tmp_path / "input.json").read_text()) | {"relations": {"project:p1": ["member"]}}
    document["resource"]["properties"]["project"] = "p1"
    denied = subprocess.run([str(BIN / "tenantguard"), "bundle", "eval", "/tmp/b.tar.gz", "--key", "dev.pem.pub",
                             "--input", json.dumps(document)], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    assert denied.returncode == 0 and json.loads(denied.stdout)["reasons"] == ["not_project_member"], denied
