"""The console's pages and its few state changes, on the plane's own state and services.

Every page needs a session (:mod:`.sessions`); every POST also needs the session's CSRF
token in the form and, when the browser sends one, an ``Origin`` of this host. Operators
(the read-only token) see every page and no button; a change they post anyway is 403.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hmac
import json
import math
import re
import secrets
import time
from typing import Annotated, Any, Final
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from tenantguard.errors import InvalidInput, TenantGuardError, Unavailable
from tenantguard.server.asgi import RETRY_AFTER

from ..api.auth import plane_of
from ..api.decisions import checked_service
from ..api.relations import decode_cursor, encode_cursor, list_page
from ..decisions import Cursor, DecisionQuery
from ..errors import Forbidden
from ..revocations import revocation_payload
from ..runtime import Plane
from .sessions import Session, SessionStore

PREFIX: Final = "/console"
COOKIE: Final = "tg_console"
LOGIN_COOKIE: Final = "tg_console_login"  # double-submit token of the sign-in form (login CSRF)
SIDECAR_STALE: Final = 30.0  # the sidecar's own staleness (since it last heard the plane) that is shown as stale
MAX_FORM_FIELDS: Final = 16
PAGE: Final = 50
_DECISION_ID: Final = re.compile(r"[A-Za-z0-9_.:-]{1,128}")

router = APIRouter(prefix=PREFIX, include_in_schema=False)
templates = Environment(loader=PackageLoader("policy_plane.console", "templates"),
                        autoescape=select_autoescape(default=True, default_for_string=True), auto_reload=False)


def _when(epoch: Any) -> str:
    if not isinstance(epoch, int | float) or isinstance(epoch, bool) or epoch <= 0:
        return "-"
    return dt.datetime.fromtimestamp(float(epoch), dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _pretty(value: Any) -> str:
    """JSON for a <pre>: autoescaping makes it inert, never |safe."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)


templates.filters["when"] = _when
templates.filters["pretty"] = _pretty


class SignInRequired(Exception):
    """No live session: GET pages redirect to the sign-in form, other methods get 401."""


def store_of(request: Request) -> SessionStore:
    store: SessionStore = request.app.state.console_sessions
    return store


def session_cookie(request: Request) -> str | None:
    """The session id, when the request carries exactly one ``tg_console`` cookie. Two (one
    tossed in from a sibling domain or a narrower path, say) are no session at all: which one
    a parser keeps differs, so the operator could act in a session that is not theirs."""
    found = [value for name, _, value in (part.strip().partition("=") for header in
             request.headers.getlist("cookie") for part in header.split(";")) if name == COOKIE]
    return found[0] if len(found) == 1 else None


AUTO_REFRESH: Final = "auto"
"""The query parameter console.js adds to the reloads it makes on its own (``?auto=1``)."""


def current_session(request: Request) -> Session:
    """The request's live session. A page's own reload (``?auto=1``, a GET) does not restart its
    idle clock: the Fleet page refreshing every 5 s kept an unattended console signed in forever."""
    automatic = request.method == "GET" and request.query_params.get(AUTO_REFRESH) == "1"
    store = store_of(request)
    session = store.get(session_cookie(request), activity=not automatic)
    if session is None:
        raise SignInRequired
    if _rotated_since(request, session):
        store.end(session)
        raise SignInRequired
    return session


def _rotated_since(request: Request, session: Session) -> bool:
    """The token file of the session's role changed since it signed in: a rotated-out token's
    sessions end with it (the plane re-reads the file, policy_plane/secrets.py)."""
    config = plane_of(request).config
    checker = config.admin if session.role == "admin" else config.operator
    if checker is None:
        return True  # the operator token is no longer configured at all
    return checker.changed_since(session.generation)


Signed = Annotated[Session, Depends(current_session)]


def render(request: Request, name: str, session: Session | None, status_code: int = 200,
           **context: Any) -> HTMLResponse:
    plane = plane_of(request)
    html = templates.get_template(name).render(session=session, replica=plane.config.replica, prefix=PREFIX,
                                               path=request.url.path, **context)
    return HTMLResponse(html, status_code=status_code)


def failure(request: Request, session: Session | None, exc: TenantGuardError) -> HTMLResponse:
    return render(request, "error.html", session, status_code=exc.http_status, code=exc.code, message=exc.message)


async def form_of(request: Request) -> dict[str, str]:
    """The url-encoded form (bounded by the plane's body limit); one value per field."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise InvalidInput("send the form as application/x-www-form-urlencoded")
    try:
        fields = parse_qs((await request.body()).decode(), max_num_fields=MAX_FORM_FIELDS, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        raise InvalidInput("the form is not valid") from None
    repeated = sorted(k for k, v in fields.items() if len(v) > 1)
    if repeated:  # one reading: which copy counts differs between a proxy, a log and this form
        raise InvalidInput(f"form field {repeated[0]!r:.40} is sent more than once", field=repeated[0][:40])
    return {k: v[0] for k, v in fields.items()}


def _console_origin(request: Request) -> str:
    """The origin browsers see: ``--console-origin`` behind a TLS-terminating proxy, else this request's."""
    configured: str | None = plane_of(request).config.console_origin
    return configured or f"{request.url.scheme}://{request.headers.get('host', '')}"


def same_origin(request: Request) -> None:
    """A browser's ``Origin`` on a POST must be the console's (SameSite cookies are the first line). The
    pages send ``Referrer-Policy: same-origin``: with ``no-referrer`` a browser sends ``Origin: null``."""
    origin = request.headers.get("origin")
    if origin is not None and origin != _console_origin(request):
        raise Forbidden("cross-origin form refused")


async def change_form(request: Request, session: Session) -> dict[str, str]:
    """The form of a state change: same origin, the session's CSRF token, and the admin role."""
    same_origin(request)
    form = await form_of(request)
    if not session.csrf_ok(form.get("csrf")):
        raise Forbidden("the form's CSRF token is missing or not this session's; reload the page")
    if not session.can_change:
        raise Forbidden("the operator token is read-only: sign in with the admin token to change anything")
    return form


def _secure(request: Request) -> bool:
    return _console_origin(request).startswith("https://")


# ---------------------------------------------------------------------- sign-in


@router.get("/login")
async def login_form(request: Request) -> HTMLResponse:
    return _login_page(request, None, 200)


def _login_page(request: Request, error: str | None, status_code: int) -> HTMLResponse:
    token = secrets.token_urlsafe(24)
    response = render(request, "login.html", None, status_code=status_code, login_csrf=token, error=error)
    response.set_cookie(LOGIN_COOKIE, token, max_age=600, path=f"{PREFIX}/login", httponly=True, samesite="strict",
                        secure=_secure(request))
    return response


@router.post("/login")
async def login(request: Request) -> Response:
    """Exchange the admin or operator token for a session cookie; the token goes no further."""
    plane = plane_of(request)
    try:
        same_origin(request)
        form = await form_of(request)
    except TenantGuardError as exc:
        return failure(request, None, exc)
    presented, expected = form.get("login_csrf", ""), request.cookies.get(LOGIN_COOKIE, "")
    if not expected or not hmac.compare_digest(presented.encode(), expected.encode()):
        return _login_page(request, "The sign-in form expired; try again.", 403)
    token = form.get("token", "").strip()
    role, checker = None, None
    try:
        if token and await plane.config.admin.check(token):
            role, checker = "admin", plane.config.admin
        elif token and plane.config.operator is not None and await plane.config.operator.check(token):
            role, checker = "operator", plane.config.operator
    except Unavailable:  # the checks' queue is full (a flood of wrong tokens): retryable
        busy = _login_page(request, "The plane is busy checking credentials; try again in a moment.", 503)
        busy.headers.update(RETRY_AFTER)
        return busy
    if role is None:
        plane.metrics.auth_failures.labels("console").inc()
        return _login_page(request, "That is neither the admin nor the operator token.", 403)
    store = store_of(request)
    previous = store.get(session_cookie(request))
    if previous is not None:  # a new sign-in never keeps a session the browser already carried
        store.end(previous)
    session_id, _ = store.create(role, generation=checker.generation if checker else 0)  # type: ignore[arg-type]
    plane.audit.record(role, "console.sign_in")
    response = RedirectResponse(f"{PREFIX}/", status_code=303)
    response.set_cookie(COOKIE, session_id, path=PREFIX, httponly=True, samesite="strict", secure=_secure(request))
    response.delete_cookie(LOGIN_COOKIE, path=f"{PREFIX}/login")
    return response


@router.post("/logout")
async def logout(request: Request, session: Signed) -> Response:
    try:
        same_origin(request)
        form = await form_of(request)
        if not session.csrf_ok(form.get("csrf")):
            raise Forbidden("the form's CSRF token is missing or not this session's")
    except TenantGuardError as exc:
        return failure(request, session, exc)
    store_of(request).end(session)
    plane_of(request).audit.record(session.role, "console.sign_out")
    response = RedirectResponse(f"{PREFIX}/login", status_code=303)
    response.delete_cookie(COOKIE, path=PREFIX)
    return response


# ---------------------------------------------------------------------- fleet


def fleet_rows(plane: Plane) -> list[dict[str, Any]]:
    rows = []
    for s in plane.fleet.sidecars():
        staleness = s.get("staleness_seconds")
        stale = s["silent"] or (staleness is not None and staleness > SIDECAR_STALE)
        rows.append({**s, "stale": stale, "relations_behind": _behind(plane, int(s["relations_seq"]))})
    return rows


def _behind(plane: Plane, reported: int) -> int | None:
    """How many relations batches a sidecar lacks; None with several cells, where a sidecar
    reports the sum over the cells it holds, which no single plane sequence compares with."""
    if plane.state.cells > 1:
        return None
    return max(0, plane.state.index.applied_seq - reported)


@router.get("/")
async def fleet(request: Request, session: Signed) -> HTMLResponse:
    plane = plane_of(request)
    return render(request, "fleet.html", session, sidecars=fleet_rows(plane), plane=plane.status(),
                  stale_after=plane.fleet.silent_after, forget_after=plane.fleet.forget_after, refresh=True)


# ---------------------------------------------------------------------- tenants and the kill switch


@router.get("/tenants")
async def tenants(request: Request, session: Signed,
                  tenant: Annotated[str, Query(max_length=64)] = "",
                  object: Annotated[str, Query(max_length=512)] = "",
                  relation: Annotated[str, Query(max_length=64)] = "",
                  subject: Annotated[str, Query(max_length=600)] = "",
                  cursor: Annotated[str, Query(max_length=4096)] = "") -> HTMLResponse:
    """Relationships of one tenant (the plane's index, as ``GET /v1/relations``), and its kill switch."""
    plane = plane_of(request)
    killed = dict(sorted(plane.state.revocation_list.tenants.items()))
    context: dict[str, Any] = {"tenant": tenant, "object": object, "relation": relation, "subject": subject,
                               "killed": killed, "rows": None, "next_query": None, "error": None}
    if tenant:
        try:
            after = decode_cursor(cursor) if cursor else None
            context["rows"], last, context["total"] = await list_page(
                request, tenant, object or None, relation or None, subject or None, after, PAGE)
            if last is not None:
                context["next_query"] = urlencode({"tenant": tenant, "object": object, "relation": relation,
                                                   "subject": subject, "cursor": encode_cursor(last)})
        except TenantGuardError as exc:
            context["error"] = exc.message
        context["tripped"] = tenant in killed
    else:
        context["known"], context["more"] = await asyncio.to_thread(tenant_counts, plane.state.index, TENANTS_SHOWN)
    return render(request, "tenants.html", session, **context)


TENANTS_SHOWN = 200  # tenants listed before one is chosen (by name; the form finds any other)


def tenant_counts(index: Any, limit: int) -> tuple[list[tuple[str, int]], int]:
    """The first ``limit`` tenants holding tuples, by name, with their tuple counts, and how
    many more there are: what an operator opening the page wants to pick from."""
    names = index.view().tenants()
    return [(name, index.count(name)) for name in names[:limit]], max(0, len(names) - limit)


@router.post("/tenants/kill-switch")
async def kill_switch(request: Request, session: Signed) -> HTMLResponse:
    """Trip or lift a tenant's kill switch: a first POST asks for confirmation, the second publishes
    the same signed revocation as ``POST /v1/revocations`` (audited the same way)."""
    plane = plane_of(request)
    try:
        form = await change_form(request, session)
        op, tenant = form.get("op"), form.get("tenant", "")
        if op not in ("trip", "lift"):
            raise InvalidInput("op must be trip or lift", field="op")
        stated = {"kind": "tenant" if op == "trip" else "lift_tenant", "tenant": tenant}
        payload = revocation_payload(stated)  # validates the tenant before anything is asked
        if form.get("confirm") != "yes":
            return render(request, "confirm.html", session, op=op, tenant=tenant)
        written = await plane.revoke(payload, stated=stated)
    except TenantGuardError as exc:
        return failure(request, session, exc)
    plane.audit.record(session.role, "revocations.add", seq=written.seq, via="console", **(written.payload or {}))
    plane.metrics.admin_changes.labels("revocations.add").inc()
    return render(request, "done.html", session, op=op, tenant=tenant, seq=written.seq)


# ---------------------------------------------------------------------- bundles, revocations, audit


@router.get("/bundles")
async def bundles(request: Request, session: Signed) -> HTMLResponse:
    plane = plane_of(request)
    scopes = [a.to_wire() for _, a in sorted(plane.state.announces.items())]
    running: dict[str, list[dict[str, Any]]] = {}
    for s in plane.fleet.sidecars():
        if s["silent"]:  # what a silent sidecar ran when last heard of is not what it runs now
            continue
        running.setdefault(str(s["bundle_revision"]), []).append(s)
    rollout = plane.state.rollout.to_wire() if plane.state.rollout else None
    shadows = {k: v for k, v in sorted(plane.state.shadows.items()) if not v.get("stop")}
    return render(request, "bundles.html", session, scopes=scopes, running=running, rollout=rollout,
                  shadows=shadows, summary=plane.fleet.summary())


@router.get("/revocations")
async def revocations(request: Request, session: Signed) -> HTMLResponse:
    plane = plane_of(request)
    records = list(reversed(plane.state.revocations))[:500]
    return render(request, "revocations.html", session, records=records, seq=plane.state.revocations_seq)


@router.get("/audit")
async def audit(request: Request, session: Signed) -> HTMLResponse:
    return render(request, "audit.html", session, entries=plane_of(request).audit.recent(500))


# ---------------------------------------------------------------------- decision log and explain


def _epoch(text: str, field: str) -> float | None:
    """A ``datetime-local`` value (read as UTC) or epoch seconds; None when empty."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(value):
            raise InvalidInput(f"{field} must be a finite number of epoch seconds", field=field)
        return value
    try:
        return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        raise InvalidInput(f"{field} must be a date and time (UTC) or epoch seconds", field=field) from None


@router.get("/decisions")
async def decisions(request: Request, session: Signed,
                    tenant: Annotated[str, Query(max_length=128)] = "",
                    service: Annotated[str, Query(max_length=63)] = "",
                    subject: Annotated[str, Query(max_length=512)] = "",
                    action: Annotated[str, Query(max_length=512)] = "",
                    allow: Annotated[str, Query(max_length=5)] = "",
                    since: Annotated[str, Query(max_length=40)] = "",
                    until: Annotated[str, Query(max_length=40)] = "",
                    cursor: Annotated[str, Query(max_length=512)] = "") -> HTMLResponse:
    """The decision log (``GET /v1/decisions``), newest first, one page at a time."""
    plane = plane_of(request)
    filters = {"tenant": tenant, "service": service, "subject": subject, "action": action, "allow": allow,
               "since": since, "until": until}
    context: dict[str, Any] = {"filters": filters, "records": [], "next_query": None, "error": None,
                               "complete": True, "scanned": 0}
    try:
        query = DecisionQuery(tenant=tenant or None, service=checked_service(service or None), subject=subject or None,
                              action=action or None, allow={"allow": True, "deny": False}.get(allow),
                              since=_epoch(since, "since"), until=_epoch(until, "until"), limit=PAGE)
        page = await plane.decisions.query(query, Cursor.decode(cursor, query) if cursor else None)
        context.update(records=page.records, complete=page.complete, scanned=page.scanned)
        if page.next_cursor:
            context["next_query"] = urlencode({**filters, "cursor": page.next_cursor})
    except TenantGuardError as exc:
        context["error"] = exc.message
    return render(request, "decisions.html", session, **context)


@router.get("/decisions/{decision_id}")
async def decision(request: Request, session: Signed, decision_id: str,
                   tenant: Annotated[str, Query(max_length=128)] = "",
                   service: Annotated[str, Query(max_length=63)] = "") -> HTMLResponse:
    """One record and its explanation (``GET /v1/decisions/{id}/explain``)."""
    plane = plane_of(request)
    started = time.monotonic()
    try:
        if _DECISION_ID.fullmatch(decision_id) is None:
            raise InvalidInput("not a decision id", field="decision_id")
        explained = await plane.explainer.explain_id(decision_id, tenant=tenant or None,
                                                     service=checked_service(service or None))
    except TenantGuardError as exc:
        return failure(request, session, exc)
    return render(request, "decision.html", session, x=explained, record=explained["record"],
                  took=round(time.monotonic() - started, 3))

