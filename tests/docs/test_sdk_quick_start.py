"""docs/sdk.md's quick start, run as written: its Python block is the app, a real sidecar decides.

The block is read from the page (nothing substituted) and served by uvicorn on a free port with
``TG_SIDECAR_URL`` pointing at a real sidecar process for ``orders`` holding the example bundle
and acme's membership of project p1, as ``tenantguard dev`` has it. The three answers the page
shows under its curl lines must come back.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tenantguard.dev.procwatch import wait_for_announcement
from tenantguard.testing import LocalSidecar, TestIssuer

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
SDK_DOC = ROOT / "docs" / "sdk.md"
HEADING = "## Quick start"
SERVE = """
import json, socket, sys, uvicorn
sys.path.insert(0, sys.argv[1])
from orders_app import app
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(128)  # connections wait in the backlog
print(json.dumps({"event": "listening", "http": "127.0.0.1:%d" % sock.getsockname()[1]}), flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
"""


def quick_start_python() -> str:
    """The first ```python block under the quick-start heading."""
    text = SDK_DOC.read_text()
    section = text[text.index(HEADING):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "the quick start has no python block"
    return match.group(1)


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, TestIssuer]]:
    issuer = TestIssuer("dev")
    workdir = tmp_path_factory.mktemp("quick-start")
    sidecar = LocalSidecar("orders", ROOT / "bundles" / "tenantguard", issuer=issuer,
                           relationships=["acme/project:p1#member@user:alice"], relations_seq=1,
                           workdir=workdir / "sidecar")
    sidecar.start()
    (workdir / "orders_app.py").write_text(quick_start_python())
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(workdir)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={"TG_SIDECAR_URL": sidecar.base_url, "PATH": "/usr/bin:/bin"})
    try:
        event, watcher = wait_for_announcement(proc, "listening", 60)
        assert event is not None, watcher.text()
        yield f"http://{event['http']}", issuer
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        sidecar.stop()


def test_the_quick_start_answers_as_the_page_shows(app_url: tuple[str, TestIssuer]) -> None:
    url, issuer = app_url
    token = issuer.mint("alice", "acme", "orders", roles=["editor"])
    auth = {"Authorization": f"Bearer {token}"}
    allowed = httpx.get(f"{url}/projects/p1/invoices/inv-1", headers=auth, timeout=10)
    assert allowed.status_code == 200 and allowed.json() == {"tenant": "acme", "user": "alice", "invoice": "inv-1"}
    denied = httpx.get(f"{url}/projects/p2/invoices/inv-1", headers=auth, timeout=10)
    assert denied.status_code == 403, denied.text
    assert denied.json()["error"] == "forbidden" and denied.json()["detail"]["reasons"] == ["not_project_member"]
    anonymous = httpx.get(f"{url}/projects/p1/invoices/inv-1", timeout=10)
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "token_missing", anonymous.text
