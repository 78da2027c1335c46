"""``tenantguard keys``: generate signing keys, show them, export trust sets as JWKS."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tenantguard.cli.common import console, print_json
from tenantguard.identity.keys import SUPPORTED_ALGORITHMS, SigningKey, TrustSet, load_public_key_file

app = typer.Typer(help="Generate signing keys (written 0600), show their kid, export JWKS.", no_args_is_help=True)


@app.command()
def generate(
    out: Annotated[Path, typer.Argument(help="Private key path; the public key goes to OUT.pub", metavar="OUT")],
    alg: Annotated[str, typer.Option(help=f"One of {', '.join(SUPPORTED_ALGORITHMS)}")] = "EdDSA",
    force: Annotated[bool, typer.Option(help="Overwrite an existing key file")] = False,
) -> None:
    """Generate a key pair; the private key file is created with mode 0600."""
    if alg not in SUPPORTED_ALGORITHMS:
        raise typer.BadParameter(f"choose one of {', '.join(SUPPORTED_ALGORITHMS)}", param_hint="--alg")
    if out.exists() and not force:
        raise typer.BadParameter(f"{out} exists; pass --force to overwrite", param_hint="OUT")
    key = SigningKey.generate(alg)
    pub = key.save(out)
    console.print(f"[green]generated[/] {key.alg} key [bold]{key.kid}[/]")
    console.print(f"  private: {out} (0600)\n  public:  {pub}")


@app.command()
def show(path: Annotated[Path, typer.Argument(help="A PEM private or public key", metavar="KEY")]) -> None:
    """Print the key's public JWK (with its RFC 7638 kid); never prints private material."""
    from tenantguard.identity.keys import public_jwk

    print_json(public_jwk(load_public_key_file(path)))


@app.command()
def jwks(
    keys: Annotated[list[Path], typer.Argument(help="PEM keys (private or public) to publish", metavar="KEY")],
    issuer: Annotated[str, typer.Option(help="Issuer these keys may sign for")],
    out: Annotated[Path | None, typer.Option(help="Write the JWKS here instead of stdout")] = None,
) -> None:
    """Export public keys as a JWKS trust file (each key carries 'iss')."""
    trust = TrustSet()
    for path in keys:
        trust.add_public_key(load_public_key_file(path), issuer)
    if out is None:
        print_json(trust.to_jwks())
    else:
        trust.save(out)
        console.print(f"[green]wrote[/] {len(trust)} key(s) to {out}")


@app.command()
def tls(
    out: Annotated[Path, typer.Option("--out", help="Directory to write into (created if missing)", file_okay=False)],
    host: Annotated[list[str], typer.Option(
        "--host", metavar="NAME", help="A DNS name or IP address clients dial the plane by; repeat")],
    client: Annotated[list[str] | None, typer.Option(
        "--client", metavar="NAME", help="Also a client certificate NAME for mutual TLS (e.g. admin, billing); "
                                         "repeat")] = None,
    days: Annotated[int, typer.Option(min=1, max=825, help="Lifetime of every certificate")] = 90,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files")] = False,
) -> None:
    """Mint a private dev CA and a plane certificate signed by it: OUT/ca.pem (+ ca.key),
    OUT/plane.pem + plane.key, and OUT/client-NAME.pem + .key per --client. Keys are written 0600.

    For trying HTTPS and mutual TLS; in production use your own CA. Prints the flags that use the files:
    plane_flags for `plane serve`, client_flags for the CLI (with --client: the first client's certificate;
    each client's flags are under clients.NAME.flags).
    """
    from tenantguard.dev.tls import new_ca

    names = [("ca", None), ("plane", None), *((f"client-{name}", name) for name in client or [])]
    existing = [str(out / f"{stem}{ext}") for stem, _ in names for ext in (".pem", ".key")
                if (out / f"{stem}{ext}").exists()]
    if existing and not force:
        raise typer.BadParameter(f"{', '.join(existing)} exist; pass --force to overwrite", param_hint="--out")
    ca = new_ca("tenantguard dev CA", days=days)
    made = {"ca": ca, "plane": ca.issue("tenantguard plane", hosts=host, days=days),  # all made before any write
            **{stem: ca.issue(str(name), client=True, days=days) for stem, name in names[2:]}}
    for stem, issued in made.items():
        issued.write(out / f"{stem}.pem", out / f"{stem}.key")
    ca_flags = ["--plane-ca", str(out / "ca.pem")]
    clients = {name: {"cert": str(out / f"{stem}.pem"), "key": str(out / f"{stem}.key"),
                      "flags": [*ca_flags, "--plane-client-cert", str(out / f"{stem}.pem"),
                                "--plane-client-key", str(out / f"{stem}.key")]}
               for stem, name in names[2:]}
    print_json({
        "ca": str(out / "ca.pem"), "plane": {"cert": str(out / "plane.pem"), "key": str(out / "plane.key")},
        "clients": clients, "hosts": host,
        "plane_flags": ["--tls-cert", str(out / "plane.pem"), "--tls-key", str(out / "plane.key"),
                        *(["--tls-client-ca", str(out / "ca.pem")] if clients else [])],
        # with --client the plane requires a client certificate: the CA alone would be refused, so the
        # flags a client copies name the first client's certificate (each client's are in "clients")
        "client_flags": next(iter(clients.values()))["flags"] if clients else ca_flags,
    })
