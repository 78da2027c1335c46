"""``tenantguard revoke``: push revocations through the policy plane to every sidecar.

Each command publishes one signed ``revocation`` event (the plane fills in the cut-off
time for subject and tenant revocations) and prints ``{"seq": N}``. Exit codes: 0
published, 1 a typed error (``error <code>: ...`` on stderr), 2 bad usage.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from tenantguard.cli.common import (
    print_json,
)
from tenantguard.cli.options import NO_PLANE_TLS, PlaneTlsArgs, PlaneTlsOptions, option_groups
from tenantguard.cli.relation import PlaneOpt, RetryForOpt, TokenFileOpt, plane_client
from tenantguard.client.plane import DEFAULT_RETRY_FOR

app = typer.Typer(help="Revoke a token, a subject, a signing key or a whole tenant (kill switch).",
                  no_args_is_help=True)
TenantOpt = Annotated[str, typer.Option("--tenant", help="The tenant")]


def _publish(plane: str, token_file: Any, revocation: dict[str, Any], retry_for: float,
             tls: PlaneTlsArgs) -> None:
    with plane_client(plane, token_file, retry_for, tls=tls) as client:
        print_json({"seq": client.revoke(revocation)})


@app.command()
@option_groups
def jti(
    token_id: Annotated[str, typer.Argument(help="The token's jti claim", metavar="JTI")],
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    retry_for: RetryForOpt = DEFAULT_RETRY_FOR,
    exp: Annotated[int | None, typer.Option(help="The token's exp (epoch s); sidecars forget the entry after it. "
                                            "Default: now + 1 hour (the longest context-token lifetime)")] = None,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """Refuse one token everywhere, cached verifications included."""
    _publish(plane, token_file, {"kind": "jti", "jti": token_id, "exp": exp or int(time.time()) + 3600}, retry_for,
             tls=tls.client_args())


@app.command()
@option_groups
def subject(
    sub: Annotated[str, typer.Argument(help="The token's sub claim", metavar="SUB")],
    tenant: TenantOpt,
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    retry_for: RetryForOpt = DEFAULT_RETRY_FOR,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """Refuse every token of SUB in TENANT issued before now (a re-login afterwards works)."""
    _publish(plane, token_file, {"kind": "subject", "tenant": tenant, "sub": sub}, retry_for,
             tls=tls.client_args())


@app.command()
@option_groups
def kid(
    key_id: Annotated[str, typer.Argument(help="The signing key's kid (RFC 7638 thumbprint)", metavar="KID")],
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    retry_for: RetryForOpt = DEFAULT_RETRY_FOR,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """Refuse every token signed by a key (a leaked issuer or sidecar key).

    The plane also drops the key from the trust set for good, and a sidecar holding it
    switches to a new key.
    """
    _publish(plane, token_file, {"kind": "kid", "kid": key_id}, retry_for,
             tls=tls.client_args())


@app.command()
@option_groups
def tenant(
    name: Annotated[str, typer.Argument(help="The tenant", metavar="TENANT")],
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    retry_for: RetryForOpt = DEFAULT_RETRY_FOR,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """The kill switch: deny every decision and exchange for TENANT until lifted."""
    _publish(plane, token_file, {"kind": "tenant", "tenant": name}, retry_for,
             tls=tls.client_args())


@app.command("lift-tenant")
@option_groups
def lift_tenant(
    name: Annotated[str, typer.Argument(help="The tenant", metavar="TENANT")],
    plane: PlaneOpt,
    token_file: TokenFileOpt,
    retry_for: RetryForOpt = DEFAULT_RETRY_FOR,
    tls: PlaneTlsOptions = NO_PLANE_TLS,
) -> None:
    """Lift a tenant's kill switch (its unexpired tokens work again)."""
    _publish(plane, token_file, {"kind": "lift_tenant", "tenant": name}, retry_for,
             tls=tls.client_args())
