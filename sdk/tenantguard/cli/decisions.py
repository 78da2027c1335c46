"""``tenantguard decisions`` and ``tenantguard explain``: read decision records through the plane.

``query`` prints one page (JSON, with ``next_cursor``); ``export`` writes every matching
record as JSON lines, oldest first (``--format opa``: OPA decision-log events); ``tail``
prints records as they arrive (``-f`` keeps following). Reading needs the admin or the
operator token (``--token-file``). Exit codes: 0 success, 1 a typed error, 2 bad usage.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Any, Literal

import typer

from tenantguard.cli.common import (
    ReadTokenFileOpt,
    print_json,
)
from tenantguard.cli.options import NO_PLANE_TLS, PlaneTlsArgs, PlaneTlsOptions, option_groups
from tenantguard.cli.relation import PlaneOpt, read_token
from tenantguard.client.plane import PlaneClient

app = typer.Typer(help="Query, export and follow decision records kept by the policy plane.", no_args_is_help=True)

TenantF = Annotated[str | None, typer.Option(help="Only this tenant's records")]
ServiceF = Annotated[str | None, typer.Option(help="Only this service's records")]
SubjectF = Annotated[str | None, typer.Option(help="Subject type:id, e.g. user:alice")]
ResourceF = Annotated[str | None, typer.Option(help="Resource type:id")]
ActionF = Annotated[str | None, typer.Option(help="Action name")]
OutcomeF = Annotated[Literal["allow", "deny"] | None, typer.Option("--outcome", help="allow or deny")]
ReasonF = Annotated[str | None, typer.Option(help="Records listing this reason")]
SinceF = Annotated[float | None, typer.Option(help="Epoch seconds (inclusive)")]
UntilF = Annotated[float | None, typer.Option(help="Epoch seconds (inclusive)")]
FormatF = Annotated[Literal["tenantguard", "opa"], typer.Option("--format", help="opa: OPA decision-log events")]


def _client(plane: str, token_file: Any, *, tls: PlaneTlsArgs) -> PlaneClient:
    return PlaneClient(plane, token=read_token(token_file), **tls)


def _filters(tenant: str | None, service: str | None, subject: str | None, resource: str | None,
             action: str | None, outcome: str | None, reason: str | None, since: float | None,
             until: float | None) -> dict[str, Any]:
    return {"tenant": tenant, "service": service, "subject": subject, "resource": resource, "action": action,
            "allow": None if outcome is None else outcome == "allow", "reason": reason, "since": since,
            "until": until}


@app.command()
@option_groups
def query(plane: PlaneOpt, token_file: ReadTokenFileOpt, tenant: TenantF = None, service: ServiceF = None,
          subject: SubjectF = None, resource: ResourceF = None, action: ActionF = None, outcome: OutcomeF = None,
          reason: ReasonF = None, since: SinceF = None, until: UntilF = None,
          decision_id: Annotated[str | None, typer.Option(help="One decision id")] = None,
          limit: Annotated[int, typer.Option(min=1, max=1000, help="Page size")] = 50,
          cursor: Annotated[str | None, typer.Option(help="next_cursor of the previous page")] = None,
          format: FormatF = "tenantguard",
          tls: PlaneTlsOptions = NO_PLANE_TLS) -> None:
    """One page, newest first; prints {"decisions": [...], "next_cursor": ...}."""
    with _client(plane, token_file, tls=tls.client_args()) as client:
        page = client.decisions(**_filters(tenant, service, subject, resource, action, outcome, reason, since,
                                           until), decision_id=decision_id, limit=limit, cursor=cursor,
                                format=format)
    page.pop("stats", None)
    print_json(page)


@app.command()
@option_groups
def export(plane: PlaneOpt, token_file: ReadTokenFileOpt, tenant: TenantF = None, service: ServiceF = None,
           subject: SubjectF = None, resource: ResourceF = None, action: ActionF = None, outcome: OutcomeF = None,
           reason: ReasonF = None, since: SinceF = None, until: UntilF = None,
           format: FormatF = "tenantguard",
           tls: PlaneTlsOptions = NO_PLANE_TLS) -> None:
    """Every matching record as JSON lines on stdout, oldest first (--tenant: one tenant's records)."""
    with _client(plane, token_file, tls=tls.client_args()) as client:
        for record in client.iter_decisions(**_filters(tenant, service, subject, resource, action, outcome, reason,
                                                       since, until), order="asc", limit=1000, format=format):
            sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")


@app.command()
@option_groups
def tail(plane: PlaneOpt, token_file: ReadTokenFileOpt, tenant: TenantF = None, service: ServiceF = None,
         outcome: OutcomeF = None, reason: ReasonF = None,
         follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep printing new records until Ctrl-C")] = False,
         lines: Annotated[int, typer.Option("-n", min=0, max=1000, help="Newest records to print first")] = 10,
         interval: Annotated[float, typer.Option(min=0.2, help="Seconds between polls with -f")] = 1.0,
         format: FormatF = "tenantguard",
         tls: PlaneTlsOptions = NO_PLANE_TLS) -> None:
    """The newest records as JSON lines; with -f, then every new one as it arrives."""
    filters = _filters(tenant, service, None, None, None, outcome, reason, None, None)
    with _client(plane, token_file, tls=tls.client_args()) as client:
        first = client.decisions(**filters, limit=max(lines, 1), format=format)
        for record in reversed(first["decisions"][:lines]):
            sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
        sys.stdout.flush()
        cursor = first["tail_cursor"]
        while follow:
            time.sleep(interval)
            page = client.decisions(**filters, order="asc", limit=1000, cursor=cursor, format=format)
            for record in page["decisions"]:
                sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
            sys.stdout.flush()
            cursor = page["next_cursor"]


@option_groups
def explain(
    decision_id: Annotated[str, typer.Argument(help="A decision id from a record or a response", metavar="ID")],
    plane: PlaneOpt,
    token_file: ReadTokenFileOpt,
    tenant: Annotated[str | None, typer.Option(help="The decision's tenant (narrows the search)")] = None,
    service: Annotated[str | None, typer.Option(help="The decision's service (narrows the search)")] = None,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """Explain a decision: built-in checks, relations and rules involved, and a re-evaluation on its
    bundle revision and relations state (when the plane still holds them); prints JSON."""
    with _client(plane, token_file, tls=tls.client_args()) as client:
        print_json(client.explain(decision_id, tenant=tenant, service=service))
