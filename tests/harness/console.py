"""The plane's operations console as a browser uses it: cookies, no Authorization header, the
sign-in form and the CSRF field of each page."""

from __future__ import annotations

import re

import httpx

from .plane_process import PlaneProcess

OPERATOR_TOKEN = "operator-token-" + "c3" * 16


def browser(plane: PlaneProcess) -> httpx.Client:
    """A cookie-keeping client that never sends an Authorization header (like a browser)."""
    client = httpx.Client(base_url=plane.base_url, timeout=20, follow_redirects=False)
    plane.clients.append(client)
    return client


def sign_in(plane: PlaneProcess, token: str) -> tuple[httpx.Client, httpx.Response]:
    client = browser(plane)
    form = client.get("/console/login")
    assert form.status_code == 200
    login_csrf = re.search(r'name="login_csrf" value="([^"]+)"', form.text)
    assert login_csrf is not None
    answer = client.post("/console/login", data={"token": token, "login_csrf": login_csrf.group(1)})
    return client, answer


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, "no CSRF field on the page"
    return found.group(1)
