"""``tenantguard relation``: write, delete, list and check tuples through the policy plane.

Tuples are written ``tenant/type:id#relation@type:id[#relation]`` (spaces around ``/``
and ``@`` optional); the subject may be a wildcard ``user:*``. A written tuple may carry a
condition and an expiry, either as zed writes them after the subject
(``...@user:anne[ip_ok:{"cidr":"10.0.0.0/8"}][expiration:2026-12-31T00:00:00Z]``) or with
``--condition NAME --context JSON --expires-at TIME`` (as ``fga tuple write`` takes
``--condition-name``/``--condition-context``), which then apply to every tuple given.
Output is JSON on stdout. Exit codes: 0 success (for ``check``:
allowed), 1 denied by ``check`` or a typed error (``error <code>: ...`` on stderr),
2 bad usage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from tenantguard.cli.common import (
    DEV_ENV_HINT,
    PlaneOpt,
    TokenFileOpt,
    console_err,
    print_json,
)
from tenantguard.cli.options import NO_PLANE_TLS, PlaneTlsArgs, PlaneTlsOptions, option_groups
from tenantguard.client.plane import DEFAULT_RETRY_FOR, PlaneClient
from tenantguard.errors import ConfigError, JsonInvalid, PayloadTooLarge, TenantGuardError, Unavailable
from tenantguard.relations import RelationChange, Relationship
from tenantguard.relations.model import MAX_CONTEXT_BYTES, check_meta, parse_time
from tenantguard.relations.reads import EMPTY_CONTEXT, TupleMeta
from tenantguard.util.jsonlimits import loads
from tenantguard.util.urls import check_http_url, shown_url

app = typer.Typer(help="Write, delete, list and check relationship tuples through the policy plane.",
                  no_args_is_help=True)

RetryForOpt = Annotated[float, typer.Option(
    "--retry-for", envvar="TG_PLANE_RETRY_FOR", min=0,
    help="Seconds a write is retried (with one Idempotency-Key) while the plane is unreachable or refuses it "
         "retryably (503, 409 sequence_conflict); 0: one attempt")]
TuplesArg = Annotated[list[str], typer.Argument(help="Tuples like acme/project:p1#member@user:alice",
                                                metavar="TUPLE")]


def read_token(path: Path) -> str:
    """The bearer token in ``path`` (whitespace stripped); shared with ``bundle push``."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read token file {path}: {exc}") from None
    if not token:
        raise ConfigError(f"token file {path} is empty")
    return token


def plane_client(plane: str, token_file: Path, retry_for: float = DEFAULT_RETRY_FOR, *,
            tls: PlaneTlsArgs) -> PlaneClient:
    return PlaneClient(plane, token=read_token(token_file), retry_for=retry_for, on_retry=say_retrying, **tls)


def say_retrying(error: TenantGuardError, seconds_left: float) -> None:
    """One stderr line when a write starts retrying, so a plane that is down (a stopped
    ``tenantguard dev``, a stale ``dev.env``) is not a silent wait of ``--retry-for`` seconds."""
    console_err.print(f"{error.code}: {escape(error.message)}; retrying for up to {seconds_left:.0f} s "
                      "(--retry-for 0: one attempt)", soft_wrap=True, highlight=False)


def _parse(texts: list[str]) -> list[Relationship]:
    return [Relationship.parse(text) for text in texts]


ConditionOpt = Annotated[str | None, typer.Option(
    "--condition", help="Condition (OpenFGA) / caveat (SpiceDB) the tuples hold under, e.g. ip_ok")]
ContextOpt = Annotated[str | None, typer.Option(
    "--context", help='The condition\'s parameters written with the tuples, a JSON object, e.g. {"cidr":"10.0.0.0/8"}')]
ExpiresAtOpt = Annotated[str | None, typer.Option(
    "--expires-at", help="RFC 3339 time the tuples stop granting at, e.g. 2026-12-31T00:00:00Z")]


def _flag_meta(condition: str | None, context: str | None, expires_at: str | None) -> TupleMeta | None:
    """The meta the flags give (None without flags); a usage error names the bad flag."""
    if context is not None and condition is None:
        raise typer.BadParameter("--context needs --condition", param_hint="--context")
    ctx: Any = EMPTY_CONTEXT
    if context is not None:
        try:
            ctx = loads(context, max_bytes=4 * MAX_CONTEXT_BYTES)
        except (JsonInvalid, PayloadTooLarge) as exc:
            raise typer.BadParameter(f"not JSON: {str(exc)[:120]}", param_hint="--context") from None
    when = None if expires_at is None else parse_time(expires_at)
    return check_meta(TupleMeta(condition, ctx, when))


@app.command()
@option_groups
def write(tuples: TuplesArg, plane: PlaneOpt, token_file: TokenFileOpt,
          retry_for: RetryForOpt = DEFAULT_RETRY_FOR,
          condition: ConditionOpt = None, context: ContextOpt = None, expires_at: ExpiresAtOpt = None,
          tls: PlaneTlsOptions = NO_PLANE_TLS) -> None:
    """Write tuples as one atomic batch (rewriting a tuple replaces its condition and expiry);
    prints {"consistency_token": N}."""
    rels = _parse(tuples)
    meta = _flag_meta(condition, context, expires_at)
    if meta is not None:
        if any(rel.meta is not None for rel in rels):
            raise typer.BadParameter("give a condition or expiry in the tuple's [brackets] or with flags, not both",
                                     param_hint="--condition/--expires-at")
        rels = [rel.with_meta(meta) for rel in rels]
    changes = [RelationChange("write", rel) for rel in rels]
    with plane_client(plane, token_file, retry_for, tls=tls.client_args()) as client:
        print_json({"consistency_token": client.write(changes)})


@app.command()
@option_groups
def delete(tuples: TuplesArg, plane: PlaneOpt, token_file: TokenFileOpt,
           retry_for: RetryForOpt = DEFAULT_RETRY_FOR,
           tls: PlaneTlsOptions = NO_PLANE_TLS) -> None:
    """Delete tuples as one atomic batch (deleting an absent tuple is a no-op); prints the token."""
    changes = [RelationChange("delete", rel) for rel in _parse(tuples)]
    with plane_client(plane, token_file, retry_for, tls=tls.client_args()) as client:
        print_json({"consistency_token": client.write(changes)})


@app.command("list")
@option_groups
def list_cmd(
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    tenant: Annotated[str, typer.Option(help="Tenant to list")],
    object_: Annotated[str | None, typer.Option("--object", help="Only this object, e.g. project:p1")] = None,
    relation: Annotated[str | None, typer.Option(help="Only this relation")] = None,
    subject: Annotated[str | None, typer.Option(help="Only this subject, e.g. user:alice")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Page size")] = 100,
    cursor: Annotated[str | None, typer.Option(help="next_cursor of the previous page")] = None,
    expand: Annotated[bool, typer.Option(help="Also show the users and other direct subjects each userset subject "
                                              "(group:eng#member) expands to, through nesting")] = False,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """List stored tuples of a tenant, one page; prints the JSON page (--expand: what usersets expand to)."""
    with plane_client(plane, token_file, tls=tls.client_args()) as client:
        print_json(client.list(tenant, object=object_, relation=relation, subject=subject, limit=limit,
                               cursor=cursor, expand=expand))


@app.command()
@option_groups
def check(
    tuple_: Annotated[str, typer.Argument(help="The tuple to check", metavar="TUPLE")],
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    at_least: Annotated[int | None, typer.Option(help="Wait for this consistency token first")] = None,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """Ask the plane whether the tuple holds (usersets expanded). Exit 0 when allowed, 1 when not."""
    rel = Relationship.parse(tuple_)
    with plane_client(plane, token_file, tls=tls.client_args()) as client:
        allowed, seq = client.check(rel, at_least=at_least)
    print_json({"allowed": allowed, "consistency_token": seq})
    if not allowed:
        raise typer.Exit(1)


lookup_app = typer.Typer(help="What can a subject reach, who can act on an object: asked of a sidecar, so the "
                              "policy decides each answer (tuples alone only propose).", no_args_is_help=True)
app.add_typer(lookup_app, name="lookup")
SidecarOpt = Annotated[str, typer.Option("--sidecar", envvar="TG_SIDECAR_URL",
                                         help=f"Sidecar base URL (http:// or https://) ({DEV_ENV_HINT})")]
ActionOpt = Annotated[str, typer.Option("--action", help="Action name, e.g. documents:read")]
TenantOpt = Annotated[str | None, typer.Option("--tenant", help="Tenant (the sidecar's bound one when omitted)")]
LimitOpt = Annotated[int, typer.Option(min=1, max=1000, help="Page size")]
RoleOpt = Annotated[list[str] | None, typer.Option(
    "--role", metavar="ROLE", help="A role the subject holds, stated as subject.properties.roles (repeat for several): "
                   "a policy granting by role sees it, as it sees a token's roles in a check")]


def _lookup(sidecar: str, path: str, body: dict[str, object], everything: bool) -> None:
    """POST the lookup, following ``next_token`` when ``everything``; print one JSON document."""
    import httpx

    check_http_url(sidecar, "sidecar URL")
    results: list[object] = []
    token = ""
    limit = body.pop("limit", 100)
    with httpx.Client(base_url=sidecar.rstrip("/"), timeout=10) as client:
        while True:
            try:
                response = client.post(path, json={**body, "page": {"limit": limit, "token": token}})
            except httpx.HTTPError as exc:  # refused, reset, timed out, a URL httpx cannot use
                raise Unavailable(f"sidecar at {shown_url(sidecar)} unreachable: {type(exc).__name__}"
                                  + (f": {exc}" if str(exc) else "")) from None
            answer = _lookup_page(sidecar, path, response)
            results.extend(answer["results"])
            token = answer["next_token"]
            if not everything or not token:
                break
    print_json({**answer, "results": results})


def _lookup_page(sidecar: str, path: str, response: Any) -> dict[str, Any]:
    """One lookup answer, or a typed error: the sidecar's own error body, else what the URL
    turned out to be (``--sidecar`` given the plane's or another server's address is a common slip;
    a sidecar always has the lookup routes, so a 404 means it is not one)."""
    from tenantguard.client.errors import UnexpectedResponse, error_from_body

    try:
        answer = response.json()
    except ValueError:
        answer = None
    if response.status_code not in (200, 404) and isinstance(answer, dict) and "error" in answer:
        raise error_from_body(response.status_code, answer)
    if response.status_code != 200 or not isinstance(answer, dict) or not isinstance(answer.get("results"), list) \
            or not isinstance(answer.get("next_token"), str):
        raise UnexpectedResponse(f"{shown_url(sidecar)} answered POST {path} with HTTP {response.status_code} but "
                                 "not as a tenantguard sidecar does; point --sidecar (TG_SIDECAR_URL) at the "
                                 "sidecar's base URL")
    return answer


def _entity(text: str, option: str, example: str) -> tuple[str, str]:
    """``type:id`` split, or the usage error naming the option (``--subject alice`` used to reach the
    sidecar and come back as "subject.id must be a non-empty string")."""
    kind, _, ident = text.partition(":")
    if not kind or not ident:
        raise typer.BadParameter(f"{text!r} must be TYPE:ID, e.g. {example}", param_hint=option)
    return kind, ident


def _subject(kind: str, ident: str | None, tenant: str | None, roles: list[str] | None) -> dict[str, object]:
    """The subject as this local PEP states it: the sidecar decides with what is stated here."""
    props: dict[str, object] = {"tenant_id": tenant} if tenant else {}
    if roles:
        props["roles"] = list(roles)
    return {"type": kind, **({"id": ident} if ident else {}), "properties": props}


@lookup_app.command("resources")
def lookup_resources(
    sidecar: SidecarOpt,
    subject: Annotated[str, typer.Option(help="The subject, e.g. user:alice")],
    action: ActionOpt,
    type_: Annotated[str, typer.Option("--type", help="Resource type, e.g. document")],
    tenant: TenantOpt = None,
    role: RoleOpt = None,
    limit: LimitOpt = 100,
    all_: Annotated[bool, typer.Option("--all", help="Follow every page")] = False,
) -> None:
    """Resources of a type the subject may act on (through usersets and the bundle's schema), as the sidecar's
    policy decides."""
    body = {"subject": _subject(*_entity(subject, "--subject", "user:alice"), tenant, role),
            "action": {"name": action},
            "resource": {"type": type_},
            "limit": limit}
    _lookup(sidecar, "/v1/lookup/resources", body, all_)


@lookup_app.command("subjects")
def lookup_subjects(
    sidecar: SidecarOpt,
    object_: Annotated[str, typer.Option("--object", help="The resource, e.g. document:d1")],
    action: ActionOpt,
    type_: Annotated[str, typer.Option("--type", help="Subject type")] = "user",
    tenant: TenantOpt = None,
    role: RoleOpt = None,
    limit: LimitOpt = 100,
    all_: Annotated[bool, typer.Option("--all", help="Follow every page")] = False,
) -> None:
    """Subjects of a type that may act on the object (through usersets and the bundle's schema), as the
    sidecar's policy decides."""
    kind, ident = _entity(object_, "--object", "document:d1")
    body = {"subject": _subject(type_, None, tenant, role), "action": {"name": action},
            "resource": {"type": kind, "id": ident}, "limit": limit}
    _lookup(sidecar, "/v1/lookup/subjects", body, all_)
