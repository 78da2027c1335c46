"""nats-server configuration as the project writes it: users and their permissions, TLS,
cluster routes.

Runtime code needs these (``plane nats-config`` prints an authorization block for
operators); the process manager that writes them into a config file and runs the server,
:mod:`tenantguard.dev.natsserver`, is a development tool and lives in ``dev/``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tenantguard.errors import TenantGuardError


class NatsServerError(TenantGuardError):
    """The local nats-server could not be found, started or stopped."""

    code = "nats_server_error"


@dataclass(frozen=True, slots=True)
class NatsUser:
    """One ``authorization.users`` entry: an nkey (public, ``U...``) or a user + password.

    ``permissions`` maps ``publish``/``subscribe`` to the subjects allowed (everything else
    is denied); empty means the server's default, i.e. everything.
    """

    nkey: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    permissions: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.nkey is None) == (self.user is None):
            raise NatsServerError("a NATS user has either an nkey or a user name")
        if self.user is not None and not self.password:
            raise NatsServerError(f"NATS user {self.user} needs a password")
        unknown = set(self.permissions) - {"publish", "subscribe"}
        if unknown:
            raise NatsServerError(f"unknown permission kinds {sorted(unknown)}")

    def to_config(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"nkey": self.nkey} if self.nkey else {"user": self.user, "password": self.password}
        if self.permissions:
            entry["permissions"] = {kind: {"allow": list(subjects)} for kind, subjects in self.permissions.items()}
        return entry


def authorization_block(users: Sequence[NatsUser]) -> str:
    """An ``authorization { users = [...] }`` block for a nats-server config (JSON is valid NATS conf)."""
    body = json.dumps([u.to_config() for u in users], indent=2)
    return "authorization {\n  users = " + body.replace("\n", "\n  ") + "\n}\n"


@dataclass(frozen=True, slots=True)
class NatsServerTls:
    """TLS on the client port: the server's certificate and key; with ``ca_file`` and
    ``verify`` clients must present a certificate that chains to it (mutual TLS)."""

    cert_file: Path
    key_file: Path
    ca_file: Path | None = None
    verify: bool = True

    def block(self) -> str:
        lines = ["tls {", f"  cert_file: {json.dumps(str(self.cert_file))}",
                 f"  key_file: {json.dumps(str(self.key_file))}"]
        if self.ca_file is not None:
            lines.append(f"  ca_file: {json.dumps(str(self.ca_file))}")
        lines += [f"  verify: {'true' if self.verify and self.ca_file is not None else 'false'}", "  timeout: 5", "}"]
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class NatsRoutes:
    """The ``cluster {}`` block of one node of a cluster: the cluster's name, this node's route
    port (fixed: the other nodes' configs name it) and the routes to every node.

    ``no_advertise``: the node does not tell its clients the other nodes' addresses (INFO
    ``connect_urls``), so a client only ever dials the server list it was given: behind a load
    balancer or a proxy, or where the nodes' own addresses are not reachable from the clients.
    ``advertise``: the ``host:port`` the other nodes are told to dial for this node's routes (a
    route through NAT or a proxy) instead of the address it listens on.
    """

    name: str
    port: int
    routes: tuple[str, ...]
    no_advertise: bool = False
    advertise: str | None = None

    def block(self, host: str) -> str:
        routes = "\n".join(f"    {json.dumps(r)}" for r in self.routes)
        extra = "  no_advertise: true\n" if self.no_advertise else ""
        if self.advertise is not None:
            extra += f"  advertise: {json.dumps(self.advertise)}\n"
        return (f"cluster {{\n  name: {json.dumps(self.name)}\n  listen: {json.dumps(f'{host}:{self.port}')}\n"
                f"  routes: [\n{routes}\n  ]\n  connect_retries: 120\n{extra}}}\n")
