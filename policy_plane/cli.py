"""``tenantguard plane``: serve a replica, or create dev keys and secrets (``init``).

Registered through the ``tenantguard.cli`` entry point, so the library never imports
the plane. Typed errors (bad key file, NATS unreachable) print one line and exit 1.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from tenantguard.cli.common import ReportsEveryMissing
from tenantguard.cli.options import NO_NATS_OPTIONS, Group, NatsOptions, option_groups
from tenantguard.feed.natsconn import HELP as NATS_HELP
from tenantguard.server.serving import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEAD_BYTES,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    HTTP_HELP,
)
from tenantguard.util.httptls import SERVER_HELP as TLS_HELP

from .config import (
    DEFAULT_DECISIONS_KEPT,
    DEFAULT_DECISIONS_MAX_AGE,
    DEFAULT_DECISIONS_MAX_BYTES,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_BUNDLE_BYTES,
    DEFAULT_PORT,
    DEFAULT_ROLLOUT_RECONCILE_SECONDS,
    DEFAULT_SNAPSHOT_EVERY,
)
from .purge import DEFAULT_PURGE_GRACE, DEFAULT_PURGE_SECONDS

app = typer.Typer(help="Run the policy plane (relationships, bundles, trust, revocations).", no_args_is_help=True)
ENV = "TG_PLANE_"


class ImpactGateMode(StrEnum):
    off = "off"
    report = "report"
    enforce = "enforce"


@app.command(cls=ReportsEveryMissing)
@option_groups
def serve(
    nats: Annotated[str, typer.Option(envvar=ENV + "NATS", help=NATS_HELP["servers"])],
    event_key: Annotated[
        Path, typer.Option(envvar=ENV + "EVENT_KEY", dir_okay=False, help="Private key (PEM) that signs every event")
    ],
    bundle_key: Annotated[
        Path, typer.Option(envvar=ENV + "BUNDLE_KEY", dir_okay=False, help="Private key (PEM) that signs bundles")
    ],
    admin_token_file: Annotated[
        Path,
        typer.Option(
            envvar=ENV + "ADMIN_TOKEN_FILE", dir_okay=False, help="File holding the admin bearer token (mode 0600)"
        ),
    ],
    join_secret: Annotated[
        list[str] | None,
        typer.Option(
            envvar=ENV + "JOIN_SECRET",
            metavar="<str>",
            help="SERVICE=FILE: the join secret a sidecar of SERVICE registers its key with; repeat",
        ),
    ] = None,
    host: Annotated[str, typer.Option(envvar=ENV + "HOST", help="Bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(envvar=ENV + "PORT", help="HTTP port (0 = any free port)")] = DEFAULT_PORT,
    snapshot_every: Annotated[
        int, typer.Option(envvar=ENV + "SNAPSHOT_EVERY", help="Snapshot relations every N batches")
    ] = DEFAULT_SNAPSHOT_EVERY,
    snapshot_seconds: Annotated[
        float, typer.Option(envvar=ENV + "SNAPSHOT_SECONDS", help="...or every T seconds when anything changed")
    ] = 300.0,
    heartbeat_seconds: Annotated[
        float, typer.Option(envvar=ENV + "HEARTBEAT_SECONDS", help="Seconds between signed heartbeats")
    ] = 5.0,
    purge_seconds: Annotated[float, typer.Option(
        envvar=ENV + "PURGE_SECONDS",
        help="Seconds between deletions of expired tuples (through the cell's stream, like any write); 0 = never")
    ] = DEFAULT_PURGE_SECONDS,
    purge_grace: Annotated[float, typer.Option(
        envvar=ENV + "PURGE_GRACE",
        help="Seconds a tuple stays expired before it is deleted (room for the sidecars' clocks); it grants "
             "nothing from its expiry on either way")
    ] = DEFAULT_PURGE_GRACE,
    rollout_reconcile_seconds: Annotated[float, typer.Option(
        min=0.1, max=3600, envvar=ENV + "ROLLOUT_RECONCILE_SECONDS",
        help="Seconds between checks that every scope a staged rollout has reached runs its bundle; a scope "
             "whose announce failed after the rollout's state was committed is announced again")
    ] = DEFAULT_ROLLOUT_RECONCILE_SECONDS,
    max_body_bytes: Annotated[
        int, typer.Option(envvar=ENV + "MAX_BODY_BYTES", help="Bound on JSON request bodies")
    ] = DEFAULT_MAX_BODY_BYTES,
    max_bundle_bytes: Annotated[
        int, typer.Option(envvar=ENV + "MAX_BUNDLE_BYTES", help="Bound on bundle uploads")
    ] = DEFAULT_MAX_BUNDLE_BYTES,
    http_read_timeout: Annotated[float, typer.Option(
        envvar=ENV + "HTTP_READ_TIMEOUT", help=HTTP_HELP["read_timeout"] + "; a bundle upload included")
    ] = DEFAULT_READ_TIMEOUT,
    http_write_timeout: Annotated[float, typer.Option(
        envvar=ENV + "HTTP_WRITE_TIMEOUT", help=HTTP_HELP["write_timeout"])] = DEFAULT_WRITE_TIMEOUT,
    max_head_bytes: Annotated[int, typer.Option(
        envvar=ENV + "MAX_HEAD_BYTES", help=HTTP_HELP["max_head_bytes"])] = DEFAULT_MAX_HEAD_BYTES,
    max_connections: Annotated[int, typer.Option(
        envvar=ENV + "MAX_CONNECTIONS", help=HTTP_HELP["max_connections"])] = DEFAULT_MAX_CONNECTIONS,
    tls_cert: Annotated[Path | None, typer.Option(
        envvar=ENV + "TLS_CERT", dir_okay=False, help=TLS_HELP["cert"])] = None,
    tls_key: Annotated[Path | None, typer.Option(
        envvar=ENV + "TLS_KEY", dir_okay=False, help=TLS_HELP["key"])] = None,
    tls_client_ca: Annotated[Path | None, typer.Option(
        envvar=ENV + "TLS_CLIENT_CA", dir_okay=False, help=TLS_HELP["client_ca"])] = None,
    connect_timeout: Annotated[
        float,
        typer.Option(
            min=0.5,
            envvar=ENV + "CONNECT_TIMEOUT",
            help="Seconds per NATS connect attempt (startup gives up after twice this)",
        ),
    ] = 5.0,
    operator_token_file: Annotated[Path | None, typer.Option(
        envvar=ENV + "OPERATOR_TOKEN_FILE", dir_okay=False,
        help="File holding a read-only operator bearer token (mode 0600): decision records, explain, audit")] = None,
    decisions_window: Annotated[int, typer.Option(
        min=1, max=1_000_000, envvar=ENV + "DECISIONS_WINDOW",
        help="Decision records each replica keeps in memory for fast queries (the newest)")] = DEFAULT_DECISIONS_KEPT,
    decisions_max_age: Annotated[float, typer.Option(
        envvar=ENV + "DECISIONS_MAX_AGE", help="Seconds TG_DECISIONS keeps a decision record")
    ] = DEFAULT_DECISIONS_MAX_AGE,
    decisions_max_bytes: Annotated[int, typer.Option(
        envvar=ENV + "DECISIONS_MAX_BYTES", help="Bytes TG_DECISIONS holds at most, the oldest records going "
        "first (0: no size bound; JetStream reserves the bound in its store)")
    ] = DEFAULT_DECISIONS_MAX_BYTES,
    stream_replicas: Annotated[
        int,
        typer.Option(
            envvar=ENV + "STREAM_REPLICAS", help="JetStream replicas of every stream and bucket (3 in production)"
        ),
    ] = 1,
    cells: Annotated[int, typer.Option(
        min=1, max=4096, envvar=ENV + "CELLS",
        help="Tenant cells: relations are partitioned by cell (own subject, sequence and snapshots) so a "
             "sidecar can hold only its cells. Fixed when the system is set up (no resharding); every "
             "sidecar states the same number")] = 1,
    impact_gate: Annotated[ImpactGateMode, typer.Option(
        envvar=ENV + "IMPACT_GATE",
        help="Before every publish, replay this replica's decision sample against the candidate: off, report "
             "(answer the flips) or enforce (refuse, 409 impact_undeclared_flips, above --impact-max-undeclared); "
             "a request may ask for more with ?impact=")] = ImpactGateMode.off,
    impact_max_undeclared: Annotated[int, typer.Option(
        min=0, envvar=ENV + "IMPACT_MAX_UNDECLARED", help="Undeclared flips an enforcing gate lets through")] = 0,
    impact_sample: Annotated[int, typer.Option(
        min=1, max=100_000, envvar=ENV + "IMPACT_SAMPLE", help="Newest decision records the gate replays")] = 5000,
    console: Annotated[bool, typer.Option(
        "--console/--no-console", envvar=ENV + "CONSOLE",
        help="Serve the operations console under /console/ (sign-in with the admin or operator token)")] = True,
    console_idle_minutes: Annotated[float, typer.Option(
        min=1, max=1440, envvar=ENV + "CONSOLE_IDLE_MINUTES",
        help="A console session ends after this many minutes without a request (sessions are kept in memory "
             "and end with the replica)")] = 15.0,
    console_origin: Annotated[str | None, typer.Option(
        envvar=ENV + "CONSOLE_ORIGIN",
        help="The console's origin as browsers see it, e.g. https://plane.example.com, when a proxy terminates "
             "TLS in front of the plane: form posts must come from it and cookies are Secure when it is https "
             "(default: the scheme and Host of each request)")] = None,
    group_commit: Annotated[bool, typer.Option(
        "--group-commit/--no-group-commit", envvar=ENV + "GROUP_COMMIT",
        help="Concurrent relation writes in this replica share one signed batch (each still gets its own "
             "answer); off: one batch per request (TG_PLANE_GROUP_COMMIT=0)")] = True,
    fast_writes: Annotated[bool, typer.Option(
        "--fast-writes/--no-fast-writes", envvar=ENV + "FAST_WRITES",
        help="Answer POST /v1/relations and /v1/revocations below the web framework, with the same checks, "
             "errors and answers (anything else about them still goes through it); off: every request through "
             "FastAPI (TG_PLANE_FAST_WRITES=0)")] = True,
    nats_auth: Annotated[NatsOptions, Group(env=ENV)] = NO_NATS_OPTIONS,
) -> None:
    """Start one plane replica; prints {"event": "listening", "http": "host:port"} when ready.

    `tenantguard plane init DIR --service NAME` writes what the required flags name: DIR/event.pem,
    DIR/bundle.pem, DIR/admin.token and the join secrets. To try it all on one machine, `tenantguard dev`
    starts NATS, a plane and a sidecar for you.
    """
    from tenantguard.identity.keys import SigningKey
    from tenantguard.util.httptls import ServerTls

    from .config import PlaneConfig, parse_join_secrets
    from .runtime import Plane
    from .secrets import SecretChecker
    from .server import run

    tls = ServerTls.from_options(tls_cert, tls_key, tls_client_ca)  # before anything else: a file mistake
    nats_connection = nats_auth.connection(nats)
    config = PlaneConfig(
        nats_url=nats,
        nats=nats_connection,
        event_key=SigningKey.load(event_key),
        bundle_key=SigningKey.load(bundle_key),
        admin=SecretChecker.from_file(admin_token_file),
        operator=SecretChecker.from_file(operator_token_file) if operator_token_file is not None else None,
        decisions_kept=decisions_window,
        decisions_max_age=decisions_max_age,
        decisions_max_bytes=decisions_max_bytes,
        join_secrets=parse_join_secrets(join_secret or []),
        host=host,
        port=port,
        snapshot_every=snapshot_every,
        snapshot_seconds=snapshot_seconds,
        heartbeat_seconds=heartbeat_seconds,
        purge_seconds=purge_seconds,
        purge_grace=purge_grace,
        rollout_reconcile_seconds=rollout_reconcile_seconds,
        max_body_bytes=max_body_bytes,
        max_bundle_bytes=max_bundle_bytes,
        http_read_timeout=http_read_timeout,
        http_write_timeout=http_write_timeout,
        max_head_bytes=max_head_bytes,
        max_connections=max_connections,
        connect_timeout=connect_timeout,
        stream_replicas=stream_replicas,
        cells=cells,
        impact_gate=impact_gate.value,
        impact_max_undeclared=impact_max_undeclared,
        impact_sample=impact_sample,
        console=console,
        console_idle_seconds=console_idle_minutes * 60,
        console_origin=console_origin,
        group_commit=group_commit,
        fast_writes=fast_writes,
        tls=tls,
    )
    run(Plane(config))


@app.command()
def init(
    directory: Annotated[
        Path, typer.Argument(help="Where to write the keys and secrets (created if missing)", metavar="DIR",
                             file_okay=False)
    ],
    service: Annotated[list[str] | None, typer.Option(metavar="<str>",
                                                     help="Also create a join secret for SERVICE; repeat")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files")] = False,
) -> None:
    """Create dev material: event.pem, bundle.pem (0600, with .pub), admin.token (0600), join secrets,
    and NATS identities: nats/plane.nk and nats/SERVICE.nk (nkey seeds, 0600) with nats/users.conf,
    the nats-server authorization block (public keys + permissions) to include in nats.conf.

    Prints a JSON summary (paths and key ids, never the secrets).
    """
    from tenantguard.feed import topology
    from tenantguard.feed.natsconfig import NatsUser, authorization_block
    from tenantguard.feed.natsconn import new_user_nkey, nkey_public
    from tenantguard.identity.keys import SigningKey, write_private

    from .config import check_service
    from .secrets import new_secret

    targets = {
        "event_key": directory / "event.pem",
        "bundle_key": directory / "bundle.pem",
        "admin_token_file": directory / "admin.token",
    }
    services = [check_service(s) for s in service or []]
    secrets_dir = directory / "join-secrets"
    for name in services:
        targets[f"join_secret:{name}"] = secrets_dir / f"{name}.secret"
    nats_dir = directory / "nats"
    identities = {"plane": topology.plane_permissions(),
                  **{name: topology.sidecar_permissions(name) for name in services}}
    for name in identities:
        targets[f"nats_seed:{name}"] = nats_dir / f"{name}.nk"
    targets["nats_users"] = nats_dir / "users.conf"
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing and not force:
        typer.echo(f"refusing to overwrite {', '.join(existing)} (use --force)", err=True)
        raise typer.Exit(1)
    summary: dict[str, object] = {}
    for name in ("event_key", "bundle_key"):
        key = SigningKey.generate()
        key.save(targets[name])
        summary[name] = {"path": str(targets[name]), "public": str(targets[name]) + ".pub", "kid": key.kid}
    users = []
    for name, permissions in identities.items():
        seed = new_user_nkey()
        write_private(targets[f"nats_seed:{name}"], seed + b"\n")
        users.append(NatsUser(nkey=nkey_public(seed), permissions=permissions))
        summary[f"nats_seed:{name}"] = str(targets[f"nats_seed:{name}"])
    header = "# nats-server authorization for tenantguard (written by `tenantguard plane init`): public nkeys only.\n"
    write_private(targets["nats_users"], (header + authorization_block(users)).encode())
    summary["nats_users"] = str(targets["nats_users"])
    for name, path in targets.items():
        if name in ("event_key", "bundle_key", "nats_users") or name.startswith("nats_seed:"):
            continue
        write_private(path, (new_secret() + "\n").encode())
        summary[name] = str(path)
    print(json.dumps(summary, indent=2, sort_keys=True))
