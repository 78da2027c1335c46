"""The console in a real headless browser (Debian's chromium driven by Playwright) against a
real deployment: nats-server, the plane and a billing sidecar, each its own process.

The sidecar reaches NATS through a TCP relay this test can cut, so "its feed is stopped"
is a real lost connection. One browser and one deployment for the module. With
``TG_CONSOLE_SCREENSHOTS=1`` the screenshots go to docs/console/ (else a temp dir).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
from tenantguard.bundle import content_revision
from tenantguard.client.plane import PLANE_TITLE
from tenantguard.decisionlog.wire import encode_batches
from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import topology as topo

from tests.harness.cluster import Cluster
from tests.harness.launch import launch
from tests.harness.paths import BUNDLE_DIR, REPO, TENANTGUARD
from tests.harness.waiting import eventually

pytestmark = [pytest.mark.nats, pytest.mark.timeout(300)]

CHROMIUM = "/usr/bin/chromium"
EVIL = "<script>alert(1)</script>"
SHOTS = REPO / "docs" / "console"

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")


class Relay:
    """A TCP relay to NATS on a free port; ``cut()`` drops every connection and refuses new ones."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        self.closed = False
        self.thread = threading.Thread(target=self._accept, name="nats-relay", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # cut
            with self.lock:
                if self.closed:
                    client.close()
                    return
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
                self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        with self.lock:
            self.closed = True
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close() alone does not
            self.listener.close()
            for s in self.open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Relay]]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)")
    root = tmp_path_factory.mktemp("console-browser")
    running = Cluster(root, NatsServer(root / "nats").start())
    relay: Relay | None = None
    try:
        running.init_plane_material(("billing",))
        running.start_plane(("billing",))
        running.trust_edge_issuer()
        running.publish_bundle_cli()
        host, port = running.nats.url.removeprefix("nats://").rsplit(":", 1)
        relay = Relay((host, int(port)))
        args = running.sidecar_args("billing", "--sidecar-id", "billing-console")
        args[args.index("--nats") + 1] = relay.url
        running.sidecars["billing"] = running.track(launch("sidecar-billing", args, running.logs))
        eventually(lambda: running.status("billing")["ready"] and "edge" in running.status("billing")["trust"][
            "issuers"], "billing ready")
        yield running, relay
    finally:
        if relay is not None:
            relay.cut()
        running.close()


@pytest.fixture(scope="module")
def page(deployment: tuple[Cluster, Relay], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    shots = SHOTS if os.environ.get("TG_CONSOLE_SCREENSHOTS") else tmp_path_factory.mktemp("shots")
    with sync_api.sync_playwright() as pw:
        try:  # Debian's chromium, never a downloaded build (no `playwright install`)
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        except sync_api.Error as exc:
            pytest.skip(f"chromium cannot run here: {str(exc)[:300]}")
        context = browser.new_context(viewport={"width": 1200, "height": 760})
        tab = context.new_page()
        tab.set_default_timeout(15_000)
        tab.problems = []  # CSP violations, script errors, dialogs (an executed injected script)
        tab.on("console", lambda m: m.type == "error" and tab.problems.append(m.text))
        tab.on("pageerror", lambda e: tab.problems.append(str(e)))
        tab.on("dialog", lambda d: (tab.problems.append(f"dialog: {d.message}"), d.dismiss()))
        tab.shots = shots
        try:
            yield tab
        finally:
            context.close()
            browser.close()


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(page.shots / f"{name}.png"))


def plane_url(cluster: Cluster, path: str) -> str:
    assert cluster.plane is not None
    return f"{cluster.plane.url}{path}"


async def _publish(url: str, record: dict[str, Any]) -> None:
    nc = await nats.connect(url, connect_timeout=2, allow_reconnect=False)
    try:
        for tenant, _, data in encode_batches([record]):
            await nc.jetstream(timeout=5).publish(topo.decisions_subject("billing", tenant), data,
                                                  stream=topo.STREAM_DECISIONS)
    finally:
        await nc.close()


def allowed(cluster: Cluster, token: str) -> bool:
    """The sidecar's answer; a refused token (401: the kill switch refuses the tenant's tokens) is a deny."""
    r = cluster.check("billing", token)
    assert r.status_code in (200, 401), r.text
    return r.status_code == 200 and bool(r.json()["allow"])


def received(cluster: Cluster) -> int:
    return int(cluster.plane_status()["decisions"]["received"])


def test_console_in_a_browser(deployment: tuple[Cluster, Relay], page: Any,
                              tmp_path_factory: pytest.TempPathFactory) -> None:
    cluster, relay = deployment
    expect = sync_api.expect
    expect.set_options(timeout=15_000)  # a shared 2-core machine: bound a hang, do not race

    # -- sign in (the form, then the fleet)
    page.goto(plane_url(cluster, "/console/"))
    expect(page).to_have_url(plane_url(cluster, "/console/login"))
    shot(page, "login")
    page.fill("#token", cluster.admin_token)
    page.click("#sign-in")
    expect(page.locator("#role")).to_have_text("admin")
    assert cluster.admin_token not in page.content()

    # -- decisions: alice is a member, bob is not; one attacker-named record straight into the stream
    seq = cluster.write("acme/project:p1#member@user:alice")
    eventually(lambda: cluster.status("billing")["relations_seq"] >= seq, "relations at the sidecar")
    alice = cluster.token("alice", "billing")  # issued before the kill switch below: it covers this token
    start = received(cluster)
    assert [cluster.check("billing", alice).json()["allow"] for _ in range(5)] == [True] * 5
    assert cluster.check("billing", cluster.token("bob", "billing")).json()["allow"] is False
    evil = {"v": 2, "decision_id": "evil-browser", "time": time.time(), "service": "billing", "tenant": EVIL,
            "subject": f"user:{EVIL}", "action": "invoices:read", "resource": "invoice:1", "allow": False,
            "reasons": [EVIL], "relations_seq": 0, "input": None}
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API keeps a loop running in this thread
        pool.submit(lambda: asyncio.run(asyncio.wait_for(_publish(cluster.nats.url, evil), 30))).result()
    eventually(lambda: received(cluster) >= start + 7, "the records at the plane")

    # -- fleet: the sidecar with its revision, sequences and a decision rate
    page.goto(plane_url(cluster, "/console/"))
    row = page.locator("tr[data-service='billing']")
    expect(row.locator(".state")).to_have_text("ready")
    expect(row).to_contain_text(str(cluster.plane_status()["bundles"]["all"]["revision"]))
    shot(page, "fleet")

    # -- the decision log: find bob's denied decision, open its explanation
    page.goto(plane_url(cluster, "/console/decisions"))
    expect(page.locator("#decisions")).to_contain_text(EVIL)  # shown as text: no dialog, no script ran
    page.fill("input[name=subject]", "user:bob")
    page.select_option("#allow", "deny")
    page.click("#search")
    denied = page.locator("#decisions tbody tr.deny")
    expect(denied.first).to_contain_text("user:bob")
    shot(page, "decisions")
    denied.first.locator("a.explain").click()
    expect(page.locator("#record .result")).to_have_text("deny")
    expect(page.locator("#reevaluation")).to_contain_text("same as recorded")
    shot(page, "explain")

    # -- the kill switch: trip (confirm), alice denied; lift (confirm), alice allowed again
    page.goto(plane_url(cluster, "/console/tenants"))
    page.fill("#tenant", "acme")
    page.click("#search")
    expect(page.locator("#relations")).to_contain_text("user:alice")
    expect(page.locator("#kill-state")).to_have_text("off")
    shot(page, "tenants")
    page.click("#kill-switch")
    expect(page.locator("#confirm")).to_be_visible()
    shot(page, "confirm")
    page.click("#confirm")
    expect(page.locator("#done")).to_contain_text("tripped")
    eventually(lambda: not allowed(cluster, alice), "alice denied by the kill switch")  # her token: refused
    # a token issued after the cut-off (by more than the verifier's leeway, which widens cut-offs)
    # passes verification; the decision then denies the tenant
    start = received(cluster)

    def passes_verification() -> tuple[str, httpx.Response] | None:
        token = cluster.token("alice", "billing", age=0)
        answer = cluster.check("billing", token)
        return (token, answer) if answer.status_code == 200 else None

    fresh, r = eventually(passes_verification, "a token issued after the cut-off and the leeway")
    assert r.json()["allow"] is False, r.text
    eventually(lambda: received(cluster) > start, "the denied record at the plane")
    page.goto(plane_url(cluster, "/console/decisions?subject=user:alice&allow=deny"))
    expect(page.locator("#decisions tbody tr.deny").first).to_contain_text("tenant_revoked")
    page.goto(plane_url(cluster, "/console/tenants?tenant=acme"))
    expect(page.locator("#kill-state")).to_have_text("TRIPPED")
    page.click("#kill-switch")
    page.click("#confirm")
    expect(page.locator("#done")).to_contain_text("lifted")
    start = received(cluster)
    eventually(lambda: allowed(cluster, alice), "alice allowed again")
    assert allowed(cluster, fresh)
    eventually(lambda: received(cluster) >= start + 2, "the allowed records at the plane")
    page.goto(plane_url(cluster, "/console/decisions?subject=user:alice"))
    expect(page.locator("#decisions tbody tr").first.locator(".result")).to_have_text("allow")

    # -- bundles: a staged rollout of a change, billing first. Both are revision "1" in .manifest; issue 30:
    # the page showed "1" for the active bundle and the staged one alike, now each is 1-<12 hex of its content
    active = str(cluster.plane_status()["bundles"]["all"]["revision"])
    changed = tmp_path_factory.mktemp("staged") / "tenantguard"
    shutil.copytree(BUNDLE_DIR, changed)
    (changed / "note.rego").write_text('package tenantguard.note\n\nimport rego.v1\n\nnote := "staged"\n')
    staged = content_revision(changed)
    assert re.fullmatch(r"1-[0-9a-f]{12}", staged) and active == content_revision(BUNDLE_DIR) != staged
    done = subprocess.run([TENANTGUARD, "bundle", "publish", str(changed), "--plane", plane_url(cluster, ""),
                           "--token-file", str(cluster.keys / "admin.token"), "--stages", "billing;all"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    eventually(lambda: cluster.status("billing")["bundle_revision"] == staged, "billing on the staged revision")
    eventually(lambda: staged in cluster.plane_status()["fleet"]["by_service"].get("billing", {}),
               "the fleet view has billing on the staged revision")
    page.goto(plane_url(cluster, "/console/bundles"))
    expect(page.locator("#rollout")).to_contain_text(f"of {staged}: in_progress")
    scopes = page.locator("#scopes tbody tr")
    expect(scopes.filter(has_text="billing").locator("td").nth(1)).to_have_text(staged)  # whole, never cut
    expect(scopes.filter(has=page.locator("td", has_text=re.compile(r"^all$"))).locator("td").nth(1)).to_have_text(
        active)
    expect(page.locator("#running tbody tr").filter(has_text=staged)).to_contain_text("billing/")
    shot(page, "bundles")
    page.goto(plane_url(cluster, "/console/revocations"))
    expect(page.locator("#revocations")).to_contain_text("lift_tenant")
    shot(page, "revocations")
    page.goto(plane_url(cluster, "/console/audit"))
    expect(page.locator("#audit")).to_contain_text("revocations.add")
    shot(page, "audit")

    # -- the feed stops: the sidecar goes stale on the fleet page
    relay.cut()
    page.goto(plane_url(cluster, "/console/"))
    expect(row.locator(".state")).to_have_text("stale", timeout=25_000)  # the page refreshes itself
    assert "auto=1" in page.url  # ...saying so: its own reloads do not keep the session alive
    shot(page, "fleet-stale")

    # -- sign out: the session is gone
    page.click("#logout")
    expect(page).to_have_url(plane_url(cluster, "/console/login"))
    page.goto(plane_url(cluster, "/console/audit"))
    expect(page).to_have_url(plane_url(cluster, "/console/login"))
    assert page.problems == [], page.problems


def test_openapi_pages_render_offline(deployment: tuple[Cluster, Relay], page: Any) -> None:
    """Swagger UI of the plane and of the sidecar renders from their own assets (no CDN here)."""
    cluster, _ = deployment
    expect = sync_api.expect
    for base, title in ((plane_url(cluster, ""), PLANE_TITLE), (cluster.url("billing"), "tenantguard sidecar")):
        html = httpx.get(f"{base}/docs", timeout=10).text
        assert "cdn." not in html and "//" not in html.replace("http://", "").replace("https://", "//"), base
        page.goto(f"{base}/docs")
        expect(page.locator(".swagger-ui .info .title")).to_contain_text(title)


ATTRIBUTE_BREAK = '" onmouseover="alert(4)" x="'
TAG_BREAK = "</code></td><script>alert(5)</script><img src=x onerror=alert(6)>"


async def _publish_status(url: str, report: dict[str, Any]) -> None:
    nc = await nats.connect(url, connect_timeout=2, allow_reconnect=False)
    try:
        await nc.publish(topo.status_subject("billing"), json.dumps(report).encode())
        await nc.flush()
    finally:
        await nc.close()


def test_stored_data_of_every_kind_renders_inert(deployment: tuple[Cluster, Relay], page: Any) -> None:
    """What a sidecar's credential can put in front of an admin: its status report (instance name,
    revision, shadow examples) and its decision records (every member, the input explained in a
    <pre>). Each breaks out of an attribute, a table cell or a <pre> if rendered raw; the
    browser must show them as text, with no dialog, no script and no CSP report."""
    cluster, _ = deployment
    sync_api.expect.set_options(timeout=15_000)
    page.problems.clear()
    page.goto(plane_url(cluster, "/console/login"))
    page.fill("#token", cluster.admin_token)
    page.click("#sign-in")
    sync_api.expect(page.locator("#role")).to_have_text("admin")
    report = {"instance": ATTRIBUTE_BREAK, "bundle_revision": TAG_BREAK, "relations_seq": 0, "ready": True,
              "sent_at": time.time(), "shadow": {"revision": TAG_BREAK, "evaluated": 1, "disagreed": {TAG_BREAK: 1},
                                                 "examples": [{"reason": TAG_BREAK}]}}
    record = {"v": 2, "decision_id": "evil-input", "time": time.time(), "service": "billing", "tenant": "acme",
              "subject": "user:alice", "action": TAG_BREAK, "resource": f"invoice:{ATTRIBUTE_BREAK}",
              "allow": False, "reasons": [ATTRIBUTE_BREAK], "relations_seq": 0,
              "input": {"subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme",
                                                                                   "note": "</pre>" + TAG_BREAK}},
                        "action": {"name": TAG_BREAK}, "resource": {"type": "invoice", "id": ATTRIBUTE_BREAK},
                        "context": {}}}
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API keeps a loop running in this thread
        pool.submit(lambda: asyncio.run(asyncio.wait_for(_publish_status(cluster.nats.url, report), 30))).result()
        pool.submit(lambda: asyncio.run(asyncio.wait_for(_publish(cluster.nats.url, record), 30))).result()
    eventually(lambda: any(s["instance"] == ATTRIBUTE_BREAK for s in
                           httpx.get(plane_url(cluster, "/v1/rollouts"), timeout=10,
                                     headers={"Authorization": f"Bearer {cluster.admin_token}"}).json()["sidecars"]),
               "the status report at the plane")
    page.goto(plane_url(cluster, "/console/"))
    sync_api.expect(page.locator("#sidecars, main").first).to_contain_text(TAG_BREAK)
    page.hover("text=" + ATTRIBUTE_BREAK.strip('"'))  # an injected onmouseover would fire here
    page.goto(plane_url(cluster, "/console/bundles"))
    sync_api.expect(page.locator("main")).to_contain_text("alert(5)")
    page.goto(plane_url(cluster, "/console/decisions"))
    eventually(lambda: (page.reload(), "evil-input" in page.content())[1], "the record in the log")
    page.goto(plane_url(cluster, "/console/decisions/evil-input?tenant=acme&service=billing"))
    sync_api.expect(page.locator("main")).to_contain_text("</pre>")
    assert page.problems == [], page.problems
    assert page.evaluate("document.querySelectorAll('main script, main img').length") == 0
