"""Plane settings: one frozen object, validated once, built from CLI flags (or tests).

Secrets are read and hashed here (:mod:`.secrets`), so a :class:`PlaneConfig` never
holds a token or a join secret, only their scrypt hashes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tenantguard.errors import ConfigError
from tenantguard.feed import topology as topo
from tenantguard.feed.natsconn import NatsConnection
from tenantguard.identity.keys import SigningKey
from tenantguard.server.serving import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEAD_BYTES,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    HttpLimits,
)
from tenantguard.util.httptls import ServerTls

from .purge import DEFAULT_PURGE_GRACE, DEFAULT_PURGE_SECONDS
from .secrets import SecretChecker

DEFAULT_PORT = 8282
DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024  # 1,000 changes of long tuples fit; bundles have their own bound
DEFAULT_MAX_BUNDLE_BYTES = 16 * 1024 * 1024
DEFAULT_SNAPSHOT_EVERY = 1000
DEFAULT_SNAPSHOT_SECONDS = 300.0
DEFAULT_HEARTBEAT_SECONDS = 5.0
DEFAULT_ROLLOUT_RECONCILE_SECONDS = 5.0
DEFAULT_DECISIONS_KEPT = 10_000
DEFAULT_AUDIT_KEPT = 1000
DEFAULT_RELATIONS_MAX_AGE = 7 * 24 * 3600.0
DEFAULT_DECISIONS_MAX_AGE = 7 * 24 * 3600.0
DEFAULT_DECISIONS_MAX_BYTES = 0  # age only: JetStream reserves a size bound in its store; set one in production
SERVICE_RE = re.compile(r"[a-z][a-z0-9_-]{0,62}")


def check_service(name: str) -> str:
    """A service name usable as a NATS subject token and an issuer suffix."""
    if not isinstance(name, str) or SERVICE_RE.fullmatch(name) is None or name == "all":
        raise ConfigError(f"service name {name!r:.70} must match {SERVICE_RE.pattern} and not be 'all'")
    return name


@dataclass(frozen=True, slots=True)
class PlaneConfig:
    """Everything one plane replica needs; every replica of a deployment shares the keys."""

    nats_url: str = field(repr=False)  # one URL or a comma-separated list; may carry credentials
    event_key: SigningKey
    bundle_key: SigningKey
    admin: SecretChecker
    operator: SecretChecker | None = None  # read-only: decision records, explain, audit, status
    join_secrets: Mapping[str, SecretChecker] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    snapshot_every: int = DEFAULT_SNAPSHOT_EVERY
    snapshot_seconds: float = DEFAULT_SNAPSHOT_SECONDS
    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS
    rollout_reconcile_seconds: float = DEFAULT_ROLLOUT_RECONCILE_SECONDS  # see BundleService.reconcile_rollout
    purge_seconds: float = DEFAULT_PURGE_SECONDS  # between deletions of expired tuples (policy_plane.purge); 0: off
    purge_grace: float = DEFAULT_PURGE_GRACE  # seconds a tuple stays expired before it is deleted
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_bundle_bytes: int = DEFAULT_MAX_BUNDLE_BYTES
    http_read_timeout: float = DEFAULT_READ_TIMEOUT  # a request's head and body must arrive within it (408)
    max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES  # request line + headers; beyond it 431
    http_write_timeout: float = DEFAULT_WRITE_TIMEOUT  # answers left unread this long (nothing drains): cut
    max_connections: int = DEFAULT_MAX_CONNECTIONS  # open HTTP connections; past them 503 too_many_connections
    decisions_kept: int = DEFAULT_DECISIONS_KEPT
    audit_kept: int = DEFAULT_AUDIT_KEPT
    relations_max_age: float = DEFAULT_RELATIONS_MAX_AGE
    decisions_max_age: float = DEFAULT_DECISIONS_MAX_AGE  # TG_DECISIONS retention by age...
    decisions_max_bytes: int = DEFAULT_DECISIONS_MAX_BYTES  # ...and by size (oldest go first); 0: age only
    connect_timeout: float = 5.0
    request_timeout: float = 5.0
    bootstrap_timeout: float = 60.0
    stream_replicas: int = 1  # 3 on a production JetStream cluster (R3)
    impact_gate: str = "off"  # off | report | enforce: replay the decision sample before each publish
    impact_max_undeclared: int = 0
    impact_sample: int = 5000
    console: bool = True  # the operations console under /console/ (sessions in memory: see policy_plane.console)
    console_idle_seconds: float = 900.0  # a console session ends after this long without a request
    console_origin: str | None = None  # scheme://host[:port] browsers see (behind a TLS proxy); None: each request's
    group_commit: bool = True  # concurrent relation writes share one signed batch (policy_plane.groupcommit)
    fast_writes: bool = True  # POST /v1/relations and /v1/revocations answered below FastAPI (policy_plane.api.hot)
    replica: str = field(default_factory=lambda: os.urandom(4).hex())
    nats: NatsConnection | None = None  # credentials and TLS; built from nats_url when not given
    cells: int = 1  # tenant cells (tenantguard.feed.topology.cell_of): fixed when the system is set up
    tls: ServerTls | None = None  # serve HTTPS (and require client certificates when it names a client CA)

    @property
    def cell_names(self) -> tuple[str, ...]:
        return topo.cell_names(self.cells)

    @property
    def http_limits(self) -> HttpLimits:
        """What one HTTP request may cost before a route sees it (``tenantguard.server.serving``)."""
        return HttpLimits(read_timeout=self.http_read_timeout, max_head_bytes=self.max_head_bytes,
                          max_connections=self.max_connections, write_timeout=self.http_write_timeout)

    def __post_init__(self) -> None:
        if self.nats is None:
            object.__setattr__(self, "nats", NatsConnection.of(self.nats_url))
        elif self.nats.servers != NatsConnection.of(self.nats_url).servers:
            raise ConfigError("nats_url and nats.servers disagree")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port {self.port} is out of range")
        if self.snapshot_every < 1 or self.snapshot_seconds <= 0 or self.heartbeat_seconds <= 0:
            raise ConfigError("snapshot_every, snapshot_seconds and heartbeat_seconds must be positive")
        if self.purge_seconds != 0 and not 0.1 <= self.purge_seconds <= 86400:
            raise ConfigError("purge_seconds must be 0 (no purge) or within 0.1..86400")
        if not 0 <= self.purge_grace <= 30 * 86400:
            raise ConfigError("purge_grace must be within 0 s..30 days")
        if not 0.1 <= self.rollout_reconcile_seconds <= 3600:
            raise ConfigError("rollout_reconcile_seconds must be within 0.1..3600")
        self.http_limits  # noqa: B018 - validates the HTTP limits
        for name in ("max_body_bytes", "max_bundle_bytes", "decisions_kept", "audit_kept"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be positive")
        if not 60 <= self.decisions_max_age <= 400 * 24 * 3600:
            raise ConfigError("decisions_max_age must be within 60 s..400 days")
        if self.decisions_max_bytes != 0 and not 1024**2 <= self.decisions_max_bytes <= 1024**5:
            raise ConfigError("decisions_max_bytes must be 0 (no size bound) or within 1 MiB..1 PiB")
        if self.impact_gate not in ("off", "report", "enforce"):
            raise ConfigError("impact_gate must be off, report or enforce")
        if self.impact_max_undeclared < 0 or not 1 <= self.impact_sample <= 100_000:
            raise ConfigError("impact_max_undeclared must be >= 0 and impact_sample 1-100000")
        if not 60 <= self.console_idle_seconds <= 24 * 3600:
            raise ConfigError("console_idle_seconds must be within 60 s..24 h")
        if self.console_origin is not None:
            object.__setattr__(self, "console_origin", _origin(self.console_origin))
        if not 1 <= self.cells <= topo.MAX_CELLS:
            raise ConfigError(f"cells must be within 1..{topo.MAX_CELLS} (fixed for the life of the system)")
        if self.stream_replicas not in (1, 3, 5):
            raise ConfigError("stream_replicas must be 1, 3 or 5 (JetStream replication factors)")
        if self.event_key.kid == self.bundle_key.kid:
            raise ConfigError("use different keys for events and bundles (a leak of one must not forge the other)")
        for service in self.join_secrets:
            check_service(service)


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of an http(s) URL with nothing after the authority (a trailing ``/``
    allowed), lower-cased as browsers send ``Origin``; ConfigError otherwise."""
    parts = urlsplit(url.strip())
    if (parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password
            or parts.path not in ("", "/") or parts.query or parts.fragment):
        raise ConfigError("--console-origin must be scheme://host[:port], e.g. https://plane.example.com")
    return f"{parts.scheme}://{parts.netloc.lower()}"


def parse_join_secrets(specs: list[str]) -> dict[str, SecretChecker]:
    """``SERVICE=FILE`` flags into hashed checkers; each file is read once, then forgotten."""
    out: dict[str, SecretChecker] = {}
    for spec in specs:
        service, sep, path = spec.partition("=")
        if not sep or not path:
            raise ConfigError(f"--join-secret {spec!r:.80} must be SERVICE=FILE")
        check_service(service)
        if service in out:
            raise ConfigError(f"--join-secret given twice for {service}")
        out[service] = SecretChecker.from_file(Path(path))
    return out
