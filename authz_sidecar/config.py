"""Sidecar settings: one frozen object built from flags or ``TG_SIDECAR_*`` variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tenantguard.decision.verdicts import DEFAULT_MEMO_SIZE
from tenantguard.decisionlog import LogPolicy
from tenantguard.errors import ConfigError
from tenantguard.feed.natsconn import NatsConnection
from tenantguard.identity.tokens import DEFAULT_LIFETIME, DEFAULT_MAX_ACT_DEPTH, MAX_LEEWAY, MAX_LIFETIME
from tenantguard.relations import RelationScope, scope_of
from tenantguard.relations.model import NAME_RE
from tenantguard.server.serving import (
    DEFAULT_GRPC_MAX_CONNECTION_AGE,
    DEFAULT_GRPC_MAX_CONNECTION_IDLE,
    DEFAULT_GRPC_MAX_CONNECTIONS,
    DEFAULT_GRPC_MAX_STREAMS,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEAD_BYTES,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    GrpcLimits,
    HttpLimits,
)
from tenantguard.util.httptls import ClientTls

DEFAULT_HTTP_PORT = 8181
DEFAULT_GRPC_PORT = 9191
DEFAULT_MAX_BODY_BYTES = 64 * 1024
# The largest Check the gRPC door reads. A larger one is a gRPC error (RESOURCE_EXHAUSTED), which Envoy
# turns into an allow under failure_mode_allow: true: keep it above what Envoy may send (headers up to
# max_request_headers_kb, the body up to with_request_body.max_request_bytes).
DEFAULT_GRPC_MAX_MESSAGE_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_EVALUATIONS = 64
DEFAULT_DECISION_LOG_QUEUE = 10_000
DEFAULT_MAX_STALENESS = 30.0
ENV_PREFIX = "TG_SIDECAR_"


@dataclass(frozen=True, slots=True)
class SidecarConfig:
    """Everything a sidecar needs to start; validated once, at construction."""

    service: str
    bundle_file: Path | None = None
    bundle_keys: tuple[Path, ...] = ()
    trust_file: Path | None = None
    relations_file: Path | None = None
    state_dir: Path | None = None
    host: str = "127.0.0.1"
    port: int = DEFAULT_HTTP_PORT
    grpc_port: int | None = DEFAULT_GRPC_PORT
    uds: Path | None = None
    ops_port: int | None = None  # /health, /ready, /metrics on a listener of their own (e.g. the pod IP)
    ops_host: str = "0.0.0.0"  # noqa: S104 - the ops listener exists to be reached from outside the pod
    decision: str | None = None  # overrides the bundle's manifest metadata.decision
    require_token: bool = False
    # -- callers without a context token (AuthZEN PEPs, gateways): where their tenant comes from
    tenant: str | None = None  # single-tenant sidecar: tokenless questions are this tenant's; other tokens refused
    pep_keys_file: Path | None = None  # PEP bearer secrets (as SHA-256), each bound to one tenant
    public_url: str | None = None  # base URL in discovery documents; default: the bound http://host:port
    loopback_only: bool = True
    algorithms: frozenset[str] = field(default_factory=lambda: frozenset({"EdDSA"}))
    leeway: float = 5.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    http_read_timeout: float = DEFAULT_READ_TIMEOUT  # a request's head and body must arrive within it (408)
    max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES  # request line + headers; beyond it 431
    http_write_timeout: float = DEFAULT_WRITE_TIMEOUT  # answers left unread this long (nothing drains): cut
    max_connections: int = DEFAULT_MAX_CONNECTIONS  # open HTTP connections; past them 503 too_many_connections
    grpc_max_message_bytes: int = DEFAULT_GRPC_MAX_MESSAGE_BYTES
    grpc_max_streams: int = DEFAULT_GRPC_MAX_STREAMS  # open calls per gRPC connection
    grpc_max_connections: int = DEFAULT_GRPC_MAX_CONNECTIONS  # open gRPC connections
    grpc_max_connection_idle: float = DEFAULT_GRPC_MAX_CONNECTION_IDLE  # s without calls before GOAWAY; 0 never
    grpc_max_connection_age: float = DEFAULT_GRPC_MAX_CONNECTION_AGE  # s a connection lives before GOAWAY; 0 never
    max_evaluations: int = DEFAULT_MAX_EVALUATIONS
    max_wait_ms: int = 500
    decision_log_queue: int = DEFAULT_DECISION_LOG_QUEUE
    decision_log_sample_allow: float = 1.0  # share of allows logged (0..1); sampled-out ones are counted
    decision_log_sample_deny: float = 1.0  # share of denies logged
    decision_log_masks: tuple[str, ...] = ()  # JSON pointers (/input/...) removed from logged inputs
    sidecar_id: str | None = None  # names this instance in decision records; default <service>-<host>-<random>
    decision_memo_size: int = DEFAULT_MEMO_SIZE  # verdicts kept for repeated questions; 0 = evaluate every time
    # -- token exchange (RFC 8693, POST /oauth2/token)
    exchange_lifetime: float = DEFAULT_LIFETIME  # upper bound; the policy's zone max_lifetime may lower it
    exchange_max_act_depth: int = DEFAULT_MAX_ACT_DEPTH
    exchange_client_secret_file: Path | None = None  # HTTP Basic client auth when set
    edge_config: Path | None = None  # edge mode: tenants' IdPs (tenantguard.identity.oidc)
    nats_url: str | None = field(default=None, repr=False)  # one URL or a comma-separated list
    nats: NatsConnection | None = None  # servers + credentials + TLS; built from nats_url when not given
    plane_key: Path | None = None  # the plane's public key: every NATS event (and announced bundle) verifies with it
    max_staleness_seconds: float = DEFAULT_MAX_STALENESS  # high-risk actions fail closed beyond it
    # -- key registration: the exchange key goes to the plane, which publishes it in the trust set
    plane_url: str | None = None  # the plane's HTTP API, e.g. https://plane.internal:8443
    join_secret_file: Path | None = None  # this service's join secret (mode 0600, read once)
    plane_tls: ClientTls | None = None  # the CA an https:// plane's certificate chains to; a client cert for mTLS
    # -- scoped feeds: which tenant cells and object types this sidecar holds (docs/scoped-feeds.md)
    cells: int = 1  # the system's cell count; must equal the plane's (checked against its signed heartbeat)
    scope_cells: tuple[str, ...] = ()  # cells followed and held; empty: every cell
    scope_types: tuple[str, ...] = ()  # object types whose tuples are kept; empty: every type

    @property
    def http_limits(self) -> HttpLimits:
        """What one HTTP request may cost before a route sees it (``tenantguard.server.serving``)."""
        return HttpLimits(read_timeout=self.http_read_timeout, max_head_bytes=self.max_head_bytes,
                          max_connections=self.max_connections, write_timeout=self.http_write_timeout)

    @property
    def grpc_limits(self) -> GrpcLimits:
        """What one gRPC connection may hold (``tenantguard.server.serving``)."""
        return GrpcLimits(max_streams=self.grpc_max_streams, max_connections=self.grpc_max_connections,
                          max_connection_idle=self.grpc_max_connection_idle,
                          max_connection_age=self.grpc_max_connection_age)

    def __post_init__(self) -> None:
        if not self.service or not self.service.replace("-", "").replace("_", "").isalnum():
            raise ConfigError("service must be a non-empty name of letters, digits, '-' or '_'")
        for name in ("port", "grpc_port", "ops_port"):
            port = getattr(self, name)
            if port is not None and not 0 <= port <= 65535:
                raise ConfigError(f"{name} must be within 0..65535")
        if not 0 <= self.leeway <= MAX_LEEWAY:
            raise ConfigError(f"leeway must be within 0..{MAX_LEEWAY:.0f} s")
        if self.ops_port and self.ops_port in (self.port, self.grpc_port) and self.ops_host == self.host:
            raise ConfigError("--ops-port must differ from --port and --grpc-port")
        if not 1024 <= self.max_body_bytes <= 16 * 1024 * 1024:
            raise ConfigError("max_body_bytes must be within 1 KiB..16 MiB")
        self.http_limits  # noqa: B018 - validates the HTTP limits
        if not 1024 * 1024 <= self.grpc_max_message_bytes <= 1024 * 1024 * 1024:
            raise ConfigError("grpc_max_message_bytes must be within 1 MiB..1 GiB")
        self.grpc_limits  # noqa: B018 - validates the gRPC limits
        if not 1 <= self.max_evaluations <= 1024:
            raise ConfigError("max_evaluations must be within 1..1024")
        if not 0 <= self.decision_memo_size <= 1_000_000:
            raise ConfigError("decision_memo_size must be within 0..1000000 (0 turns the memo off)")
        if not 0 <= self.max_wait_ms <= 10_000:
            raise ConfigError("max_wait_ms must be within 0..10000")
        if self.bundle_file is not None and not self.bundle_keys:
            raise ConfigError("a bundle file needs at least one --bundle-key to verify it")
        if not 1 <= self.exchange_lifetime <= MAX_LIFETIME:
            raise ConfigError(f"exchange_lifetime must be within 1..{MAX_LIFETIME:.0f} s")
        if not 1 <= self.exchange_max_act_depth <= 16:
            raise ConfigError("exchange_max_act_depth must be within 1..16")
        if self.nats is not None and self.nats_url is None:
            object.__setattr__(self, "nats_url", ",".join(self.nats.servers))
        elif self.nats_url is not None:
            from_url = NatsConnection.of(self.nats_url)
            if self.nats is None:
                object.__setattr__(self, "nats", from_url)
            elif self.nats.servers != from_url.servers:
                raise ConfigError("nats_url and nats.servers disagree")
        if self.nats_url is not None and self.plane_key is None:
            raise ConfigError("--nats needs --plane-key: nothing read from NATS is believed without it")
        if not 0 < self.max_staleness_seconds <= 86_400:
            raise ConfigError("max_staleness_seconds must be within 0..86400 (exclusive of 0)")
        if (self.plane_url is None) != (self.join_secret_file is None):
            raise ConfigError("--plane-url and --join-secret-file go together (the plane checks the join secret)")
        if self.plane_url is not None and not all(
                url.strip().startswith(("http://", "https://")) for url in self.plane_url.split(",")):
            raise ConfigError("--plane-url must be an http:// or https:// URL, or several separated by commas")
        if self.plane_tls is not None and self.plane_tls.configured:
            if self.plane_url is None:
                raise ConfigError("--plane-ca and --plane-client-cert/--plane-client-key need --plane-url")
            for url in self.plane_url.split(","):
                self.plane_tls.check_url(url.strip())

        try:
            object.__setattr__(self, "scope_cells", tuple(dict.fromkeys(self.scope_cells)))
            object.__setattr__(self, "scope_types", tuple(dict.fromkeys(self.scope_types)))
            scope = self.relation_scope
        except ValueError as exc:
            raise ConfigError(f"--cells/--scope-cell: {exc}") from None
        if any(NAME_RE.fullmatch(t) is None for t in scope.types or ()):
            raise ConfigError("--scope-type must name object types (letters, digits, '_', '-')")
        if not scope.unscoped and self.relations_file is not None:
            raise ConfigError("--relations (a local file) holds every tenant and type: it cannot be scoped")
        LogPolicy.of(sample_allow=self.decision_log_sample_allow, sample_deny=self.decision_log_sample_deny,
                     masks=self.decision_log_masks)  # raises ConfigError on a bad rate or pointer
        if self.sidecar_id is not None and not _is_name(self.sidecar_id, 128):
            raise ConfigError("--sidecar-id must be letters, digits, '-', '_' or '.' (at most 128)")
        if self.tenant is not None and not _is_name(self.tenant, 128):
            raise ConfigError("--tenant must be a tenant id of letters, digits, '-', '_' or '.' (at most 128)")
        if self.public_url is not None:
            parts = urlsplit(self.public_url)
            if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
                raise ConfigError("--public-url must be an http(s) URL without query or fragment")

    @property
    def relation_scope(self) -> RelationScope:
        """The cells and object types this sidecar holds (raises ValueError when inconsistent)."""
        return scope_of(self.cells, self.scope_cells, self.scope_types)

    @property
    def decision_log_subject(self) -> str:
        """Where this sidecar's decision records go: one subject token per tenant (TG_DECISIONS)."""
        return f"tg.decisions.{self.service}.*"


def _is_name(value: str, limit: int) -> bool:
    return 0 < len(value) <= limit and value.replace("-", "").replace("_", "").replace(".", "").isalnum()


def env_default(name: str, default: str | None = None) -> str | None:
    """``TG_SIDECAR_<NAME>``, so every flag can also come from the environment."""
    return os.environ.get(ENV_PREFIX + name.upper(), default)
