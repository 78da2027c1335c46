"""An outsider's attacks on the console over raw HTTP, against a real plane on a real nats-server:
forms read two ways, sessions carried in from elsewhere, CSRF shapes, headers on every answer."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.identity.keys import write_private

from tests.harness.console import OPERATOR_TOKEN, browser, csrf_of, sign_in
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import ADMIN_TOKEN, World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

KILL = "/console/tenants/kill-switch"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaneProcess]:
    root = tmp_path_factory.mktemp("console-attacks")
    with NatsServer(root / "nats") as server:
        world = World(root, server)
        operator_file = root / "operator.token"
        write_private(operator_file, OPERATOR_TOKEN.encode())
        running = world.start("--operator-token-file", str(operator_file))
        try:
            yield running
        finally:
            running.stop()


def admin(plane: PlaneProcess) -> tuple[httpx.Client, str]:
    client, answer = sign_in(plane, ADMIN_TOKEN)
    assert answer.status_code == 303
    return client, csrf_of(client.get("/console/tenants?tenant=acme").text)


def test_a_form_field_sent_twice_is_refused(plane: PlaneProcess) -> None:
    """``tenant=acme&tenant=globex``: the console read the first, a proxy or log may read the last.
    A repeated field is 400, before any confirmation or change, whichever copy is genuine."""
    client, csrf = admin(plane)
    before = plane.status()["revocations"]["seq"]
    bodies = [f"tenant=acme&tenant=globex&op=trip&csrf={csrf}",
              f"tenant=acme&op=trip&op=lift&confirm=yes&csrf={csrf}",
              f"tenant=acme&op=trip&confirm=yes&confirm=no&csrf={csrf}",
              f"tenant=acme&op=trip&confirm=yes&csrf={csrf}&csrf=forged",
              f"tenant=acme&op=trip&confirm=yes&csrf=forged&csrf={csrf}"]
    for body in bodies:
        answer = client.post(KILL, content=body, headers=FORM)
        assert answer.status_code == 400, body
        assert "Confirm" not in answer.text and "sent more than once" in answer.text
    assert client.post("/console/logout", content=f"csrf={csrf}&csrf={csrf}", headers=FORM).status_code == 400
    assert client.get("/console/").status_code == 200  # the refused logout ended nothing
    login = browser(plane)
    form = login.get("/console/login").text
    login_csrf = re.search(r'name="login_csrf" value="([^"]+)"', form)
    assert login_csrf is not None
    twice = login.post("/console/login", content=f"token=wrong&token={ADMIN_TOKEN}&login_csrf={login_csrf.group(1)}",
                       headers=FORM)
    assert twice.status_code == 400 and "tg_console=" not in twice.headers.get("set-cookie", "")
    assert plane.status()["revocations"]["seq"] == before


def test_two_session_cookies_are_no_session(plane: PlaneProcess) -> None:
    """A sibling domain (or a narrower path) can toss a second ``tg_console`` cookie into the
    browser: the plane then read whichever its parser kept, so a victim could act in an
    insider's session. Two cookies of that name are no session: sign in again."""
    victim, csrf = admin(plane)
    insider, answer = sign_in(plane, OPERATOR_TOKEN)
    assert answer.status_code == 303
    mine, theirs = victim.cookies.get("tg_console"), insider.cookies.get("tg_console")
    assert mine and theirs
    for cookie in (f"tg_console={theirs}; tg_console={mine}", f"tg_console={mine}; tg_console={theirs}",
                   f"tg_console={mine}; tg_console={mine}"):
        raw = httpx.Client(base_url=plane.base_url, timeout=20)
        plane.clients.append(raw)
        page = raw.get("/console/tenants?tenant=acme", headers={"Cookie": cookie})
        assert page.status_code == 303 and page.headers["location"] == "/console/login"
        post = raw.post(KILL, headers={"Cookie": cookie, **FORM}, content=f"tenant=acme&op=trip&csrf={csrf}")
        assert post.status_code == 401
    assert victim.get("/console/").status_code == 200  # one cookie: still signed in


def test_signing_in_again_ends_the_session_the_browser_carried(plane: PlaneProcess) -> None:
    client, _ = admin(plane)
    old = client.cookies.get("tg_console")
    form = client.get("/console/login").text
    login_csrf = re.search(r'name="login_csrf" value="([^"]+)"', form)
    assert login_csrf is not None
    again = client.post("/console/login", data={"token": OPERATOR_TOKEN, "login_csrf": login_csrf.group(1)})
    assert again.status_code == 303
    new = client.cookies.get("tg_console")
    assert new and new != old
    replay = browser(plane)
    replay.cookies.set("tg_console", old or "", path="/console")
    assert replay.get("/console/").status_code == 303  # the admin session is gone, not kept beside
    page = client.get("/console/tenants?tenant=acme").text
    assert "read-only" in page  # the browser now holds the operator session only


def test_cross_site_shapes_of_a_state_change_are_refused(plane: PlaneProcess) -> None:
    """What a page on another site can send: a form without the CSRF token, a text/plain body
    (no preflight), ``Origin: null`` (sandboxed frames, redirects), another origin, a method
    override, a GET. None trips the kill switch."""
    client, csrf = admin(plane)
    before = plane.status()["revocations"]["seq"]
    change = {"tenant": "acme", "op": "trip", "confirm": "yes"}
    answers = {
        "no csrf": client.post(KILL, data=change),
        "text/plain": client.post(KILL, content=f"tenant=acme&op=trip&confirm=yes&csrf={csrf}",
                                  headers={"Content-Type": "text/plain"}),
        "multipart": client.post(KILL, files={"x": ("x", b"y")}, data={**change, "csrf": csrf}),
        "origin null": client.post(KILL, data={**change, "csrf": csrf}, headers={"Origin": "null"}),
        "other origin": client.post(KILL, data={**change, "csrf": csrf}, headers={"Origin": "http://evil.example"}),
        "other port": client.post(KILL, data={**change, "csrf": csrf},
                                  headers={"Origin": plane.base_url.rsplit(":", 1)[0] + ":1"}),
        "https twin": client.post(KILL, data={**change, "csrf": csrf},
                                  headers={"Origin": plane.base_url.replace("http://", "https://")}),
    }
    for name, answer in answers.items():
        assert answer.status_code in (400, 403), name
    assert client.get(KILL, params={**change, "csrf": csrf}).status_code == 405
    override = client.post("/console/logout", headers={"X-HTTP-Method-Override": "GET"})
    assert override.status_code in (400, 403)
    assert client.get("/console/").status_code == 200
    assert plane.status()["revocations"]["seq"] == before


def test_every_console_answer_carries_the_protective_headers(plane: PlaneProcess) -> None:
    client, _ = admin(plane)
    stranger = browser(plane)
    answers = [client.get("/console/"), client.get("/console/decisions?since=nan"), client.get("/console/nope"),
               client.get("/console/decisions/not%20an%20id"), stranger.get("/console/"),
               stranger.post(KILL, data={"tenant": "acme"}), client.post(KILL, content="x", headers=FORM),
               stranger.get("/console/login")]
    for answer in answers:
        assert answer.headers["x-frame-options"] == "DENY", answer.url
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["cache-control"] == "no-store", answer.url


def test_a_time_filter_that_is_no_time_is_named(plane: PlaneProcess) -> None:
    """``nan`` and ``inf`` were read as times (a NaN ``since`` filters nothing out): each is named."""
    client, _ = admin(plane)
    for value in ("nan", "inf", "-inf", "1e400"):
        page = client.get("/console/decisions", params={"since": value})
        assert page.status_code == 200 and "since must be a finite number" in page.text, value
