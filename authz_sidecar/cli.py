"""``tenantguard sidecar``: the sidecar's own commands, registered through an entry point."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from tenantguard.cli.options import NO_NATS_OPTIONS, NO_PLANE_TLS, Group, NatsOptions, PlaneTls, option_groups
from tenantguard.decision.verdicts import DEFAULT_MEMO_SIZE
from tenantguard.feed.natsconn import HELP as NATS_HELP
from tenantguard.server.serving import (
    DEFAULT_GRPC_MAX_CONNECTION_AGE,
    DEFAULT_GRPC_MAX_CONNECTION_IDLE,
    DEFAULT_GRPC_MAX_CONNECTIONS,
    DEFAULT_GRPC_MAX_STREAMS,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEAD_BYTES,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    GRPC_HELP,
    HTTP_HELP,
)

from .config import (
    DEFAULT_GRPC_MAX_MESSAGE_BYTES,
    DEFAULT_GRPC_PORT,
    DEFAULT_HTTP_PORT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_STALENESS,
    SidecarConfig,
)

app = typer.Typer(help="Run the authorization sidecar beside a service.", no_args_is_help=True)
ENV = "TG_SIDECAR_"


@app.command()
@option_groups
def serve(
    service: Annotated[str, typer.Option(envvar=ENV + "SERVICE", help="This service's name (the expected token aud)")],
    bundle: Annotated[Path | None, typer.Option(envvar=ENV + "BUNDLE",
                                                help="Signed bundle file to load at start")] = None,
    bundle_key: Annotated[list[Path] | None, typer.Option(envvar=ENV + "BUNDLE_KEY", metavar="<file>",
                                                          help="Public key trusted to sign bundles; repeat")] = None,
    trust: Annotated[Path | None, typer.Option(envvar=ENV + "TRUST", help=(
        "Trust file (JWKS with iss) for tokens. With --nats it is only the bootstrap: the plane's trust set "
        "replaces it entirely at the first trust update (the plane is authoritative)"))] = None,
    relations: Annotated[Path | None, typer.Option(envvar=ENV + "RELATIONS",
                                                   help="Local relations file (JSON) until the plane feeds us")] = None,
    state_dir: Annotated[Path | None, typer.Option(envvar=ENV + "STATE_DIR",
                                                   help="Where the last good bundle is kept for cold start")] = None,
    host: Annotated[str, typer.Option(envvar=ENV + "HOST", help="Bind address (loopback by default)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(envvar=ENV + "PORT", help="HTTP port (0 = any free port)")] = DEFAULT_HTTP_PORT,
    grpc_port: Annotated[int, typer.Option(envvar=ENV + "GRPC_PORT",
                                           help="Envoy ext_authz gRPC port (-1 disables)")] = DEFAULT_GRPC_PORT,
    uds: Annotated[Path | None, typer.Option(envvar=ENV + "UDS", help="Serve HTTP on this unix socket instead")] = None,
    ops_port: Annotated[int, typer.Option(envvar=ENV + "OPS_PORT", help=(
        "Serve /health, /ready and /metrics (nothing else) on this port too, on --ops-host: for kubelet "
        "probes and Prometheus while the decision doors stay on loopback (-1 disables)"))] = -1,
    ops_host: Annotated[str, typer.Option(envvar=ENV + "OPS_HOST",
                                          help="Bind address of the ops listener")] = "0.0.0.0",  # noqa: S104
    decision: Annotated[str | None, typer.Option(envvar=ENV + "DECISION",
                                                 help="Decision rule, e.g. data.tenantguard.decision")] = None,
    require_token: Annotated[bool, typer.Option(envvar=ENV + "REQUIRE_TOKEN",
                                                help="Refuse questions without a context token")] = False,
    tenant: Annotated[str | None, typer.Option(envvar=ENV + "TENANT", help=(
        "Single-tenant sidecar: questions without a context token are answered in this tenant only (a body "
        "naming another is denied tenant_mismatch); tokens of any other tenant are refused (tenant_not_served)"
    ))] = None,
    pep_keys: Annotated[Path | None, typer.Option(envvar=ENV + "PEP_KEYS", dir_okay=False, help=(
        "JSON file of PEP bearer secrets (SHA-256 only), each bound to a tenant: an AuthZEN caller presenting "
        "one is answered in that tenant; once set, AuthZEN callers must present a key or a context token"))] = None,
    public_url: Annotated[str | None, typer.Option(envvar=ENV + "PUBLIC_URL", help=(
        "Base URL named by the discovery documents (AuthZEN, OAuth metadata, JWKS); default: the bound "
        "http://host:port. Set it behind a proxy, on a wildcard or unix-socket bind"))] = None,
    allow_remote: Annotated[bool, typer.Option(envvar=ENV + "ALLOW_REMOTE",
                                               help="Answer callers that are not on loopback")] = False,
    alg: Annotated[list[str] | None, typer.Option(envvar=ENV + "ALG", metavar="<str>",
                                                  help="Accepted token algorithm; repeat")] = None,
    max_body_bytes: Annotated[int, typer.Option(
        envvar=ENV + "MAX_BODY_BYTES",
        help="Largest request body read on the HTTP doors (1 KiB..16 MiB); a larger one is refused 413",
    )] = DEFAULT_MAX_BODY_BYTES,
    http_read_timeout: Annotated[float, typer.Option(
        envvar=ENV + "HTTP_READ_TIMEOUT", help=HTTP_HELP["read_timeout"])] = DEFAULT_READ_TIMEOUT,
    http_write_timeout: Annotated[float, typer.Option(
        envvar=ENV + "HTTP_WRITE_TIMEOUT", help=HTTP_HELP["write_timeout"])] = DEFAULT_WRITE_TIMEOUT,
    max_head_bytes: Annotated[int, typer.Option(
        envvar=ENV + "MAX_HEAD_BYTES", help=HTTP_HELP["max_head_bytes"])] = DEFAULT_MAX_HEAD_BYTES,
    max_connections: Annotated[int, typer.Option(
        envvar=ENV + "MAX_CONNECTIONS", help=HTTP_HELP["max_connections"])] = DEFAULT_MAX_CONNECTIONS,
    grpc_max_message_bytes: Annotated[int, typer.Option(envvar=ENV + "GRPC_MAX_MESSAGE_BYTES", help=(
        "Largest ext_authz Check message read (1 MiB..1 GiB); keep it above Envoy's headers plus "
        "with_request_body.max_request_bytes: a larger Check is a gRPC error, which failure_mode_allow: true "
        "lets through"))] = DEFAULT_GRPC_MAX_MESSAGE_BYTES,
    grpc_max_streams: Annotated[int, typer.Option(
        envvar=ENV + "GRPC_MAX_STREAMS", help=GRPC_HELP["max_streams"])] = DEFAULT_GRPC_MAX_STREAMS,
    grpc_max_connections: Annotated[int, typer.Option(
        envvar=ENV + "GRPC_MAX_CONNECTIONS", help=GRPC_HELP["max_connections"])] = DEFAULT_GRPC_MAX_CONNECTIONS,
    grpc_max_connection_idle: Annotated[float, typer.Option(
        envvar=ENV + "GRPC_MAX_CONNECTION_IDLE", help=GRPC_HELP["max_connection_idle"])
    ] = DEFAULT_GRPC_MAX_CONNECTION_IDLE,
    grpc_max_connection_age: Annotated[float, typer.Option(
        envvar=ENV + "GRPC_MAX_CONNECTION_AGE", help=GRPC_HELP["max_connection_age"])
    ] = DEFAULT_GRPC_MAX_CONNECTION_AGE,
    decision_memo: Annotated[int, typer.Option(
        envvar=ENV + "DECISION_MEMO", help="Policy verdicts kept for repeated questions (dropped whenever the bundle "
        "or the relations change; clock/random/network policies never use it); 0 = evaluate every time")
    ] = DEFAULT_MEMO_SIZE,
    decision_log_sample_allow: Annotated[float, typer.Option(
        min=0.0, max=1.0, envvar=ENV + "DECISION_LOG_SAMPLE_ALLOW",
        help="Share of allowed decisions logged (0..1, by decision id); the others are counted, not logged")] = 1.0,
    decision_log_sample_deny: Annotated[float, typer.Option(
        min=0.0, max=1.0, envvar=ENV + "DECISION_LOG_SAMPLE_DENY",
        help="Share of denied decisions logged (0..1); keep 1 for a complete record of denies")] = 1.0,
    decision_log_mask: Annotated[list[str] | None, typer.Option(
        envvar=ENV + "DECISION_LOG_MASK", metavar="<str>", help="JSON pointer into the logged input to remove, e.g. "
        "/input/resource/properties/ssn (listed in the record's erased); repeat")] = None,
    sidecar_id: Annotated[str | None, typer.Option(
        envvar=ENV + "SIDECAR_ID", help="This instance's name in decision records (default "
        "<service>-<hostname>-<random>)")] = None,
    exchange_lifetime: Annotated[float, typer.Option(
        envvar=ENV + "EXCHANGE_LIFETIME", help="Max lifetime (s) of exchanged tokens; policy may lower it")] = 300.0,
    exchange_max_act_depth: Annotated[int, typer.Option(
        envvar=ENV + "EXCHANGE_MAX_ACT_DEPTH", help="Longest actor chain an exchange may produce")] = 4,
    exchange_client_secret_file: Annotated[Path | None, typer.Option(
        envvar=ENV + "EXCHANGE_CLIENT_SECRET_FILE", help="Require HTTP Basic client auth on /oauth2/token")] = None,
    edge_config: Annotated[Path | None, typer.Option(
        envvar=ENV + "EDGE_CONFIG", help="Edge mode: tenants' IdPs whose tokens may be exchanged (JSON)")] = None,
    nats: Annotated[str | None, typer.Option(
        "--nats", envvar=ENV + "NATS", help=NATS_HELP["servers"] + ": follow the plane's relations, trust, "
        "revocations, bundles; publish decision logs"),
    ] = None,
    plane_key: Annotated[Path | None, typer.Option(
        envvar=ENV + "PLANE_KEY", help="The plane's public key (PEM); every NATS event must verify with it")] = None,
    max_staleness: Annotated[float, typer.Option(
        envvar=ENV + "MAX_STALENESS", help="Seconds out of step with the plane before high-risk actions fail closed")
    ] = DEFAULT_MAX_STALENESS,
    plane_url: Annotated[str | None, typer.Option(
        envvar=ENV + "PLANE_URL", help="The plane's HTTP API: register this sidecar's exchange key there (in the "
        "background, retried until accepted, moving to the next replica of a comma-separated list on each "
        "failure); the plane then publishes it to every sidecar over NATS")] = None,
    join_secret_file: Annotated[Path | None, typer.Option(
        envvar=ENV + "JOIN_SECRET_FILE", dir_okay=False,
        help="This service's join secret for --plane-url (mode 0600; read once, never logged)")] = None,
    plane_tls: Annotated[PlaneTls, Group(env=ENV)] = NO_PLANE_TLS,
    nats_auth: Annotated[NatsOptions, Group(env=ENV)] = NO_NATS_OPTIONS,
    cells: Annotated[int, typer.Option(
        min=1, max=4096, envvar=ENV + "CELLS",
        help="The system's tenant cell count: must equal the plane's --cells (a mismatch keeps the sidecar "
             "not ready)")] = 1,
    scope_cell: Annotated[list[str] | None, typer.Option(
        envvar=ENV + "SCOPE_CELL", metavar="<str>",
        help="A tenant cell (c0, c1, ...) this sidecar follows and holds; repeat. "
        "Default: every cell. Questions about tenants of other cells are denied out_of_scope")] = None,
    scope_type: Annotated[list[str] | None, typer.Option(
        envvar=ENV + "SCOPE_TYPE", metavar="<str>",
        help="An object type whose tuples this sidecar keeps (e.g. billing_account); "
        "repeat. Default: every type. Questions about other types are denied out_of_scope")] = None,
) -> None:
    """Start the sidecar: HTTP doors (native, AuthZEN, OPA Data API, ops) and Envoy ext_authz over gRPC.

    Its policy comes from a plane (--nats, --plane-key) or from a signed archive (--bundle FILE
    --bundle-key PUB; `tenantguard bundle build DIR -o FILE --signing-key KEY` makes one). With
    neither it stays not ready and denies everything. To try it all on one machine, `tenantguard dev`
    starts NATS, a plane and a sidecar for you.
    """
    from tenantguard.errors import ConfigError

    from .runtime import Sidecar
    from .server import configure_logging, run

    nats_connection = None
    if nats is None and nats_auth.any_given():
        raise ConfigError("--nats-* credentials and TLS options need --nats")
    if nats is not None and not bundle_key:
        # without it the sidecar follows the feed but refuses every bundle announced (bundle_unknown_key),
        # so it would never be ready: the --plane-key check's twin, said before anything starts
        raise ConfigError("--nats needs --bundle-key: the plane's bundle public key (bundle.pem.pub, written by "
                          "`tenantguard plane init`); without it every bundle the plane announces is refused")
    if nats is not None:
        nats_connection = nats_auth.connection(nats)
    config = SidecarConfig(
        service=service, bundle_file=bundle, bundle_keys=tuple(bundle_key or ()), trust_file=trust,
        relations_file=relations, state_dir=state_dir, host=host, port=port,
        grpc_port=None if grpc_port < 0 else grpc_port, uds=uds, decision=decision,
        ops_port=None if ops_port < 0 else ops_port, ops_host=ops_host,
        require_token=require_token, tenant=tenant, pep_keys_file=pep_keys, public_url=public_url,
        loopback_only=not allow_remote,
        algorithms=frozenset(alg or ["EdDSA"]), max_body_bytes=max_body_bytes,
        http_read_timeout=http_read_timeout, http_write_timeout=http_write_timeout, max_head_bytes=max_head_bytes,
        max_connections=max_connections,
        grpc_max_message_bytes=grpc_max_message_bytes, grpc_max_streams=grpc_max_streams,
        grpc_max_connections=grpc_max_connections,
        grpc_max_connection_idle=grpc_max_connection_idle, grpc_max_connection_age=grpc_max_connection_age,
        decision_memo_size=decision_memo,
        decision_log_sample_allow=decision_log_sample_allow, decision_log_sample_deny=decision_log_sample_deny,
        decision_log_masks=tuple(decision_log_mask or ()), sidecar_id=sidecar_id,
        exchange_lifetime=exchange_lifetime, exchange_max_act_depth=exchange_max_act_depth,
        exchange_client_secret_file=exchange_client_secret_file, edge_config=edge_config,
        nats_url=nats, nats=nats_connection, plane_key=plane_key, max_staleness_seconds=max_staleness,
        plane_url=plane_url, join_secret_file=join_secret_file,
        plane_tls=plane_tls.client_tls(),
        cells=cells, scope_cells=tuple(scope_cell or ()), scope_types=tuple(scope_type or ()),
    )
    configure_logging()
    run(Sidecar.from_config(config))
