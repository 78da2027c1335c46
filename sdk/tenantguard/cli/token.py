"""``tenantguard token``: mint, verify and inspect context tokens; a self-contained demo."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tenantguard.cli import token_demo
from tenantguard.cli.common import console, print_json
from tenantguard.errors import TokenError
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import DEFAULT_LIFETIME, TokenVerifier, VerifyOptions, decode_unverified, mint

app = typer.Typer(help="Mint, verify and inspect context tokens.", no_args_is_help=True)


@app.command("mint")
def mint_cmd(
    key: Annotated[Path, typer.Option(help="Private signing key (PEM)")],
    issuer: Annotated[str, typer.Option(help="iss claim; must match the trust set entry")],
    sub: Annotated[str, typer.Option(help="The user (sub claim)")],
    tenant: Annotated[str, typer.Option(help="The tenant (tenant_id claim)")],
    aud: Annotated[str, typer.Option(help="The service the token is for")],
    role: Annotated[list[str] | None, typer.Option(metavar="<str>", help="A role; repeat for several")] = None,
    scope: Annotated[str, typer.Option(help="Space-separated scopes")] = "",
    lifetime: Annotated[float, typer.Option(help="Seconds until exp (bounded)")] = DEFAULT_LIFETIME,
) -> None:
    """Sign a context token and print it."""
    signer = SigningKey.load(key)
    print(mint(signer, issuer=issuer, sub=sub, tenant_id=tenant, audience=aud,
               roles=role or [], scope=scope or None, lifetime=lifetime))


@app.command()
def verify(
    token: Annotated[str, typer.Argument(help="The token (or '-' to read stdin)", metavar="TOKEN")],
    trust: Annotated[Path, typer.Option(help="Trust file (JWKS with iss per key)")],
    aud: Annotated[str, typer.Option(help="This service's name (expected aud)")],
    alg: Annotated[list[str] | None, typer.Option(metavar="<str>", help="Accepted algorithm; repeat")] = None,
) -> None:
    """Verify a token as a service would; prints its claims or the typed reason it fails."""
    if token == "-":
        token = typer.get_text_stream("stdin").read().strip()
    verifier = TokenVerifier(
        TrustSet.load(trust), VerifyOptions(audience=aud, algorithms=frozenset(alg or ["EdDSA"]))
    )
    try:
        claims = verifier.verify(token)
    except TokenError as exc:
        console.print(f"[red]rejected[/] {exc.code}: {exc.message}")
        raise typer.Exit(1) from None
    print_json(claims.to_dict())


@app.command()
def show(token: Annotated[str, typer.Argument(help="The token", metavar="TOKEN")]) -> None:
    """Decode WITHOUT verifying (debugging only): header and payload."""
    print_json(decode_unverified(token))


@app.command()
def demo() -> None:
    """Mint and verify a token with fresh keys, then try the classic attacks against it."""
    results = token_demo.run()
    table = Table(title="context token demo", show_lines=False)
    table.add_column("step")
    table.add_column("expected")
    table.add_column("outcome")
    ok = True
    for step in results:
        good = step.outcome == step.expected
        ok &= good
        table.add_row(step.name, step.expected, f"[{'green' if good else 'red'}]{step.outcome}[/]")
    console.print(table)
    if not ok:
        raise typer.Exit(1)
    console.print(f"[green]all {len(results)} steps behaved as expected[/] ({time.strftime('%H:%M:%S')})")
