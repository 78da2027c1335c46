"""Real X.509 material for TLS tests (``tenantguard.dev.tls``): CAs, server and client certificates,
keys written 0600."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tenantguard.dev.tls import Issued as Made
from tenantguard.dev.tls import new_ca


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Ca:
    made: Made
    cert: Path


def _write(directory: Path, name: str, made: Made) -> Issued:
    issued = Issued(directory / f"{name}.pem", directory / f"{name}.key")
    made.write(issued.cert, issued.key)
    return issued


def _ca(directory: Path, name: str) -> Ca:
    made = new_ca(name, days=1)
    return Ca(made, _write(directory, name, made).cert)


@dataclass(frozen=True)
class Pki:
    """One CA with a server certificate for 127.0.0.1 and localhost and a client certificate; a second
    CA (another organisation) with its own client certificate; a server certificate for another host."""

    ca: Ca
    server: Issued
    client: Issued
    other_ca: Ca
    other_client: Issued
    wrong_host: Issued


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca, other = _ca(directory, "ca"), _ca(directory, "other-ca")
    return Pki(ca=ca, server=_write(directory, "server", ca.made.issue("server", hosts=("127.0.0.1", "localhost"))),
               client=_write(directory, "client", ca.made.issue("client", client=True)), other_ca=other,
               other_client=_write(directory, "other-client", other.made.issue("other-client", client=True)),
               wrong_host=_write(directory, "wrong-host", ca.made.issue("wrong", hosts=("plane.elsewhere.example",))))
