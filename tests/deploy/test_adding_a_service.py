"""deploy/README.md's "Adding a service", followed as written with the real ``plane init``.

The paragraph used to stop at the join secret: a sidecar of the new service then had no NATS
identity, and NATS (authorization on) refused it. It now says where the identity comes from;
this test checks that the steps it names find exactly that service's user, and that the
seed copied as ``nats.nk`` is the key that user names.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nkeys
from tenantguard.feed import topology

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("tenantguard")


def paragraph() -> str:
    text = " ".join((ROOT / "deploy" / "README.md").read_text(encoding="utf-8").split())
    return text.split("Adding a service:", 1)[1].split("\n## ", 1)[0].split(" ## ", 1)[0]


def test_adding_a_service_names_its_nats_identity() -> None:
    steps = paragraph()
    for needed in ("`tenantguard plane init /tmp/NAME-init --service NAME`", "`nats/NAME.nk`", "`nats.nk`",
                   "`tg.decisions.NAME.*`", "`deploy/secrets/plane/nats/users.conf`"):
        assert needed in steps, needed


def test_the_named_user_is_the_new_services_and_holds_its_seed(tmp_path: Path) -> None:
    scratch = tmp_path / "reports-init"  # the paragraph's /tmp/NAME-init, NAME = reports
    done = subprocess.run([str(CLI), "plane", "init", str(scratch), "--service", "reports"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    conf = (scratch / "nats" / "users.conf").read_text()
    users = json.loads(re.search(r"users = (\[.*\])\s*\}\s*$", conf, re.DOTALL).group(1))  # type: ignore[union-attr]
    named = [u for u in users if "tg.decisions.reports.*" in u["permissions"]["publish"]["allow"]]
    assert len(named) == 1  # the one user the paragraph says to copy
    seed = (scratch / "nats" / "reports.nk").read_bytes().strip()
    assert nkeys.from_seed(seed).public_key.decode() == named[0]["nkey"]
    wanted = topology.sidecar_permissions("reports")
    assert {k: v["allow"] for k, v in named[0]["permissions"].items()} == {k: list(v) for k, v in wanted.items()}
