"""A nats-server with authorization on, as ``tenantguard dev`` and deploy/ configure it: the plane as a
password user, a billing sidecar as an nkey user, each with the permissions of
:mod:`tenantguard.feed.topology`; and how each identity connects."""

from __future__ import annotations

from pathlib import Path

from tenantguard.dev.natsserver import NatsServer
from tenantguard.feed import natsconn, topology
from tenantguard.feed.natsconfig import NatsUser
from tenantguard.feed.natsconn import NatsConnection
from tenantguard.identity.keys import write_private

PLANE_PASSWORD = "plane-pw-" + "x7Qe9rT2"


def write_credentials(folder: Path) -> dict[str, Path]:
    """The plane's password file and the billing sidecar's nkey seed file (both 0600) under ``folder``."""
    paths = {"plane": folder / "plane.password", "billing": folder / "billing.nk"}
    folder.mkdir()
    write_private(paths["plane"], PLANE_PASSWORD.encode() + b"\n")
    write_private(paths["billing"], natsconn.new_user_nkey() + b"\n")
    return paths


def users(creds: dict[str, Path]) -> list[NatsUser]:
    """The server's users: the plane (password) and the billing sidecar (nkey), with their permissions."""
    return [
        NatsUser(user="plane", password=PLANE_PASSWORD, permissions=topology.plane_permissions()),
        NatsUser(nkey=natsconn.nkey_public(creds["billing"].read_bytes()),
                 permissions=topology.sidecar_permissions("billing")),
    ]


def plane_conn(server: NatsServer, creds: dict[str, Path]) -> NatsConnection:
    return NatsConnection(servers=(server.url,), user="plane", password_file=creds["plane"])


def sidecar_conn(server: NatsServer, creds: dict[str, Path]) -> NatsConnection:
    return NatsConnection(servers=(server.url,), nkey_seed_file=creds["billing"])
