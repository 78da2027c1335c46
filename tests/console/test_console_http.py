"""The console over HTTP, without a browser: sign-in, sessions, CSRF, the read-only role,
escaping and headers, against a real plane on a real nats-server (one for the module)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import nats
import pytest
from tenantguard.decisionlog.wire import encode_batches
from tenantguard.dev.natsserver import NatsServer
from tenantguard.errors import ConfigError
from tenantguard.feed import topology as topo
from tenantguard.identity.keys import write_private

from policy_plane.config import PlaneConfig
from policy_plane.console.sessions import SessionStore
from policy_plane.console.views import LOGIN_COOKIE
from policy_plane.secrets import SecretChecker
from tests.harness.console import OPERATOR_TOKEN, browser, csrf_of, sign_in
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import ADMIN_TOKEN, World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

EVIL = "<script>alert(1)</script>"
EXTERNAL = re.compile(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", re.I)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("console")
    with NatsServer(root / "nats") as server:
        yield World(root, server)


@pytest.fixture(scope="module")
def plane(world: World) -> Iterator[PlaneProcess]:
    operator_file = world.root / "operator.token"
    write_private(operator_file, OPERATOR_TOKEN.encode())
    running = world.start("--operator-token-file", str(operator_file))
    try:
        yield running
    finally:
        running.stop()


def test_pages_need_a_session(plane: PlaneProcess) -> None:
    client = browser(plane)
    for page in ("/console/", "/console/decisions", "/console/tenants", "/console/audit"):
        r = client.get(page)
        assert r.status_code == 303 and r.headers["location"] == "/console/login", page
        assert r.headers["x-frame-options"] == "DENY"
    assert client.post("/console/tenants/kill-switch", data={"tenant": "acme", "op": "trip"}).status_code == 401
    # the API's bearer token is no session: the console only knows its cookie
    assert client.get("/console/", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}).status_code == 303


def test_sign_in_sets_a_strict_cookie_and_never_echoes_the_token(plane: PlaneProcess) -> None:
    client, answer = sign_in(plane, ADMIN_TOKEN)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/"
    cookie = next(v for k, v in answer.headers.multi_items() if k == "set-cookie" and v.startswith("tg_console="))
    attributes = {a.strip().split("=")[0].lower() for a in cookie.split(";")}
    assert {"httponly", "path"} <= attributes and "samesite=strict" in cookie.lower()
    assert "secure" not in attributes  # plain http here; https gets Secure
    assert ADMIN_TOKEN not in cookie and ADMIN_TOKEN not in answer.headers["location"]
    for page in ("/console/", "/console/tenants", "/console/bundles", "/console/decisions", "/console/revocations",
                 "/console/audit"):
        r = client.get(page)
        assert r.status_code == 200, page
        assert ADMIN_TOKEN not in r.text
        assert r.headers["cache-control"] == "no-store"
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"
        assert not EXTERNAL.search(r.text), f"{page} references an outside URL"
        assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", r.text) is None, f"{page} has an inline script"
    assert "console.sign_in" in client.get("/console/audit").text


def test_cookie_is_secure_behind_a_local_tls_proxy(plane: PlaneProcess) -> None:
    """uvicorn takes ``X-Forwarded-Proto`` from a proxy on the same host: the page is https to the
    browser, so the session cookie is ``Secure``."""
    client = browser(plane)
    client.headers["X-Forwarded-Proto"] = "https"
    form = client.get("/console/login")
    login_csrf = re.search(r'name="login_csrf" value="([^"]+)"', form.text)
    assert login_csrf is not None and "secure" in form.headers["set-cookie"].lower()
    # httpx keeps no Secure cookie over http: hand it back as the browser (on https) would
    client.cookies.set(LOGIN_COOKIE, form.cookies[LOGIN_COOKIE], path="/console/login")
    answer = client.post("/console/login", data={"token": ADMIN_TOKEN, "login_csrf": login_csrf.group(1)})
    cookie = next(v for k, v in answer.headers.multi_items() if k == "set-cookie" and v.startswith("tg_console="))
    assert answer.status_code == 303 and "; secure" in cookie.lower()


def test_the_console_can_be_switched_off(world: World, plane: PlaneProcess) -> None:
    other = world.start("--no-console")
    try:
        assert httpx.get(f"{other.base_url}/console/", timeout=10).status_code == 404
        assert httpx.get(f"{other.base_url}/docs", timeout=10).status_code == 200
    finally:
        other.stop()


def test_wrong_token_and_forged_login_form_are_refused(plane: PlaneProcess) -> None:
    _, answer = sign_in(plane, "not-the-token")
    assert answer.status_code == 403 and "tg_console=" not in answer.headers.get("set-cookie", "")
    assert "not-the-token" not in answer.text
    stranger = browser(plane)  # no login cookie: a cross-site form cannot sign a victim in
    r = stranger.post("/console/login", data={"token": ADMIN_TOKEN, "login_csrf": "guess"})
    assert r.status_code == 403 and "tg_console=" not in r.headers.get("set-cookie", "")


def test_kill_switch_needs_csrf_same_origin_and_confirmation(plane: PlaneProcess) -> None:
    client, _ = sign_in(plane, ADMIN_TOKEN)
    csrf = csrf_of(client.get("/console/tenants?tenant=acme").text)
    before = plane.status()["revocations"]["seq"]
    assert client.post("/console/tenants/kill-switch", data={"tenant": "acme", "op": "trip", "confirm": "yes",
                                                             "csrf": "x" * len(csrf)}).status_code == 403
    assert client.post("/console/tenants/kill-switch", data={"tenant": "acme", "op": "trip", "confirm": "yes"}
                       ).status_code == 403
    assert client.post("/console/tenants/kill-switch", headers={"Origin": "https://evil.example"},
                       data={"tenant": "acme", "op": "trip", "confirm": "yes", "csrf": csrf}).status_code == 403
    other, _ = sign_in(plane, ADMIN_TOKEN)  # another session's token is not this one's
    other_csrf = csrf_of(other.get("/console/tenants").text)
    assert client.post("/console/tenants/kill-switch", data={"tenant": "acme", "op": "trip", "confirm": "yes",
                                                             "csrf": other_csrf}).status_code == 403
    asked = client.post("/console/tenants/kill-switch", data={"tenant": "acme", "op": "trip", "csrf": csrf})
    assert asked.status_code == 200 and 'name="confirm" value="yes"' in asked.text
    assert plane.status()["revocations"]["seq"] == before  # asking published nothing
    done = client.post("/console/tenants/kill-switch", data={"tenant": "acme", "op": "trip", "confirm": "yes",
                                                             "csrf": csrf})
    assert done.status_code == 200 and "tripped" in done.text
    plane.wait_until(lambda s: s["revocations"]["seq"] == before + 1)
    assert "TRIPPED" in client.get("/console/tenants?tenant=acme").text
    done = client.post("/console/tenants/kill-switch", data={"tenant": "acme", "op": "lift", "confirm": "yes",
                                                             "csrf": csrf})
    assert done.status_code == 200
    plane.wait_until(lambda s: s["revocations"]["seq"] == before + 2)
    audit = client.get("/console/audit").text
    assert audit.count("revocations.add") >= 2 and "console" in audit


def test_operator_reads_everything_and_changes_nothing(plane: PlaneProcess) -> None:
    client, answer = sign_in(plane, OPERATOR_TOKEN)
    assert answer.status_code == 303
    page = client.get("/console/tenants?tenant=acme").text
    assert "read-only" in page and 'id="kill-switch"' not in page and "kill-switch" not in page.split("<main>")[1]
    for path in ("/console/", "/console/bundles", "/console/decisions", "/console/revocations", "/console/audit"):
        assert client.get(path).status_code == 200
    before = plane.status()["revocations"]["seq"]
    r = client.post("/console/tenants/kill-switch", data={"tenant": "acme", "op": "trip", "confirm": "yes",
                                                          "csrf": csrf_of(page)})
    assert r.status_code == 403 and "read-only" in r.text
    time.sleep(0.3)
    assert plane.status()["revocations"]["seq"] == before


def test_logout_ends_the_session_server_side(plane: PlaneProcess) -> None:
    client, _ = sign_in(plane, ADMIN_TOKEN)
    session_cookie = client.cookies.get("tg_console")
    csrf = csrf_of(client.get("/console/").text)
    r = client.post("/console/logout", data={"csrf": csrf})
    assert r.status_code == 303 and r.headers["location"] == "/console/login"
    replay = browser(plane)  # the old cookie, kept by an attacker, is dead too
    replay.cookies.set("tg_console", session_cookie or "", path="/console")
    assert replay.get("/console/").status_code == 303


async def _publish_records(url: str, records: list[dict[str, object]]) -> None:
    nc = await nats.connect(url, connect_timeout=2, allow_reconnect=False)
    try:
        js = nc.jetstream(timeout=5)
        for tenant, _, data in encode_batches(records):
            await js.publish(topo.decisions_subject("billing", tenant), data, stream=topo.STREAM_DECISIONS)
    finally:
        await nc.close()


def test_attacker_named_tenant_and_subject_render_inert(plane: PlaneProcess, world: World) -> None:
    record = {"v": 2, "decision_id": "evil-1", "time": time.time(), "service": "billing", "tenant": EVIL,
              "subject": f"user:{EVIL}", "action": f"invoices:read{EVIL}", "resource": "invoice:1", "allow": False,
              "reasons": [EVIL], "bundle_revision": None, "relations_seq": 0, "input": None}
    asyncio.run(asyncio.wait_for(_publish_records(world.nats.url, [record]), 30))
    plane.wait_until(lambda s: s["decisions"]["received"] >= 1)
    client, _ = sign_in(plane, ADMIN_TOKEN)
    pages = [client.get("/console/decisions"), client.get("/console/decisions", params={"subject": f"user:{EVIL}"}),
             client.get("/console/decisions/evil-1", params={"tenant": EVIL, "service": "billing"}),
             client.get("/console/tenants", params={"tenant": EVIL, "subject": EVIL})]
    for r in pages:
        assert EVIL not in r.text and "<script>alert" not in r.text, r.url
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[0].text and "evil-1" in pages[0].text


def test_docs_pages_load_no_outside_asset(plane: PlaneProcess) -> None:
    for path in ("/docs", "/redoc"):
        r = httpx.get(f"{plane.base_url}{path}", timeout=10)
        assert r.status_code == 200
        assert not EXTERNAL.search(r.text) and "cdn." not in r.text and "fonts.googleapis" not in r.text, path
        for asset in re.findall(r"""(?:src|href)=["']?(/_docs-assets/[^"' >]+)""", r.text):
            assert httpx.get(f"{plane.base_url}{asset}", timeout=10).status_code == 200, asset


def test_session_store_expires_and_is_bounded() -> None:
    store = SessionStore(idle=60, absolute=3600, max_sessions=3)
    ids = [store.create("admin", now=1000.0 + i)[0] for i in range(4)]
    assert len(store) == 3 and store.get(ids[0], now=1010) is None  # the oldest made room
    assert store.get(ids[3], now=1050) is not None
    assert store.get(ids[3], now=1200) is None  # idle past 60 s
    sid, session = store.create("operator", now=5000)
    for t in range(5000, 8600, 50):
        assert store.get(sid, now=t) is not None  # kept alive...
    assert store.get(sid, now=8700) is None  # ...but not past the absolute limit
    assert not session.can_change and not session.csrf_ok(None) and session.csrf_ok(session.csrf)


def test_a_pages_own_reloads_do_not_keep_an_unattended_session_alive() -> None:
    """The Fleet page reloads itself every 5 s; counted as activity, an unattended console never
    reached its idle limit. console.js marks those reloads ``?auto=1`` (the browser test sees it)."""
    from starlette.requests import Request

    from policy_plane.console.views import COOKIE, current_session
    from policy_plane.secrets import HashedSecret, SecretChecker

    store = SessionStore(idle=60, absolute=3600)
    sid, session = store.create("admin", now=1000.0)
    for t in (1030.0, 1055.0):
        assert store.get(sid, now=t, activity=False) is session
    assert store.get(sid, now=1061.0, activity=False) is None  # idle since 1000, reloads or not

    admin = SecretChecker(HashedSecret.of("admin-token-" + "c3" * 16))  # a token file that never changes
    plane = SimpleNamespace(config=SimpleNamespace(admin=admin, operator=None))
    app = SimpleNamespace(state=SimpleNamespace(console_sessions=store, plane=plane))

    def ask(method: str, query: str) -> float:
        sid, session = store.create("admin")
        session.last_seen -= 30
        before = session.last_seen
        scope = {"type": "http", "method": method, "path": "/console/", "query_string": query.encode(),
                 "headers": [(b"cookie", f"{COOKIE}={sid}".encode())], "app": app}
        assert current_session(Request(scope)) is session
        return session.last_seen - before

    assert ask("GET", "auto=1") == 0  # the page's own reload
    assert ask("GET", "") >= 30 and ask("GET", "auto=0") >= 30  # the operator's
    assert ask("POST", "auto=1") >= 30  # a form sent is always the operator's


def test_relations_behind_is_shown_only_where_one_sequence_compares() -> None:
    """With several cells a sidecar reports the sum over its own cells: no plane number compares."""
    from types import SimpleNamespace

    from policy_plane.console.views import _behind

    def plane(cells: int, seq: int) -> SimpleNamespace:
        return SimpleNamespace(state=SimpleNamespace(cells=cells, index=SimpleNamespace(applied_seq=seq)))

    assert _behind(plane(1, 10), 7) == 3 and _behind(plane(1, 10), 12) == 0  # type: ignore[arg-type]
    assert _behind(plane(4, 10), 7) is None  # type: ignore[arg-type]


def test_behind_a_tls_proxy_on_another_host_the_console_origin_is_configured(world: World) -> None:
    """A proxy elsewhere terminates TLS and forwards plain HTTP (uvicorn trusts X-Forwarded-Proto only
    from loopback): with ``--console-origin`` the forms' Origin is checked against the public origin and
    cookies are Secure; the request's own http origin is then a foreign one."""
    public = "https://plane.example.test"
    other = world.start("--console-origin", public + "/")
    try:
        client = browser(other)
        form = client.get("/console/login")
        login_csrf = re.search(r'name="login_csrf" value="([^"]+)"', form.text)
        assert login_csrf is not None and "secure" in form.headers["set-cookie"].lower()
        client.cookies.set(LOGIN_COOKIE, form.cookies[LOGIN_COOKIE], path="/console/login")
        answer = client.post("/console/login", headers={"Origin": public},
                             data={"token": ADMIN_TOKEN, "login_csrf": login_csrf.group(1)})
        cookie = next(v for k, v in answer.headers.multi_items() if k == "set-cookie" and v.startswith("tg_console="))
        assert answer.status_code == 303 and "; secure" in cookie.lower()
        client.cookies.set("tg_console", cookie.split(";")[0].split("=", 1)[1], path="/console")
        csrf = csrf_of(client.get("/console/tenants?tenant=acme").text)
        ask = {"tenant": "acme", "op": "trip", "csrf": csrf}  # the confirmation step: publishes nothing
        assert client.post("/console/tenants/kill-switch", headers={"Origin": public}, data=ask).status_code == 200
        for foreign in (other.base_url, "https://evil.example", "http://plane.example.test"):
            r = client.post("/console/tenants/kill-switch", headers={"Origin": foreign}, data=ask)
            assert r.status_code == 403, foreign
    finally:
        other.stop()


@pytest.mark.parametrize("origin", ["plane.example.test", "ftp://plane.example.test",
                                    "https://plane.example.test/console", "https://u:p@plane.example.test",
                                    "https://plane.example.test?x=1", "https://"])
def test_a_console_origin_that_is_no_origin_is_refused(world: World, origin: str) -> None:
    with pytest.raises(ConfigError, match="--console-origin must be scheme://host"):
        PlaneConfig(nats_url=world.nats.url, event_key=world.event_key, bundle_key=world.bundle_key,
                    admin=SecretChecker.from_file(world.token_file), console_origin=origin)
    accepted = PlaneConfig(nats_url=world.nats.url, event_key=world.event_key, bundle_key=world.bundle_key,
                           admin=SecretChecker.from_file(world.token_file), console_origin="HTTPS://Plane.Example:8443/")
    assert accepted.console_origin == "https://plane.example:8443"


def test_a_tenant_no_tuple_can_have_is_named_not_shown_as_an_empty_list(plane: PlaneProcess) -> None:
    """The console's tenant view shares the API's listing: ``ACME`` is an error, not "no relationships"."""
    client, _ = sign_in(plane, ADMIN_TOKEN)
    page = client.get("/console/tenants", params={"tenant": "ACME"})
    assert page.status_code == 200, page.text
    assert "tenant &#39;ACME&#39; must be a lowercase name matching" in page.text, page.text


def test_the_tenants_page_lists_tenants_before_one_is_typed(plane: PlaneProcess) -> None:
    """Opening Tenants shows who holds relationships, with counts and links (it was an empty
    form until a name was typed)."""
    with plane.client() as http:
        for tenant, n in (("listed_a", 2), ("listed_b", 1)):
            changes = [{"op": "write", "rel": {"tenant": tenant, "object": f"project:p{i}", "relation": "member",
                                               "subject": "user:alice"}} for i in range(n)]
            answer = http.post("/v1/relations", json={"changes": changes})
            assert answer.status_code == 200, answer.text
    client, _ = sign_in(plane, ADMIN_TOKEN)
    page = client.get("/console/tenants")
    assert page.status_code == 200, page.text
    rows = re.findall(r'<a href="/console/tenants\?tenant=(listed_[ab])"><code>listed_[ab]</code></a></td><td>(\d+)<',
                      page.text)
    assert rows == [("listed_a", "2"), ("listed_b", "1")], page.text


def test_an_allow_explained_shows_no_empty_rules_heading() -> None:
    """An allow has no deny reasons: the Rules heading appears only over rules to show."""
    from policy_plane.console.views import templates

    def rendered(reasons: dict[str, list[dict[str, object]]]) -> str:
        re_eval = {"allow": not reasons, "reasons": list(reasons), "relations_consulted": {},
                   "rules": {"available": True, "reasons": reasons}}
        x = {"builtin_checks": {"tenant": {}, "kill_switch": {}, "revocation": {}, "tenant_match": {}},
             "reevaluation": re_eval}
        record = {"decision_id": "d1", "allow": not reasons, "time": 0, "reasons": list(reasons)}
        return templates.get_template("decision.html").render(
            record=record, x=x, took=0.1, prefix="/console", session=None, request=None)

    assert "<h3>Rules</h3>" not in rendered({})
    denied = rendered({"frozen": [{"file": "extra.rego", "line": 3, "text": 'deny contains "frozen" if true'}]})
    assert "<h3>Rules</h3>" in denied and "extra.rego:3" in denied
